#ifndef GRAFT_BACKENDS_INTERP_KERNEL_H_
#define GRAFT_BACKENDS_INTERP_KERNEL_H_

#include <functional>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/communicator.h"
#include "backends/interp/value.h"
#include "graph/node.h"
#include "graph/op_registry.h"
#include "graph/tensor.h"

namespace graft::interp {

// A kernel argument given as a tensor or as a number literal. Literals are
// "weak" in type promotion, as Python scalars are in PyTorch: add(i32, 1)
// stays i32 and add(f16, 0.5) stays f16.
struct Operand {
  Tensor tensor;
  bool literal = false;
};

// What a kernel sees of the node it computes: the bound arguments and the
// values of the nodes they refer to. Errors returned by kernels need not
// name the node; the interpreter adds that.
class KernelContext {
 public:
  using Lookup = std::function<const Value*(const Node*)>;

  KernelContext(const Node& node, const OpCall& call, Lookup lookup,
                Communicator* communicator = nullptr)
      : node_(node), call_(call), lookup_(std::move(lookup)), communicator_(communicator) {}

  const Node& node() const { return node_; }
  const OpCall& call() const { return call_; }
  // The rank's link to the others, for the collectives; null outside a
  // sharded run.
  Communicator* communicator() const { return communicator_; }

  // The tensor of parameter `param`, which must be a node holding a tensor.
  absl::StatusOr<Tensor> Input(absl::string_view param) const;
  // As Input, but None gives nullopt.
  absl::StatusOr<std::optional<Tensor>> OptionalInput(
      absl::string_view param) const;
  // A Tensor|Scalar parameter: a literal becomes a rank-0 tensor (bool,
  // i64 or f64, keeping the literal exact) marked as a literal.
  absl::StatusOr<Operand> InputOrScalar(absl::string_view param) const;
  // A Tensor[] parameter.
  absl::StatusOr<std::vector<Tensor>> InputList(absl::string_view param) const;
  // The raw value of a node parameter (a tensor or a tuple).
  absl::StatusOr<const Value*> InputValue(absl::string_view param) const;

 private:
  absl::StatusOr<const Value*> ValueOfNode(const Node* node,
                                           absl::string_view param) const;

  const Node& node_;
  const OpCall& call_;
  Lookup lookup_;
  Communicator* communicator_;
};

using Kernel = std::function<absl::StatusOr<Value>(const KernelContext&)>;

// The interpreter's kernels by op name. Kernels for extension ops (a
// plugin's "ns::name" ops) are added with Register; kernels are never
// removed, so pointers from Find stay valid.
class KernelTable {
 public:
  // Every kernel of the core op set and of the fused ops passes create,
  // plus those registered since.
  static KernelTable& Global();

  // Fails if `op` already has a kernel. Safe to call while other threads
  // run graphs.
  absl::Status Register(std::string op, Kernel kernel);
  // Adds or replaces; for filling a table before it is shared.
  void Add(std::string op, Kernel kernel);
  // Null if there is no kernel for `op`.
  const Kernel* Find(absl::string_view op) const;
  // Sorted.
  std::vector<std::string> Ops() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, Kernel, std::less<>> kernels_;
};

// Each kernel family registers its ops (kernels_<family>.cc).
void RegisterElementwiseKernels(KernelTable& table);
void RegisterReduceKernels(KernelTable& table);
void RegisterNnKernels(KernelTable& table);
void RegisterShapeKernels(KernelTable& table);
void RegisterCreationKernels(KernelTable& table);
void RegisterQuantKernels(KernelTable& table);
void RegisterCollectiveKernels(KernelTable& table);

// An InvalidArgument error built from pieces, for kernels.
template <typename... Args>
absl::Status KernelError(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_KERNEL_H_
