#ifndef GRAFT_QUANTIZE_CHANNEL_STATS_H_
#define GRAFT_QUANTIZE_CHANNEL_STATS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/module.h"
#include "quantize/calibration.h"

namespace graft::quantize {

// What one float value held, channel by channel, over calibration data:
// the statistics SmoothQuant (largest magnitudes) and bias correction
// (means) start from.
struct ChannelStats {
  std::vector<double> abs_max;  // Per channel; NaN and inf ignored.
  std::vector<double> sum;      // Per channel, of the finite values.
  std::vector<int64_t> count;   // Finite values per channel.

  std::vector<double> Mean() const;
};

// A value to gather statistics of: the node named `node`, whose channels
// run along `axis` (negative counts from the last dim).
struct ChannelAxis {
  std::string node;
  int axis = -1;
};

// Runs every sample through the interpreter and gathers the statistics of
// each value in `values`, keyed by node name. A value whose channel count
// changes between samples, or that is not a float tensor, is an error
// naming it.
absl::StatusOr<std::map<std::string, ChannelStats>> CollectChannelStats(
    const Module& module, absl::Span<const Sample> samples,
    const std::vector<ChannelAxis>& values);

}  // namespace graft::quantize

#endif  // GRAFT_QUANTIZE_CHANNEL_STATS_H_
