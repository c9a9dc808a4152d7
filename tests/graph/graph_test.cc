#include "graph/graph.h"

#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(GraphTest, UseListsRecordSlots) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* add = g.CallFunction("add", {x, x});
  ASSERT_EQ(x->num_uses(), 2u);
  EXPECT_EQ(x->uses()[0], (Use{add, 0}));
  EXPECT_EQ(x->uses()[1], (Use{add, 1}));
  EXPECT_EQ(add->name(), "add");
  Node* add2 = g.CallFunction("add", {add, 1.0});
  EXPECT_EQ(add2->name(), "add_1");
}

}  // namespace
}  // namespace graft
