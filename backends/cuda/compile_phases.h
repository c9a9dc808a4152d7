#ifndef GRAFT_BACKENDS_CUDA_COMPILE_PHASES_H_
#define GRAFT_BACKENDS_CUDA_COMPILE_PHASES_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graft::cuda {

// GRAFT_CUDA_PROFILE=1: what each phase of a CUDA compile took, printed to
// stderr as one line when the compile ends, e.g.
//   cuda compile: program 0.1 ms, kernels 0.1 ms, nvrtc (4 units) 104 ms, ...
class CompilePhases {
 public:
  CompilePhases() : enabled_(std::getenv("GRAFT_CUDA_PROFILE") != nullptr), last_(Now()) {}
  ~CompilePhases() {
    if (enabled_ && !line_.empty()) std::fprintf(stderr, "cuda compile:%s\n", line_.c_str());
  }
  CompilePhases(const CompilePhases&) = delete;
  CompilePhases& operator=(const CompilePhases&) = delete;

  // `phase` has just ended.
  void Mark(absl::string_view phase) {
    const double now = Now();
    if (enabled_) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.1f", now - last_);
      absl::StrAppend(&line_, line_.empty() ? " " : ", ", phase, " ", ms, " ms");
    }
    last_ = now;
  }

 private:
  static double Now() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  bool enabled_;
  double last_;
  std::string line_;
};

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_COMPILE_PHASES_H_
