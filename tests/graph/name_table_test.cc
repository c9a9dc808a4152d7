#include "graph/name_table.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/huge_pages.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(NameTableTest, FindsInsertsAndErasesByName) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  NameTable table;
  EXPECT_TRUE(table.Insert(x));
  EXPECT_TRUE(table.Insert(y, NameTable::Hash("y")));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Find("x"), x);
  EXPECT_EQ(table.Find("y"), y);
  EXPECT_EQ(table.Find("z"), nullptr);
  EXPECT_TRUE(table.Contains("x"));
  // The same name again is refused, and the table is unchanged.
  EXPECT_FALSE(table.Insert(x));
  EXPECT_EQ(table.size(), 2u);
  table.Erase(x);
  EXPECT_EQ(table.Find("x"), nullptr);
  EXPECT_EQ(table.Find("y"), y);
  EXPECT_EQ(table.size(), 1u);
}

TEST(NameTableTest, KeepsEveryNameThroughManyGrowths) {
  // Grows from empty through many rehashes, which use the stored hashes
  // only, up to a table on huge pages; every node must still be found by its
  // name afterwards.
  const size_t mapped_before = HugePageBytesInUse();
  Graph g;
  Node* x = g.Placeholder("x");
  Node* last = x;
  constexpr int kNodes = 70'000;
  for (int i = 0; i < kNodes; ++i) last = g.CallFunction("relu", {last});
  EXPECT_EQ(g.FindNode("relu"), x->users()[0]);
  int found = 0;
  for (Node* n : g.nodes()) found += g.FindNode(n->name()) == n;
  EXPECT_EQ(found, kNodes + 1);
  EXPECT_EQ(g.FindNode(absl::StrCat("relu_", kNodes - 1)), last);
  EXPECT_EQ(g.FindNode(absl::StrCat("relu_", kNodes)), nullptr);
  // 70k names need a table of 2^17 slots (over 2 MiB), and node slabs
  // beyond the first 2 MiB: both mapped.
  EXPECT_GE(HugePageBytesInUse() - mapped_before, 3 * kHugePageBytes);
}

TEST(NameTableTest, RenamedAndErasedNodesAreFoundUnderTheirNewState) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* r = g.CallFunction("relu", {x});
  ASSERT_TRUE(g.Rename(r, "activation").ok());
  EXPECT_EQ(g.FindNode("relu"), nullptr);
  EXPECT_EQ(g.FindNode("activation"), r);
  // The old name is free again: a new relu takes it.
  Node* r2 = g.CallFunction("relu", {r});
  EXPECT_EQ(r2->name(), "relu");
  ASSERT_TRUE(g.EraseNode(r2).ok());
  EXPECT_EQ(g.FindNode("relu"), nullptr);
  EXPECT_EQ(g.FindNode("activation"), r);
}

}  // namespace
}  // namespace graft
