// libFuzzer target for the binary model reader (serialize/gpb_reader.h).
//
// Any bytes must give a module or one error, never a crash, a hang, an
// unbounded allocation or a sanitizer report. There is no side file: a
// model that refers to one must fail cleanly.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "serialize/gpb_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<graft::LoadedModel> model =
      graft::ParseGpb(bytes, "fuzz.gpb", /*side_file=*/nullptr);
  (void)model;
  return 0;
}
