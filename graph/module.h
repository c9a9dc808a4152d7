#ifndef GRAFT_GRAPH_MODULE_H_
#define GRAFT_GRAPH_MODULE_H_

#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace graft {

// A named tensor of a module. `init` remembers how the text format created
// it ("random(seed=3)", "zeros"), so printing can reproduce it compactly;
// it is cleared whenever the data is replaced.
struct ModuleTensor {
  Tensor value;
  std::string init;
};

// What a graph needs to run: the graph, the tensors its get_attr nodes read
// (parameters, buffers, constants), and the submodules its call_module
// nodes call (fused groups, partitions). Named things are kept sorted so
// that printing and serialization are deterministic.
class Module {
 public:
  Module() : graph_(std::make_unique<Graph>()) {}
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }

  const std::map<std::string, ModuleTensor>& tensors() const { return tensors_; }
  // Null if absent.
  const Tensor* FindTensor(absl::string_view name) const;
  void SetTensor(std::string name, Tensor value, std::string init = {});
  bool RemoveTensor(absl::string_view name);
  // A tensor name not yet used, derived from `base`.
  std::string UniqueTensorName(absl::string_view base) const;

  const std::map<std::string, std::unique_ptr<Module>>& submodules() const {
    return submodules_;
  }
  Module* FindSubmodule(absl::string_view name) const;
  Module* AddSubmodule(std::string name, Module module);
  bool RemoveSubmodule(absl::string_view name);
  std::string UniqueSubmoduleName(absl::string_view base) const;

  // A deep copy of the graph structure; tensor storage is shared
  // (tensors are values: passes replace them, never write into them).
  Module Clone() const;

 private:
  std::unique_ptr<Graph> graph_;
  std::map<std::string, ModuleTensor> tensors_;
  std::map<std::string, std::unique_ptr<Module>> submodules_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_MODULE_H_
