// quantize_per_channel's scales and zero points held as module tensors,
// which type inference cannot see: a compiled program refuses bad ones when
// it is built, naming the node and the channel, as the interpreter does
// when it runs them.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/quantize_constants.h"
#include "backends/step_program.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace graft {
namespace {

using ::graft::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

StepTarget AnyTarget() {
  return {.can_lower = [](const Node&) { return absl::OkStatus(); },
          .is_library_call = [](const Node&) { return false; },
          .absorbs_activation = [](const Node&, absl::string_view) { return false; }};
}

// x f32[2,3] quantized per channel of dim 1 to `dtype` with `scales` and
// `zero_points` (3 values each), then dequantized with `dq_scale`.
Module PerChannel(const std::string& dtype, const std::string& scales,
                  const std::string& zero_points, const std::string& dq_scale) {
  absl::StatusOr<Module> m = ParseModule(absl::StrCat(R"(
tensor scales : f32[3] = )", scales, R"(
tensor zero_points : i64[3] = )", zero_points, R"(
tensor dq_scale : f32[3] = )", dq_scale, R"(

graph():
    %x : f32[2,3] = placeholder[target=x]
    %scales = get_attr[target=scales]
    %zero_points = get_attr[target=zero_points]
    %dq_scale = get_attr[target=dq_scale]
    %q = call_function[target=quantize_per_channel](args = (%x, %scales, %zero_points, 1, )",
                                                    dtype, R"(), kwargs = {})
    %d = call_function[target=dequantize](args = (), kwargs = {input: %q, scale: %dq_scale, zero_point: 0, axis: 1})
    return d
)"));
  EXPECT_OK(m.status());
  return m.ok() ? *std::move(m) : Module();
}

absl::Status Build(const Module& m) {
  return BuildStepProgram(m, {TensorType{DType::kF32, {2, 3}}}, AnyTarget()).status();
}

TEST(QuantizeConstants, GoodOnesBuild) {
  EXPECT_OK(Build(PerChannel("i8", "[0.5, 1, 2]", "[0, -3, 127]", "[0.5, 1, 2]")));
  EXPECT_OK(Build(PerChannel("u8", "[0.5, 1, 2]", "[0, 128, 255]", "[0.5, 1, 2]")));
  EXPECT_OK(Build(PerChannel("f8e4m3", "[0.5, 1, 2]", "[0, 0, 0]", "[0.5, 1, 2]")));
}

TEST(QuantizeConstants, BadOnesFailNamingTheNodeAndTheChannel) {
  struct Case {
    std::string dtype, scales, zero_points, dq_scale, node, message;
  };
  for (const Case& c : std::vector<Case>{
           {"i8", "[0.5, 0, 2]", "[0, 0, 0]", "[1, 1, 1]", "%q", "scales[1] must be positive"},
           {"i8", "[0.5, 1, inf]", "[0, 0, 0]", "[1, 1, 1]", "%q", "scales[2] must be positive and finite"},
           {"i8", "[0.5, 1, 2]", "[0, 200, 0]", "[1, 1, 1]", "%q", "zero_points[1] 200 is out of range for i8"},
           {"u8", "[0.5, 1, 2]", "[-1, 0, 0]", "[1, 1, 1]", "%q", "zero_points[0] -1 is out of range for u8"},
           {"f8e4m3", "[0.5, 1, 2]", "[0, 0, 1]", "[1, 1, 1]", "%q", "zero_points[2] 1 is out of range for f8e4m3"},
       }) {
    SCOPED_TRACE(absl::StrCat(c.dtype, " ", c.scales, " ", c.zero_points, " ", c.dq_scale));
    const Module m = PerChannel(c.dtype, c.scales, c.zero_points, c.dq_scale);
    EXPECT_THAT(Build(m), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr(c.node + " ("), HasSubstr(c.message))));
  }
}

// dequantize takes any scale, as the interpreter's does.
TEST(QuantizeConstants, DequantizeTakesAnyScale) {
  EXPECT_OK(Build(PerChannel("i8", "[0.5, 1, 2]", "[0, 0, 0]", "[1, -1, 0]")));
}

}  // namespace
}  // namespace graft
