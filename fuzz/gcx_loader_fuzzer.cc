// libFuzzer target for compiled model files (runtime/artifact.h) and the
// ELF loader of their code (runtime/elf_object.h).
//
// Checksums are off (a fuzzer cannot forge them), so the parsers see every
// mutation. Any bytes must give a parsed file or one error, never a crash,
// a hang, an unbounded allocation or a sanitizer report. The code is linked
// (every undefined symbol resolved to a harmless address) but never run,
// and library calls are not prepared.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "runtime/artifact.h"
#include "runtime/elf_object.h"

namespace {

int dummy_symbol = 0;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<graft::runtime::ArtifactView> view =
      graft::runtime::ParseArtifact(bytes, /*verify_checksums=*/false);
  if (!view.ok()) return 0;
  auto object = graft::runtime::ElfObject::Load(
      view->object, [](absl::string_view) -> void* { return &dummy_symbol; });
  if (object.ok()) (void)(*object)->Lookup("graft_entry");
  return 0;
}
