#ifndef GRAFT_BACKENDS_ORC_LLVM_JIT_H_
#define GRAFT_BACKENDS_ORC_LLVM_JIT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace llvm {
class Module;
class LLVMContext;
class TargetMachine;
namespace orc {
class LLJIT;
}  // namespace orc
}  // namespace llvm

namespace graft::orc {

// The host CPU as LLVM sees it: its name ("znver4", "sapphirerapids") and
// feature string ("+avx512f,+avx512bf16,..."). Code compiled for one is
// only loaded where the other matches (the compile cache key names both).
struct HostCpu {
  std::string triple;
  std::string name;
  std::string features;
  bool has_avx512 = false;
  bool has_avx512_bf16 = false;
  bool has_fma = false;
};
const HostCpu& DetectHostCpu();
// The CPU named `name` as LLVM knows it ("x86-64-v3", "skylake-avx512",
// "znver4"), with the features it implies, for code that runs on another
// machine; "" or "native": this one's.
absl::StatusOr<HostCpu> TargetCpu(absl::string_view name);

// "LLVM 19.1.7 x86_64-pc-linux-gnu znver4 +avx,+avx2,...": what decides
// the machine code, for compile cache keys.
std::string CodegenIdentity(const HostCpu& cpu = DetectHostCpu());

// Runs LLVM's O3 pipeline (new pass manager) on `module` for the host CPU,
// with glibc's vector math library (libmvec) for exp/log/sin/cos/pow when
// the process can load it, then emits an ELF object. LLJIT optimizes
// nothing by itself; this is where all the speed comes from.
absl::StatusOr<std::string> OptimizeAndEmitObject(llvm::Module& module, const HostCpu& cpu);

// A function in the generated code's calling convention: every argument
// is a pointer.
using RuntimeSymbol = std::pair<std::string, void*>;

// One loaded object: an LLJIT instance that owns the linked code. The
// runtime functions generated code calls are defined from `runtime`, the
// C library's (expf, tanhf, ...) from the process.
class LoadedObject {
 public:
  static absl::StatusOr<std::unique_ptr<LoadedObject>> Load(
      absl::string_view object, const std::vector<RuntimeSymbol>& runtime);
  ~LoadedObject();

  // The address of a function the object defines.
  absl::StatusOr<void*> Lookup(absl::string_view name) const;

 private:
  LoadedObject() = default;
  void WritePerfMap(absl::string_view object) const;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_LLVM_JIT_H_
