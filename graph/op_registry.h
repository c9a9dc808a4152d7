#ifndef GRAFT_GRAPH_OP_REGISTRY_H_
#define GRAFT_GRAPH_OP_REGISTRY_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/argument.h"
#include "graph/node.h"
#include "graph/op_traits.h"
#include "graph/tensor_type.h"

namespace graft {

// What a parameter of an op accepts.
enum class ParamKind : uint8_t {
  kTensor,          // A node.
  kTensorOrScalar,  // A node or a number/bool literal (add(x, 1.0)).
  kTensorList,      // A list of nodes (concat).
  kInt,
  kIntList,         // A list of ints; a single int is accepted and repeated.
  kFloat,           // Int or float literal.
  kScalar,          // Int, float or bool literal.
  kBool,
  kDType,
  kString,
};
absl::string_view ParamKindName(ParamKind kind);

struct ParamSpec {
  std::string name;
  ParamKind kind;
  bool optional = false;                  // Also accepts None.
  std::optional<Argument> default_value;  // Unset: the parameter is required.
};

class InferContext;
// Computes result types from argument types; one entry per result.
using InferFn =
    std::function<absl::StatusOr<std::vector<TensorType>>(const InferContext&)>;

// The schema of a registered op: its parameters, purity and type rule.
struct OpSchema {
  std::string name;  // Core ops: "add"; extension ops: "ns::name".
  std::vector<ParamSpec> params;
  bool pure = true;            // False: dce keeps it even when unused.
  bool returns_tuple = false;  // Results are read with getitem.
  // Raised whenever what the op computes changes, so that compiled code
  // cached for the old meaning (keyed by ModuleFingerprint) is not reused.
  int version = 1;
  // What kind of work it does (graph/op_traits.h).
  OpTraits traits;
  InferFn infer;
  std::string summary;  // One line, shown by `graft passes`.

  // Index of parameter `name`, or -1.
  int ParamIndex(absl::string_view name) const;
  // "add(input: Tensor, other: Tensor|Scalar, alpha: Scalar = 1)".
  std::string Signature() const;
};

// A call's arguments bound to the parameters of its op's schema: positional
// and keyword arguments resolved, defaults filled in, kinds checked. Holds
// pointers into the node and the schema: use it while both are unchanged.
class OpCall {
 public:
  static absl::StatusOr<OpCall> Bind(const OpSchema& schema,
                                     absl::Span<const Argument> args,
                                     const Kwargs& kwargs);
  static absl::StatusOr<OpCall> Bind(const Node& node);

  const OpSchema& schema() const { return *schema_; }
  // The bound argument (or default). `name` must be a parameter of the op.
  const Argument& Get(absl::string_view name) const;
  // The bound argument (or default) of parameter number `index` of the
  // schema; for code that walks every parameter.
  const Argument& GetAt(size_t index) const { return *bound_[index]; }
  bool IsNone(absl::string_view name) const { return Get(name).is_none(); }
  int64_t Int(absl::string_view name) const { return Get(name).int_value(); }
  double Float(absl::string_view name) const { return Get(name).number(); }
  bool Bool(absl::string_view name) const { return Get(name).bool_value(); }
  DType GetDType(absl::string_view name) const { return Get(name).dtype_value(); }
  const std::string& String(absl::string_view name) const {
    return Get(name).string_value();
  }
  // Int lists; a single int yields one element.
  std::vector<int64_t> Ints(absl::string_view name) const {
    return Get(name).int_list();
  }
  // The node of a tensor parameter; null when it is None or a literal.
  Node* TensorNode(absl::string_view name) const;
  std::vector<Node*> TensorNodes(absl::string_view name) const;

 private:
  const OpSchema* schema_ = nullptr;
  // One per parameter; inline, since every node a pass creates binds one.
  absl::InlinedVector<const Argument*, 8> bound_;
};

// Inputs to an op's type rule.
class InferContext {
 public:
  InferContext(const OpCall& call, const Node* node) : call_(call), node_(node) {}
  const OpCall& call() const { return call_; }
  // The node being typed; null when a rule runs on arguments alone.
  const Node* node() const { return node_; }
  // The type of tensor parameter `name`. For a literal scalar given to a
  // kTensorOrScalar parameter: a rank-0 type of the literal's dtype
  // (f32 for floats, i64 for ints, bool for bools).
  TensorType Type(absl::string_view name) const;
  std::vector<TensorType> Types(absl::string_view name) const;
  // The result types of a tuple-returning node given to parameter `name`.
  const std::vector<TensorType>& TupleTypes(absl::string_view name) const {
    return call_.TensorNode(name)->meta().tuple_types;
  }
  // True if parameter `name` is a node (not None, not a literal).
  bool IsTensor(absl::string_view name) const {
    return call_.TensorNode(name) != nullptr;
  }
  // An error naming the op, for type rules to return.
  absl::Status Error(absl::string_view message) const;

 private:
  const OpCall& call_;
  const Node* node_;
};

// Every op graft knows: the core set (registered on first use) plus the
// extension ops that plugins and users add.
class OpRegistry {
 public:
  static OpRegistry& Global();

  // Fails if the name is taken or malformed.
  absl::Status Register(OpSchema schema);
  // Null if unknown. Pointers stay valid for the life of the process.
  const OpSchema* Find(absl::string_view name) const;
  // All schemas, sorted by name.
  std::vector<const OpSchema*> All() const;

 private:
  // Lookups happen for every node created, so they take no lock: readers
  // see an immutable index, and Register publishes a new one. Ops are never
  // removed, so old indexes stay valid and are kept, not freed.
  using Index = absl::flat_hash_map<std::string, const OpSchema*>;
  mutable std::mutex write_mu_;
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> ops_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::atomic<const Index*> index_{nullptr};
};

// Registers the core op set (graph/core_ops.cc).
void RegisterCoreOps(OpRegistry& registry);

// Infers the result types of call_function `node` from its inputs' types.
// Returns nullopt when some input type is unknown or the op has no rule.
absl::StatusOr<std::optional<std::vector<TensorType>>> InferNodeTypes(
    const Node& node);

}  // namespace graft

#endif  // GRAFT_GRAPH_OP_REGISTRY_H_
