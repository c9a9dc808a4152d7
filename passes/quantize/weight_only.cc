#include "passes/quantize/weight_only.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/fused_ops.h"
#include "graph/graph.h"
#include "graph/int4_ops.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "passes/quantize/quant_config.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

bool Skipped(const WeightOnlyConfig& config, const Node& n) {
  for (const std::string& glob : config.skip) {
    if (GlobMatches(glob, n.name())) return true;
  }
  return false;
}

// `q` (i8 values in [-8, 7], an even last dim) two to a byte, as
// graft::unpack_int4 reads them.
Tensor PackedInt4(const Tensor& q) {
  std::vector<int64_t> dims = q.dims();
  dims.back() /= 2;
  Tensor packed(DType::kU8, dims);
  const int8_t* from = q.data<int8_t>();
  uint8_t* to = packed.data<uint8_t>();
  for (int64_t i = 0; i < packed.NumElements(); ++i) {
    to[i] = PackInt4Pair(from[2 * i], from[2 * i + 1]);
  }
  return packed;
}

}  // namespace

Node* ConstantLinearWeight(const Module& module, const Node& n) {
  if (!n.is_call("linear") && !n.is_call("matmul") && n.target() != kLinearActivationOp) {
    return nullptr;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(n);
  if (!call.ok()) return nullptr;
  if (n.target() == kLinearActivationOp && call->String("weight_layout") != "out_in") {
    return nullptr;
  }
  Node* w = call->TensorNode(n.is_call("matmul") ? "other" : "weight");
  const Tensor* t = AttrTensor(module, w);
  if (t == nullptr || t->dtype() != DType::kF32 || t->rank() != 2) return nullptr;
  return w;
}

Tensor WeightOutIn(const Node& call, const Tensor& weight) {
  if (!call.is_call("matmul")) return weight;
  Tensor t(DType::kF32, {weight.dim(1), weight.dim(0)});
  for (int64_t i = 0; i < weight.dim(0); ++i) {
    for (int64_t j = 0; j < weight.dim(1); ++j) {
      t.data<float>()[j * weight.dim(0) + i] = weight.data<float>()[i * weight.dim(1) + j];
    }
  }
  return t;
}

absl::StatusOr<WeightOnlyReport> QuantizeWeightsOnly(Module& module,
                                                     const WeightOnlyConfig& config) {
  if (config.bits != 8 && config.bits != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight-only quantization takes 8 or 4 bits, not ", config.bits));
  }
  if (config.group_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("group size must be 0 (per channel) or positive, got ", config.group_size));
  }
  RETURN_IF_ERROR(PropagateShapes(module).status());
  WeightOnlyReport report;
  const double qmax = config.bits == 8 ? 127 : 7;
  Graph& graph = module.graph();
  std::vector<Node*> calls;
  for (Node* n : graph.nodes()) {
    if (ConstantLinearWeight(module, *n) != nullptr && !Skipped(config, *n)) calls.push_back(n);
  }
  for (Node* n : calls) {
    Node* w = ConstantLinearWeight(module, *n);
    // A matmul's [in, out] weight is grouped as its transpose, [out, in].
    const bool in_out = n->is_call("matmul");
    const Tensor t = WeightOutIn(*n, *AttrTensor(module, w));
    const int64_t out = t.dim(0), in = t.dim(1);
    int64_t group = config.group_size == 0 || config.group_size >= in ? in : config.group_size;
    if (in % group != 0) {
      group = in;
      report.per_channel.push_back(n->name());
    }
    const int64_t groups = in / group;
    Tensor q(DType::kI8, {out, groups, group});
    Tensor scales(DType::kF32, {out, groups, 1});
    const float* src = t.data<float>();
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t g = 0; g < groups; ++g) {
        const float* row = src + o * in + g * group;
        double magnitude = 0;
        for (int64_t k = 0; k < group; ++k) {
          if (std::isfinite(row[k])) magnitude = std::max(magnitude, std::fabs(double{row[k]}));
        }
        const double scale = std::max(magnitude / qmax, 1e-12);
        scales.data<float>()[o * groups + g] = static_cast<float>(scale);
        int8_t* dst = q.data<int8_t>() + (o * groups + g) * group;
        for (int64_t k = 0; k < group; ++k) {
          const double r = std::nearbyint(row[k] / scale);
          dst[k] = static_cast<int8_t>(std::isnan(r) ? 0 : std::clamp(r, -qmax - 1, qmax));
        }
      }
    }
    const std::string base = absl::StrCat(w->target(), "_int", config.bits);
    const bool pack = config.bits == 4 && group % 2 == 0;
    if (config.bits == 4 && !pack) report.unpacked.push_back(n->name());
    const Tensor stored = pack ? PackedInt4(q) : q;
    const std::string q_name = module.UniqueTensorName(base);
    module.SetTensor(q_name, stored);
    const std::string s_name = module.UniqueTensorName(base + "_scales");
    module.SetTensor(s_name, scales);
    auto at = graph.InsertingBefore(n);
    Node* ints = graph.GetAttr(q_name, stored.type());
    if (pack) {
      ints = graph.CallFunction(std::string(kUnpackInt4Op), {Argument(ints)});
      InferAndSetType(ints);
    }
    Node* values = graph.CallFunction("cast", {Argument(ints), Argument(DType::kF32)});
    Node* scaled = graph.CallFunction("mul", {Argument(values),
                                              Argument(graph.GetAttr(s_name, scales.type()))});
    Node* weight = graph.CallFunction("reshape", {Argument(scaled), Argument::IntList({out, in})});
    for (Node* created : {values, scaled, weight}) InferAndSetType(created);
    if (in_out) {
      weight = graph.CallFunction("permute", {Argument(weight), Argument::IntList({1, 0})});
      InferAndSetType(weight);
    }
    n->ReplaceInputWith(w, weight);
    EraseIfDead(graph, w);
    report.quantized.push_back(n->name());
  }
  graph.Cleanup();
  RemoveUnreadTensors(module);  // The float weights nothing reads any more.
  return report;
}

absl::StatusOr<std::unique_ptr<WeightOnlyPass>> WeightOnlyPass::FromOptions(
    const PassOptions& options) {
  WeightOnlyConfig config;
  ASSIGN_OR_RETURN(int64_t bits, options.GetInt("bits", 8));
  ASSIGN_OR_RETURN(config.group_size, options.GetInt("group", 128));
  config.bits = static_cast<int>(bits);
  const std::string skip = options.GetString("skip", "");
  if (!skip.empty()) config.skip = absl::StrSplit(skip, ';', absl::SkipEmpty());
  if (config.bits != 8 && config.bits != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantize-weights{bits=", bits, "}: bits is 8 or 4"));
  }
  return std::make_unique<WeightOnlyPass>(std::move(config));
}

absl::StatusOr<bool> WeightOnlyPass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(WeightOnlyReport report, QuantizeWeightsOnly(module, config_));
  return !report.quantized.empty();
}

}  // namespace graft::passes::quantize
