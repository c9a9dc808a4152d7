#ifndef GRAFT_TESTS_PASSES_TEST_UTIL_H_
#define GRAFT_TESTS_PASSES_TEST_UTIL_H_

#include <string>

#include "graph/parser.h"
#include "graph/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft::testing {

// Parses a module or fails the test.
inline Module Parse(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Module();
}

// The call_function targets of a graph, in order, joined by spaces.
inline std::string Ops(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (n->op() != OpCode::kCallFunction) continue;
    if (!out.empty()) out += " ";
    out += n->target();
  }
  return out;
}

}  // namespace graft::testing

#endif  // GRAFT_TESTS_PASSES_TEST_UTIL_H_
