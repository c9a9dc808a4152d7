#ifndef GRAFT_TESTS_BACKENDS_FLOAT8_QUANTIZE_CASE_H_
#define GRAFT_TESTS_BACKENDS_FLOAT8_QUANTIZE_CASE_H_

// f8e4m3 quantize (per tensor and per channel) and dequantize, for the
// compiled backends' tests against the interpreter: every one of the 256
// codes dequantized; values at ties between two codes, in the subnormal
// range, at and past 448, zeros, infinities and NaN quantized.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/backend.h"
#include "graph/parser.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace graft::backend_test {

struct Float8QuantizeCase {
  Module module;
  std::vector<Tensor> inputs;  // x, codes, scales, zero_points.
  CompileOptions options;      // The inputs' types.
};

inline Float8QuantizeCase MakeFloat8QuantizeCase() {
  absl::StatusOr<Module> m = ParseModule(R"(
graph():
    %x = placeholder[target=x]
    %codes = placeholder[target=codes]
    %scales = placeholder[target=scales]
    %zero_points = placeholder[target=zero_points]
    %q = call_function[target=quantize_per_tensor](args = (%x, 0.25, 0, f8e4m3), kwargs = {})
    %c = call_function[target=quantize_per_channel](args = (%x, %scales, %zero_points, 0, f8e4m3), kwargs = {})
    %t = call_function[target=transpose](args = (%q, 0, 1), kwargs = {})
    %d = call_function[target=dequantize](args = (), kwargs = {input: %t, scale: 0.25, zero_point: 0})
    %e = call_function[target=dequantize](args = (%codes, 0.5, 0), kwargs = {})
    return (q, c, d, e)
)");
  EXPECT_OK(m.status());
  // Values of x / 0.25: each f8e4m3 magnitude's ties (k + 1/2 steps) and
  // near-ties, subnormals, the edges of the range, and the odd ones.
  std::vector<float> values;
  for (int e = -9; e <= 9; ++e) {
    for (int k = 0; k < 16; ++k) {
      const float step = std::ldexp(1.0f, std::max(e, -6) - 3);
      const float base = std::ldexp(1.0f, e) + k * step;
      for (float v : {base, base + step / 2, std::nextafter(base + step / 2, 0.0f),
                      std::nextafter(base + step / 2, 1e9f)}) {
        values.push_back(v * 0.25f);
        values.push_back(-v * 0.25f);
      }
    }
  }
  // Below the smallest subnormal 2^-9: the tie at 2^-10 rounds to 0, past it up.
  for (float v : {0.0f, -0.0f, 0x1p-10f, 0x1.8p-10f, 0x1p-11f, -0x1p-10f, -0x1.8p-10f,
                  447.0f, 448.0f, 449.0f, 464.0f, 480.0f, 1e30f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min()}) {
    values.push_back(v * 0.25f);
  }
  while (values.size() % 8 != 0) values.push_back(1.0f);
  const int64_t rows = 8, cols = static_cast<int64_t>(values.size()) / 8;
  Tensor x(DType::kF32, {rows, cols});
  std::copy(values.begin(), values.end(), x.data<float>());
  Tensor codes(DType::kF8E4M3, {256});
  for (int i = 0; i < 256; ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  Tensor scales(DType::kF32, {rows});
  for (int64_t i = 0; i < rows; ++i) scales.data<float>()[i] = std::ldexp(1.0f, i - 3);
  Tensor zero_points(DType::kI64, {rows});
  std::fill_n(zero_points.data<int64_t>(), rows, 0);
  Float8QuantizeCase c{m.ok() ? *std::move(m) : Module(), {x, codes, scales, zero_points}, {}};
  for (const Tensor& t : c.inputs) c.options.input_types.push_back(t.type());
  return c;
}

// The same element of two results: equal bits, or both NaN.
inline bool SameElement(const Tensor& a, const Tensor& b, int64_t i) {
  const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::signbit(x) == std::signbit(y) && x == y;
}

// A backend's four results (`got`) are the interpreter's (`want`): the
// codes byte for byte, the dequantized values bit for bit.
inline void ExpectFloat8ResultsMatch(const std::vector<Tensor>& got,
                                     const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), 4u);
  ASSERT_EQ(want.size(), 4u);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(r == 0 ? "quantize_per_tensor" : "quantize_per_channel");
    ASSERT_EQ(got[r].dtype(), DType::kF8E4M3);
    for (int64_t i = 0; i < got[r].NumElements(); ++i) {
      ASSERT_EQ(got[r].data<uint8_t>()[i], want[r].data<uint8_t>()[i])
          << "element " << i << " of x / scale";
    }
  }
  for (int r = 2; r < 4; ++r) {
    for (int64_t i = 0; i < got[r].NumElements(); ++i) {
      ASSERT_TRUE(SameElement(got[r], want[r], i))
          << "output " << r << " element " << i << ": " << got[r].GetAsDouble(i) << " vs "
          << want[r].GetAsDouble(i);
    }
  }
}

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_FLOAT8_QUANTIZE_CASE_H_
