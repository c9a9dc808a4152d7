#include "graph/random_tensor.h"

#include <cmath>

namespace graft {
namespace {

// Uniform in [-1, 1) with `bits` bits of resolution: 2u - 1 where u takes
// the top `bits` bits of the draw as a fraction. Every value is exact in a
// float type whose significand has at least `bits` bits, so conversion
// cannot round anything up to 1.0.
double UniformSigned(uint64_t draw, int bits) {
  const double u = std::ldexp(static_cast<double>(draw >> (64 - bits)), -bits);
  return 2.0 * u - 1.0;
}

int MantissaBits(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return 53;
    case DType::kF16:
      return 11;
    case DType::kBF16:
      return 8;
    case DType::kF8E4M3:
      return 4;
    default:
      return 24;
  }
}

}  // namespace

Tensor RandomTensor(DType dtype, std::vector<int64_t> dims, uint64_t seed) {
  Tensor t(dtype, std::move(dims));
  SplitMix64 rng(seed);
  const int64_t n = t.NumElements();
  if (dtype == DType::kF32) {  // The common case: skip the double round trip.
    float* out = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<float>(UniformSigned(rng.Next(), 24));
    }
    return t;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t draw = rng.Next();
    double value;
    if (IsFloatingPoint(dtype) || IsFloat8(dtype)) {
      value = UniformSigned(draw, MantissaBits(dtype));
    } else if (dtype == DType::kBool) {
      value = static_cast<double>(draw >> 63);
    } else if (dtype == DType::kU8) {
      value = static_cast<double>(draw >> 60);
    } else {
      value = static_cast<double>(draw >> 60) - 8.0;
    }
    t.SetFromDouble(i, value);
  }
  return t;
}

}  // namespace graft
