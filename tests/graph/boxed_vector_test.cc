#include "graph/boxed_vector.h"

#include <string>
#include <vector>

#include "graph/node.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(BoxedVectorTest, IsOnePointerAndStartsEmpty) {
  EXPECT_EQ(sizeof(BoxedVector<std::string>), sizeof(void*));
  BoxedVector<int> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.size(), 0u);
  EXPECT_TRUE(v.get().empty());
  EXPECT_EQ(v.begin(), v.end());
}

TEST(BoxedVectorTest, BehavesAsTheVectorItHolds) {
  BoxedVector<std::string> v;
  v.push_back("a");
  v.emplace_back("b");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], "a");
  EXPECT_EQ(v.back(), "b");
  for (std::string& s : v) s += "!";  // Writable iteration.
  EXPECT_EQ(v.get(), (std::vector<std::string>{"a!", "b!"}));
  EXPECT_TRUE(v == (std::vector<std::string>{"a!", "b!"}));
  v.clear();
  EXPECT_TRUE(v.empty());
}

TEST(BoxedVectorTest, CopiesAreDeepAndCompareByValue) {
  BoxedVector<int> a = std::vector<int>{1, 2, 3};
  BoxedVector<int> b = a;
  b[0] = 7;
  EXPECT_EQ(a[0], 1);
  EXPECT_FALSE(a == b);
  b[0] = 1;
  EXPECT_TRUE(a == b);
  BoxedVector<int> empty;
  EXPECT_FALSE(a == empty);
  a = std::vector<int>{};  // Assigning nothing leaves it empty.
  EXPECT_TRUE(a == empty);
}

TEST(BoxedVectorTest, WritableIterationOfAnEmptyVectorStaysEmpty) {
  BoxedVector<int> v;
  int visited = 0;
  for (int& x : v) visited += x;
  EXPECT_EQ(visited, 0);
  v.reserve(0);
  EXPECT_TRUE(v.empty());
}

// The memory target (at most 300 bytes a node, tensors aside) rests on the
// node's own size; keep it from creeping back up.
TEST(NodeSizeTest, NodesStayWithin248Bytes) { EXPECT_LE(sizeof(Node), 248u); }

}  // namespace
}  // namespace graft
