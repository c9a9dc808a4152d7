#ifndef GRAFT_TESTS_GRAPH_GRAPH_TEST_PEER_H_
#define GRAFT_TESTS_GRAPH_GRAPH_TEST_PEER_H_

#include <cstddef>
#include <string>
#include <utility>

#include "graph/graph.h"
#include "graph/node.h"

namespace graft {

// Reaches past the public API of Node and Graph so tests can build the
// broken states the verifier must catch, and observe node bookkeeping.
class GraphTestPeer {
 public:
  static Node::UseList& uses(Node* node) { return node->uses_; }
  // Changes the name and drops the node from the graph's name table, as a
  // buggy pass that bypassed Graph::Rename would leave it.
  static void SetRawName(Node* node, std::string name) {
    node->graph_->names_.Erase(node);
    node->name_ = std::move(name);
  }
  // Erased nodes still allocated, waiting for Cleanup().
  static size_t erased_pending(const Graph& graph) {
    return graph.erased_.size();
  }
};

}  // namespace graft

#endif  // GRAFT_TESTS_GRAPH_GRAPH_TEST_PEER_H_
