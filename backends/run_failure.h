#ifndef GRAFT_BACKENDS_RUN_FAILURE_H_
#define GRAFT_BACKENDS_RUN_FAILURE_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace graft {

// A run that failed only once all of its work had ended on its device (a
// bad index that its error flag reported after the run) made every
// collective it holds, so the other ranks of its world end their runs on
// their own and the world need not be aborted (ShardedExecutable). Such a
// failure carries this payload; every other failure may have stopped a
// rank before one of its collectives.
inline constexpr absl::string_view kRanToEndPayload = "graft/failed-after-its-work-ended";

inline absl::Status MarkRanToEnd(absl::Status failure) {
  failure.SetPayload(kRanToEndPayload, absl::Cord("1"));
  return failure;
}

inline bool RanToEnd(const absl::Status& failure) {
  return failure.GetPayload(kRanToEndPayload).has_value();
}

}  // namespace graft

#endif  // GRAFT_BACKENDS_RUN_FAILURE_H_
