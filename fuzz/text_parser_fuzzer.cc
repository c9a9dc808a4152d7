// libFuzzer target for the text IR parser (graph/parser.h).
//
// Any input must give a module or an error, never a crash, a hang or a
// sanitizer report. A module that parses must also print, and its print
// must parse back to the same print (the format's round-trip promise).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/parser.h"
#include "graph/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  // A declaration may ask for any size ("f32[1000000000] = zeros" is a valid
  // 4 GB tensor); the fuzzer's memory limit is not what is under test.
  graft::ParseOptions options;
  options.max_tensor_bytes = int64_t{64} << 20;
  absl::StatusOr<graft::Module> module =
      graft::ParseModule(text, "fuzz.graft", options);
  if (!module.ok()) return 0;
  const std::string printed = graft::PrintModule(*module);
  absl::StatusOr<graft::Module> again =
      graft::ParseModule(printed, "printed.graft", options);
  if (!again.ok()) {
    std::fprintf(stderr, "printed module does not parse: %s\n--- printed:\n%s\n",
                 again.status().ToString().c_str(), printed.c_str());
    __builtin_trap();
  }
  if (graft::PrintModule(*again) != printed) {
    std::fprintf(stderr, "print -> parse -> print differs\n--- first:\n%s\n",
                 printed.c_str());
    __builtin_trap();
  }
  return 0;
}
