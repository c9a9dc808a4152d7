#include "quantize/channel_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backends/interp/interpreter.h"
#include "graph/graph.h"
#include "support/status_macros.h"

namespace graft::quantize {
namespace {

// Adds `t`'s values to `stats`, channels along `axis`.
absl::Status Accumulate(const Tensor& t, int axis, const Node& node, ChannelStats& stats) {
  if (!IsFloatingPoint(t.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Ref(), " holds ", DTypeName(t.dtype()),
                     " values: channel statistics are taken of float values only"));
  }
  const int rank = static_cast<int>(t.rank());
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        node.Ref(), " has rank ", rank, ": it has no channel axis ", axis));
  }
  const int64_t channels = t.dim(a);
  if (stats.abs_max.empty() && stats.count.empty()) {
    stats.abs_max.assign(channels, 0.0);
    stats.sum.assign(channels, 0.0);
    stats.count.assign(channels, 0);
  } else if (static_cast<int64_t>(stats.abs_max.size()) != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Ref(), " had ", stats.abs_max.size(), " channels in one sample and ",
                     channels, " in another"));
  }
  int64_t inner = 1;
  for (int d = a + 1; d < rank; ++d) inner *= t.dim(d);
  const int64_t n = t.NumElements();
  const std::vector<double> values =
      t.dtype() == DType::kF32 ? std::vector<double>() : t.ToDoubles();
  const float* f32 = t.dtype() == DType::kF32 ? t.data<float>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const double x = f32 != nullptr ? double{f32[i]} : values[i];
    if (!std::isfinite(x)) continue;
    const int64_t c = (i / inner) % channels;
    stats.abs_max[c] = std::max(stats.abs_max[c], std::fabs(x));
    stats.sum[c] += x;
    ++stats.count[c];
  }
  return absl::OkStatus();
}

// The interpreter with the values of some nodes gathered as they are made.
class GatheringInterpreter : public interp::Interpreter {
 public:
  GatheringInterpreter(const Module& module, const absl::flat_hash_map<const Node*, int>& axes,
                       std::map<std::string, ChannelStats>& stats)
      : Interpreter(module), axes_(axes), stats_(stats) {}

 protected:
  absl::StatusOr<interp::Value> RunNode(const Node& node) override {
    ASSIGN_OR_RETURN(interp::Value value, Interpreter::RunNode(node));
    auto it = axes_.find(&node);
    if (it != axes_.end() && value.is_tensor()) {
      RETURN_IF_ERROR(Accumulate(value.tensor(), it->second, node, stats_[node.name()]));
    }
    return value;
  }

 private:
  const absl::flat_hash_map<const Node*, int>& axes_;
  std::map<std::string, ChannelStats>& stats_;
};

}  // namespace

std::vector<double> ChannelStats::Mean() const {
  std::vector<double> mean(sum.size(), 0.0);
  for (size_t c = 0; c < sum.size(); ++c) {
    if (count[c] > 0) mean[c] = sum[c] / static_cast<double>(count[c]);
  }
  return mean;
}

absl::StatusOr<std::map<std::string, ChannelStats>> CollectChannelStats(
    const Module& module, absl::Span<const Sample> samples,
    const std::vector<ChannelAxis>& values) {
  absl::flat_hash_map<const Node*, int> axes;
  for (const ChannelAxis& v : values) {
    const Node* node = module.graph().FindNode(v.node);
    if (node == nullptr) {
      return absl::NotFoundError(absl::StrCat("no node named '", v.node, "'"));
    }
    axes[node] = v.axis;
  }
  std::map<std::string, ChannelStats> stats;
  GatheringInterpreter interpreter(module, axes, stats);
  for (size_t s = 0; s < samples.size(); ++s) {
    absl::Status run = interpreter.Run(samples[s]).status();
    if (!run.ok()) {
      return absl::Status(run.code(), absl::StrCat("calibration sample ", s, ": ", run.message()));
    }
  }
  return stats;
}

}  // namespace graft::quantize
