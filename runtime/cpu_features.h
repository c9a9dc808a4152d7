#ifndef GRAFT_RUNTIME_CPU_FEATURES_H_
#define GRAFT_RUNTIME_CPU_FEATURES_H_

// The x86 instruction set extensions of the CPU this process runs on, read
// with cpuid rather than LLVM, so that the runtime can check that a
// compiled model's code suits this CPU before running it.

#include <set>
#include <string>

#include "absl/strings/string_view.h"

namespace graft::runtime {

// The features this CPU has and the OS enables (the AVX, AVX-512 and AMX
// register state in XCR0), by LLVM's names ("sse4.2", "avx2", "fma",
// "avx512f", "avx512bf16", "amx-tile", ...), as llvm::sys::
// getHostCPUFeatures of LLVM 19 reports them. Empty on other
// architectures. Detected once. Linux also wants a process to ask for AMX
// tile state (arch_prctl ARCH_REQ_XCOMP_PERM) before it runs AMX code;
// "amx-*" here says only that the CPU and kernel support it.
const std::set<std::string>& HostCpuFeatures();

// Whether HostCpuFeatures can ever report `name`: a feature of a compiled
// model's code that is not known can be neither confirmed nor ruled out.
bool IsKnownCpuFeature(absl::string_view name);

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_CPU_FEATURES_H_
