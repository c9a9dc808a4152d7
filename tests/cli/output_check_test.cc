#include "cli/output_check.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace graft::cli {
namespace {

Tensor Floats(const std::vector<float>& values) {
  Tensor t(DType::kF32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

// 10,000 values of 1, then 1.05.
std::vector<float> Reference() {
  std::vector<float> v(10000, 1.0f);
  v.push_back(1.05f);
  return v;
}

absl::StatusOr<std::string> Check(const std::vector<float>& got, const std::vector<float>& want,
                                  double tolerance, bool by_norm) {
  return CompareOutputs("interp", {"y"}, {Floats(got)}, {Floats(want)}, tolerance, by_norm,
                        /*quantized=*/false);
}

// An f32 run is held to each element's error against the largest
// magnitude; a bf16/f16/tf32 run to its error's norm against the output's:
// the last element 0.05 off is 0.048 of the largest magnitude (fails at
// 1e-2) and 5e-4 of the output's norm (passes).
TEST(CompareOutputsTest, NarrowPrecisionsAreJudgedByTheOutputsNorm) {
  std::vector<float> want = Reference();
  std::vector<float> got = want;
  got.back() = 1.0f;  // 0.05 off, the largest |ref| is 1.05.
  absl::StatusOr<std::string> by_element = Check(got, want, 1e-2, false);
  ASSERT_FALSE(by_element.ok());
  EXPECT_NE(by_element.status().message().find("MISMATCH"), std::string::npos);
  absl::StatusOr<std::string> by_norm = Check(got, want, 1e-2, true);
  ASSERT_TRUE(by_norm.ok()) << by_norm.status();
  EXPECT_NE(by_norm->find("norm-relative 0.000"), std::string::npos) << *by_norm;
  // Every element 2% off is beyond 1e-2 of the norm too.
  for (float& v : got) v = 1.02f * v;
  absl::StatusOr<std::string> everywhere = Check(got, want, 1e-2, true);
  ASSERT_FALSE(everywhere.ok());
  EXPECT_NE(everywhere.status().message().find("norm-relative 0.02"), std::string::npos)
      << everywhere.status();
}

// The norm hides one wrong element among many: beyond 10 times the
// tolerance of the largest magnitude, an element fails the output alone.
TEST(CompareOutputsTest, OneElementFarOffFailsANarrowPrecision) {
  std::vector<float> want(40000, 1.0f);
  std::vector<float> got = want;
  got[7] = 0.0f;  // 5e-3 of the norm, all of the largest magnitude.
  absl::StatusOr<std::string> r = Check(got, want, 1e-2, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MISMATCH"), std::string::npos) << r.status();
  got[7] = 0.95f;  // 5e-2 of it: within 10 x 1e-2.
  EXPECT_TRUE(Check(got, want, 1e-2, true).ok());
}

// An output of zeros is held to its error's norm against 1e-3, not 0.
TEST(CompareOutputsTest, AnOutputOfZerosToleratesTinyErrors) {
  std::vector<float> want(100, 0.0f);
  std::vector<float> got = want;
  got[3] = 1e-6f;
  EXPECT_TRUE(Check(got, want, 1e-2, true).ok());
  got[3] = 1e-3f;
  EXPECT_FALSE(Check(got, want, 1e-2, true).ok());
}

TEST(CompareOutputsTest, ANanOnOneSideOnlyFailsEitherWay) {
  std::vector<float> want = Reference();
  std::vector<float> got = want;
  got[3] = std::nanf("");
  for (bool by_norm : {false, true}) {
    absl::StatusOr<std::string> r = Check(got, want, 1e-2, by_norm);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("NaN in one only"), std::string::npos) << r.status();
  }
}

TEST(CompareOutputsTest, DifferentShapesAreAnError) {
  absl::StatusOr<std::string> r = Check({1, 2}, {1, 2, 3}, 1e-2, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("output y is f32[2] here and f32[3] there"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace graft::cli
