#ifndef GRAFT_PASSES_QUANTIZE_WEIGHT_ONLY_H_
#define GRAFT_PASSES_QUANTIZE_WEIGHT_ONLY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "passes/pass.h"

namespace graft::passes::quantize {

// Weight-only quantization of linear layers: round to nearest, symmetric,
// one scale per group of `group_size` consecutive input features of each
// output (0: one per output, i.e. per channel).
struct WeightOnlyConfig {
  int bits = 8;  // 8 or 4.
  int64_t group_size = 128;
  std::vector<std::string> skip;  // Node-name globs kept float.
};

struct WeightOnlyReport {
  std::vector<std::string> quantized;
  // Layers whose input features do not divide by the group size: one scale
  // per output instead.
  std::vector<std::string> per_channel;
  // 4-bit layers whose groups have an odd size: stored one value per byte
  // instead of two.
  std::vector<std::string> unpacked;
};

// The f32 constant 2-D weight of a linear layer (linear, or
// graft::linear_activation with an [out, in] weight: [out, in]) or of a
// matmul by a constant ([in, out]), or null.
Node* ConstantLinearWeight(const Module& module, const Node& call);
// That weight as [out, in] (a matmul's transposed).
Tensor WeightOutIn(const Node& call, const Tensor& weight);

// Each linear (and graft::linear_activation with an [out, in] weight, and
// matmul by an [in, out] constant, grouped as its transpose) whose weight
// is an f32 constant reads it from int values times its group's scale:
//   reshape(mul(cast(q[out, in/g, g], f32), scales[out, in/g, 1]), [out, in])
// 8-bit values are stored i8; 4-bit ones two to a byte (u8 [out, in/g,
// g/2], read through graft::unpack_int4, graph/int4_ops.h) where g is even.
// (then permuted back to [in, out] for a matmul).
// Activations stay float: no calibration. The result is a reference graph
// any backend runs.
absl::StatusOr<WeightOnlyReport> QuantizeWeightsOnly(Module& module,
                                                     const WeightOnlyConfig& config);

// `quantize-weights{bits=8|4,group=128,skip=GLOB;GLOB}`.
class WeightOnlyPass : public Pass {
 public:
  explicit WeightOnlyPass(WeightOnlyConfig config) : config_(std::move(config)) {}
  static absl::StatusOr<std::unique_ptr<WeightOnlyPass>> FromOptions(const PassOptions& options);
  absl::string_view name() const override { return "quantize-weights"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  WeightOnlyConfig config_;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_WEIGHT_ONLY_H_
