#ifndef GRAFT_BACKENDS_ORC_ORC_BACKEND_H_
#define GRAFT_BACKENDS_ORC_ORC_BACKEND_H_

#include "backends/backend.h"

namespace graft::orc {

// The LLVM ORC JIT CPU backend, registered as "orc". Each module becomes
// one LLVM module: a loop nest per fused pointwise group, reduction,
// normalization and data movement, oneDNN calls for matrix products, one
// arena planned from value lifetimes, and one entry function that runs the
// steps in order. Options: threads=N (oneDNN's threads; 0, the default:
// all cores), matmul_precision=f32|bf16 (bf16: matrix products by
// constant weights multiply in bf16, on CPUs with AVX512_BF16) and
// target_cpu=NAME (code for another CPU, LLVM's names: for compiled model
// files; it runs here only where this CPU has every feature it may use).
class OrcBackend : public Backend {
 public:
  absl::string_view name() const override { return "orc"; }
  absl::Status CanRun(const Node& node,
                      const CompileOptions& options) const override;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) override;

  // Each rank's share of `threads` (0: every core), at least one.
  CompileOptions ForRankOnHost(const CompileOptions& options, int world_size) const override;
  std::string CacheIdentity(const CompileOptions& options) const override;
  absl::StatusOr<PayloadParts> SerializeExecutableInParts(
      std::shared_ptr<const Executable> executable) const override;
  absl::StatusOr<std::string> SerializeExecutable(
      const Executable& executable) const override;
  absl::StatusOr<std::unique_ptr<Executable>> DeserializeExecutable(
      absl::string_view bytes, const Module& module,
      const CompileOptions& options) const override;
  absl::StatusOr<std::unique_ptr<Executable>> DeserializeMapped(
      absl::string_view bytes, std::shared_ptr<const void> keep_alive, const Module& module,
      const CompileOptions& options) const override;
  absl::Status WriteCompiledModel(const Executable& executable,
                                  const std::string& path) const override;
};

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_ORC_BACKEND_H_
