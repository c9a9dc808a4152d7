#include "cli/flop_count.h"

#include "graph/parser.h"
#include "gtest/gtest.h"

namespace graft::cli {
namespace {

TEST(CountMatmulFlopsTest, CountsTwoFlopsPerMultiplyAdd) {
  absl::StatusOr<Module> module = ParseModule(R"(
tensor w : f32[5,3] = zeros
tensor k : f32[6,2,3,3] = zeros
graph():
  %x : f32[4,3] = placeholder[target=x]
  %img : f32[1,2,8,8] = placeholder[target=img]
  %w : f32[5,3] = get_attr[target=w]
  %k : f32[6,2,3,3] = get_attr[target=k]
  %linear : f32[4,5] = call_function[target=linear](args = (%x, %w), kwargs = {})
  %relu : f32[4,5] = call_function[target=relu](args = (%linear,), kwargs = {})
  %t : f32[5,4] = call_function[target=transpose](args = (%relu, 0, 1), kwargs = {})
  %matmul : f32[4,4] = call_function[target=matmul](args = (%relu, %t), kwargs = {})
  %conv : f32[1,6,6,6] = call_function[target=conv2d](args = (%img, %k), kwargs = {})
  return (matmul, conv)
)");
  ASSERT_TRUE(module.ok()) << module.status();
  // linear: 4*5 results of 3 products; matmul: 4*4 results of 5 products;
  // conv2d: 1*6*6*6 results of 2*3*3 products; relu counts nothing.
  EXPECT_EQ(CountMatmulFlops(module->graph()),
            2 * (4 * 5 * 3) + 2 * (4 * 4 * 5) + 2 * (216 * 18));
}

TEST(CountMatmulFlopsTest, SymbolicOrUnknownTypesCountZero) {
  absl::StatusOr<Module> module = ParseModule(R"(
tensor w : f32[5,3] = zeros
graph():
  %x : f32[batch,3] = placeholder[target=x]
  %w : f32[5,3] = get_attr[target=w]
  %a : f32[batch,5] = call_function[target=linear](args = (%x, %w), kwargs = {})
  %b = call_function[target=linear](args = (%x, %w), kwargs = {})
  return (a, b)
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(CountMatmulFlops(module->graph()), 0);
}

}  // namespace
}  // namespace graft::cli
