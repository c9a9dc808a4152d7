#include "graph/module_fingerprint.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/op_registry.h"

namespace graft {
namespace {

// Tensors from this size on are hashed on their own (and the hash kept by
// their storage); smaller ones go into the module's hash byte by byte.
constexpr size_t kLargeTensorBytes = size_t{1} << 16;

// Hashes one module into a builder shared with its submodules.
class ModuleHasher {
 public:
  explicit ModuleHasher(FingerprintBuilder& out) : out_(out) {}

  void Add(const Module& module) {
    absl::flat_hash_map<const Node*, int64_t> position;
    for (const Node* node : module.graph().nodes()) {
      position.emplace(node, static_cast<int64_t>(position.size()));
      AddNode(*node, position);
    }
    out_.AddString("tensors").AddInt(module.tensors().size());
    for (const auto& [name, tensor] : module.tensors()) {
      AddTensor(name, tensor.value);
    }
    out_.AddString("submodules").AddInt(module.submodules().size());
    for (const auto& [name, sub] : module.submodules()) {
      out_.AddString(name);
      ModuleHasher(out_).Add(*sub);
    }
  }

 private:
  using Positions = absl::flat_hash_map<const Node*, int64_t>;

  void AddNode(const Node& node, const Positions& position) {
    out_.AddInt(static_cast<int64_t>(node.op())).AddString(node.target());
    if (node.op() == OpCode::kCallFunction) {
      const OpSchema* schema = node.schema();
      out_.AddInt(schema == nullptr ? -1 : schema->version);
    }
    out_.AddInt(node.num_args());
    for (const Argument& arg : node.args()) AddArgument(arg, position);
    // Keyword order is how the producer happened to write them.
    std::vector<const std::pair<std::string, Argument>*> kwargs;
    for (const auto& kv : node.kwargs()) kwargs.push_back(&kv);
    std::sort(kwargs.begin(), kwargs.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    out_.AddInt(kwargs.size());
    for (const auto* kv : kwargs) {
      out_.AddString(kv->first);
      AddArgument(kv->second, position);
    }
    out_.AddInt(node.type().has_value() ? 1 : 0);
    if (node.type().has_value()) AddType(*node.type());
    out_.AddInt(node.meta().tuple_types.size());
    for (const TensorType& t : node.meta().tuple_types) AddType(t);
  }

  // Lists nest as deep as the literal, not the graph, so recursion is fine.
  void AddArgument(const Argument& arg, const Positions& position) {
    if (arg.is_node()) {
      auto it = position.find(arg.node());
      out_.AddString("node").AddInt(it == position.end() ? -1 : it->second);
    } else if (arg.is_none()) {
      out_.AddString("none");
    } else if (arg.is_int()) {
      out_.AddString("int").AddInt(arg.int_value());
    } else if (arg.is_double()) {
      out_.AddString("double").AddDouble(arg.double_value());
    } else if (arg.is_bool()) {
      out_.AddString("bool").AddInt(arg.bool_value());
    } else if (arg.is_string()) {
      out_.AddString("string").AddString(arg.string_value());
    } else if (arg.is_dtype()) {
      out_.AddString("dtype").AddString(DTypeName(arg.dtype_value()));
    } else if (arg.is_list()) {
      out_.AddString("list").AddInt(arg.list().size());
      for (const Argument& e : arg.list()) AddArgument(e, position);
    }
  }

  void AddType(const TensorType& type) {
    out_.AddString(DTypeName(type.dtype)).AddInt(type.shape.size());
    for (const Dim& d : type.shape) {
      if (d.is_constant()) {
        out_.AddInt(d.value());
      } else {
        out_.AddString(d.symbol());
      }
    }
  }

  void AddTensor(const std::string& name, const Tensor& t) {
    out_.AddString(name).AddString(DTypeName(t.dtype())).AddInt(t.rank());
    for (int64_t d : t.dims()) out_.AddInt(d);
    if (t.defined() && t.on_host() && t.NumBytes() >= kLargeTensorBytes) {
      // A large tensor adds the hash of its bytes, which its storage
      // remembers when the tensor is all of it (the usual case).
      const Fingerprint content = t.offset() == 0 && t.NumBytes() == t.storage()->size()
                                      ? t.storage()->ContentFingerprint()
                                      : ContentHashOf(static_cast<const std::byte*>(t.raw_data()), t.NumBytes());
      out_.AddString("content")
          .AddInt(static_cast<int64_t>(content.high))
          .AddInt(static_cast<int64_t>(content.low));
    } else if (t.defined() && t.on_host()) {
      out_.AddBytes(t.raw_data(), t.NumBytes());
    } else if (t.defined()) {
      absl::StatusOr<Tensor> host = CopyToHost(t);
      if (host.ok()) {
        out_.AddBytes(host->raw_data(), host->NumBytes());
      } else {
        // Never equal to anything else: no cache hit is better than a
        // wrong one.
        out_.AddString("unreadable device tensor")
            .AddInt(reinterpret_cast<intptr_t>(t.raw_data()));
      }
    } else {
      out_.AddString("undefined");
    }
  }

  FingerprintBuilder& out_;
};

}  // namespace

Fingerprint ModuleFingerprint(const Module& module) {
  FingerprintBuilder builder;
  builder.AddString("graft-module-v1");
  ModuleHasher(builder).Add(module);
  return builder.Finish();
}

}  // namespace graft
