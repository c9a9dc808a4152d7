#include "backends/fallback_executable.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft {
namespace {

// One compiled part and where its values come from and go to, as indices
// into the run's value table.
struct Step {
  std::unique_ptr<Executable> executable;
  std::shared_ptr<DeviceAllocator> allocator;  // Null: runs on the host.
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
};

// Runs the parts of a partitioned module in order. Built once; Run keeps
// its values in a local table, so concurrent runs are safe whenever the
// parts' own executables are.
class FallbackExecutable : public Executable {
 public:
  absl::StatusOr<std::vector<Tensor>> Run(
      absl::Span<const Tensor> inputs) override {
    RETURN_IF_ERROR(CheckInputs(inputs_, inputs).status());
    std::vector<Tensor> values = constants_;
    for (size_t i = 0; i < inputs.size(); ++i) values[input_ids_[i]] = inputs[i];
    for (const Step& step : steps_) {
      std::vector<Tensor> args;
      args.reserve(step.inputs.size());
      for (int64_t id : step.inputs) {
        ASSIGN_OR_RETURN(Tensor t, MoveTo(values[id], step.allocator));
        args.push_back(std::move(t));
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> outs, step.executable->Run(args));
      if (outs.size() != step.outputs.size()) {
        return absl::InternalError(
            absl::StrCat("a partition returned ", outs.size(),
                         " values, expected ", step.outputs.size()));
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        values[step.outputs[i]] = std::move(outs[i]);
      }
    }
    std::vector<Tensor> outputs;
    outputs.reserve(output_ids_.size());
    for (int64_t id : output_ids_) {
      if (keep_outputs_on_device_) {
        outputs.push_back(values[id]);
      } else {
        ASSIGN_OR_RETURN(Tensor t, CopyToHost(values[id]));
        outputs.push_back(std::move(t));
      }
    }
    return outputs;
  }

  const std::vector<ValueSignature>& input_signature() const override {
    return inputs_;
  }
  const std::vector<ValueSignature>& output_signature() const override {
    return outputs_;
  }

 private:
  friend class FallbackBuilder;

  static absl::StatusOr<Tensor> MoveTo(
      const Tensor& t, const std::shared_ptr<DeviceAllocator>& allocator) {
    if (allocator == nullptr) return CopyToHost(t);
    return CopyToDevice(t, allocator);
  }

  std::vector<ValueSignature> inputs_;
  std::vector<ValueSignature> outputs_;
  std::vector<Tensor> constants_;  // The value table's initial contents.
  std::vector<int64_t> input_ids_;
  std::vector<int64_t> output_ids_;
  std::vector<Step> steps_;
  bool keep_outputs_on_device_ = false;
};

// Builds a FallbackExecutable from a partition plan.
class FallbackBuilder {
 public:
  FallbackBuilder(Backend& backend, Backend& interp, const Module& module,
                  const CompileOptions& options)
      : backend_(backend),
        interp_(interp),
        module_(module),
        options_(options),
        executable_(new FallbackExecutable()) {}

  absl::StatusOr<std::unique_ptr<Executable>> Build(const PartitionPlan& plan) {
    FallbackExecutable& e = *executable_;
    e.inputs_ = PlaceholderSignature(module_.graph());
    RETURN_IF_ERROR(NarrowSignature(e.inputs_, options_.input_types));
    e.outputs_ = OutputSignature(module_.graph());
    e.keep_outputs_on_device_ = options_.keep_outputs_on_device;
    for (const Node* node : module_.graph().nodes()) {
      if (node->op() != OpCode::kPlaceholder) continue;
      const std::optional<TensorType>& type =
          e.inputs_[e.input_ids_.size()].type;
      if (type.has_value()) input_types_[node] = *type;
      e.input_ids_.push_back(Id(node));
    }
    for (const Partition& p : plan.partitions) {
      for (const Node* n : p.nodes) partition_of_[n] = &p;
    }
    for (const Partition& p : plan.partitions) RETURN_IF_ERROR(AddStep(p));
    const Node* output = module_.graph().output();
    if (output == nullptr || output->num_args() != 1) {
      return absl::InvalidArgumentError("the graph has no output node");
    }
    RETURN_IF_ERROR(AddOutputs(output->arg(0)));
    e.constants_.resize(next_id_);
    for (auto& [id, t] : constant_values_) e.constants_[id] = t;
    return std::unique_ptr<Executable>(std::move(executable_));
  }

 private:
  // The type a part's placeholder for `node` gets: for a graph input, the
  // type the caller compiled for (CompileOptions::input_types).
  std::optional<TensorType> TypeOf(const Node* node) const {
    auto it = input_types_.find(node);
    return it != input_types_.end() ? it->second : node->type();
  }

  int64_t Id(const Node* node) {
    auto [it, inserted] = ids_.emplace(node, next_id_);
    if (inserted) ++next_id_;
    return it->second;
  }

  // Lists nest as deep as the literal, not the graph.
  absl::Status AddOutputs(const Argument& arg) {
    if (arg.is_list()) {
      for (const Argument& e : arg.list()) RETURN_IF_ERROR(AddOutputs(e));
      return absl::OkStatus();
    }
    if (!arg.is_node()) {
      return absl::InvalidArgumentError(
          "outputs must be nodes or lists of nodes, not literals");
    }
    const Node* node = arg.node();
    if (node->op() == OpCode::kGetAttr) {
      const Tensor* t = module_.FindTensor(node->target());
      if (t == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            "node ", node->Ref(), ": the module has no tensor named '",
            node->target(), "'"));
      }
      constant_values_[Id(node)] = *t;
    }
    executable_->output_ids_.push_back(Id(node));
    return absl::OkStatus();
  }

  // Whether `node` yields a tuple: an op that returns one, or a call of a
  // submodule whose output is a list. Tuples cannot cross between parts.
  bool ReturnsTuple(const Node& node) const {
    if (node.op() == OpCode::kCallFunction) {
      return node.schema() != nullptr && node.schema()->returns_tuple;
    }
    if (node.op() == OpCode::kCallModule) {
      const Module* sub = module_.FindSubmodule(node.target());
      const Node* out = sub == nullptr ? nullptr : sub->graph().output();
      return out != nullptr && out->num_args() == 1 && out->arg(0).is_list();
    }
    return false;
  }

  // True if a node outside partition `p` (or the output node) reads `node`.
  bool UsedOutside(const Node* node, const Partition& p) const {
    for (const Node* user : node->users()) {
      auto it = partition_of_.find(user);
      if (it == partition_of_.end() || it->second != &p) return true;
    }
    return false;
  }

  absl::Status AddStep(const Partition& p) {
    Module sub;
    Graph& graph = sub.graph();
    absl::flat_hash_map<const Node*, Node*> map;
    absl::flat_hash_set<const Node*> members(p.nodes.begin(), p.nodes.end());
    Step step;
    for (const Node* n : p.nodes) {
      for (const Node* input : n->inputs()) {
        if (map.contains(input) || members.contains(input)) continue;
        if (input->op() == OpCode::kGetAttr) {
          const Tensor* t = module_.FindTensor(input->target());
          if (t != nullptr) sub.SetTensor(input->target(), *t);
          map[input] = graph.CopyNode(*input, map);
          continue;
        }
        map[input] = graph.Placeholder(input->name(), TypeOf(input));
        step.inputs.push_back(Id(input));
      }
      if (n->op() == OpCode::kCallModule) {
        const Module* called = module_.FindSubmodule(n->target());
        if (called != nullptr && sub.FindSubmodule(n->target()) == nullptr) {
          sub.AddSubmodule(n->target(), called->Clone());
        }
      }
      map[n] = graph.CopyNode(*n, map);
    }
    std::vector<Argument> outputs;
    for (const Node* n : p.nodes) {
      if (!UsedOutside(n, p)) continue;
      if (ReturnsTuple(*n)) {
        return absl::UnimplementedError(absl::StrCat(
            "node ", n->Ref(),
            " returns a tuple that is read outside its "
            "partition (by the graph's output): graphs that split between "
            "backends must return tensors; read the elements with getitem"));
      }
      outputs.push_back(Argument(map.at(n)));
      step.outputs.push_back(Id(n));
    }
    graph.Output(Argument(std::move(outputs)));
    Backend& side = p.on_backend ? backend_ : interp_;
    CompileOptions options;
    if (p.on_backend) {
      options = options_;
      // The part's placeholders carry their types; values stay on the
      // device between parts, and Run brings the outputs home once.
      options.input_types.clear();
      options.keep_outputs_on_device = true;
      step.allocator = backend_.allocator(options_);
    } else {
      // The interpreter's collectives go through the same communicator.
      options.communicator = options_.communicator;
    }
    absl::StatusOr<std::unique_ptr<Executable>> compiled =
        side.Compile(sub, options);
    if (!compiled.ok()) {
      return absl::Status(
          compiled.status().code(),
          absl::StrCat("compiling a partition of ", p.nodes.size(),
                       " nodes on ", side.name(), " (first ",
                       p.nodes.front()->Ref(), "): ",
                       compiled.status().message()));
    }
    step.executable = *std::move(compiled);
    executable_->steps_.push_back(std::move(step));
    return absl::OkStatus();
  }

  Backend& backend_;
  Backend& interp_;
  const Module& module_;
  const CompileOptions& options_;
  std::unique_ptr<FallbackExecutable> executable_;
  absl::flat_hash_map<const Node*, const Partition*> partition_of_;
  absl::flat_hash_map<const Node*, int64_t> ids_;
  absl::flat_hash_map<int64_t, Tensor> constant_values_;
  absl::flat_hash_map<const Node*, TensorType> input_types_;
  int64_t next_id_ = 0;
};

// Whether `backend` can run `node` of `module`: a call_module only when
// it can run every node of the submodule (the node alone does not say
// what the submodule holds).
absl::Status CanRunIn(const Backend& backend, const Module& module,
                      const Node& node, const CompileOptions& options) {
  RETURN_IF_ERROR(backend.CanRun(node, options));
  if (node.op() != OpCode::kCallModule) return absl::OkStatus();
  const Module* sub = module.FindSubmodule(node.target());
  if (sub == nullptr) return absl::OkStatus();  // Compile reports it.
  for (const Node* inner : sub->graph().nodes()) {
    absl::Status s = CanRunIn(backend, *sub, *inner, options);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("submodule '", node.target(), "': %",
                                                 inner->name(), " (", inner->target(),
                                                 "): ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> CompileWithFallback(
    Backend& backend, const Module& module, const CompileOptions& options,
    CompileReport* report) {
  const PartitionPlan plan =
      PlanPartitions(module, [&](const Node& node) {
        return CanRunIn(backend, module, node, options);
      });
  if (report != nullptr) {
    report->breaks = plan.breaks;
    report->partitions = plan.breaks.empty() ? 1 : plan.partitions.size();
    report->backend_partitions =
        plan.breaks.empty() ? 1 : plan.backend_partitions();
  }
  if (plan.breaks.empty() || backend.name() == "interp") {
    return backend.Compile(module, options);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> interp, CreateBackend("interp"));
  return FallbackBuilder(backend, *interp, module, options).Build(plan);
}

}  // namespace graft
