#ifndef GRAFT_GRAPH_RANDOM_TENSOR_H_
#define GRAFT_GRAPH_RANDOM_TENSOR_H_

#include <cstdint>
#include <vector>

#include "graph/dtype.h"
#include "graph/tensor.h"

namespace graft {

// A tensor of pseudo-random values that depends only on (dtype, dims, seed),
// on every platform: element i is derived from the i-th output of a
// splitmix64 stream started at `seed`. That makes "random(seed=3)" in a
// module file, a test, or a benchmark reproducible byte for byte.
//   floating point: uniform in [-1, 1), on a grid the dtype represents
//                   exactly (2^-23 steps for f32, 2^-52 for f64, 2^-10 for
//                   f16, 2^-7 for bf16), so no value rounds up to 1;
//   signed ints:    uniform in [-8, 8);
//   u8:             uniform in [0, 16) (no negatives to draw);
//   bool:           true or false with equal odds.
Tensor RandomTensor(DType dtype, std::vector<int64_t> dims, uint64_t seed);

// The splitmix64 stream RandomTensor draws from, for callers that need the
// same numbers in another form.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_RANDOM_TENSOR_H_
