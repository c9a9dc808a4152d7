#include "backends/interp/kernel.h"

#include <mutex>

#include "backends/interp/kernels_fused.h"
#include "support/status_macros.h"

namespace graft::interp {

absl::StatusOr<const Value*> KernelContext::ValueOfNode(
    const Node* node, absl::string_view param) const {
  const Value* value = lookup_(node);
  if (value == nullptr || value->empty()) {
    return KernelError("argument '", param, "' (", node->Ref(),
                       ") has no value");
  }
  return value;
}

absl::StatusOr<const Value*> KernelContext::InputValue(
    absl::string_view param) const {
  Node* node = call_.TensorNode(param);
  if (node == nullptr) {
    return KernelError("argument '", param, "' must be a tensor");
  }
  return ValueOfNode(node, param);
}

absl::StatusOr<Tensor> KernelContext::Input(absl::string_view param) const {
  ASSIGN_OR_RETURN(const Value* value, InputValue(param));
  if (!value->is_tensor()) {
    return KernelError("argument '", param, "' (",
                       call_.TensorNode(param)->Ref(),
                       ") is a tuple; read one element with getitem");
  }
  return value->tensor();
}

absl::StatusOr<std::optional<Tensor>> KernelContext::OptionalInput(
    absl::string_view param) const {
  if (call_.IsNone(param)) return std::optional<Tensor>();
  ASSIGN_OR_RETURN(Tensor t, Input(param));
  return std::optional<Tensor>(std::move(t));
}

absl::StatusOr<Operand> KernelContext::InputOrScalar(
    absl::string_view param) const {
  const Argument& a = call_.Get(param);
  if (a.is_node()) {
    ASSIGN_OR_RETURN(Tensor t, Input(param));
    return Operand{std::move(t), false};
  }
  if (a.is_bool()) {
    Tensor t(DType::kBool, {});
    t.data<uint8_t>()[0] = a.bool_value() ? 1 : 0;
    return Operand{t, true};
  }
  if (a.is_int()) {
    Tensor t(DType::kI64, {});
    t.data<int64_t>()[0] = a.int_value();
    return Operand{t, true};
  }
  if (a.is_double()) {
    Tensor t(DType::kF64, {});
    t.data<double>()[0] = a.double_value();
    return Operand{t, true};
  }
  return KernelError("argument '", param, "' must be a tensor or a number");
}

absl::StatusOr<std::vector<Tensor>> KernelContext::InputList(
    absl::string_view param) const {
  std::vector<Tensor> out;
  const Argument& a = call_.Get(param);
  if (!a.is_list()) return KernelError("argument '", param, "' must be a list");
  for (const Argument& e : a.list()) {
    if (!e.is_node()) {
      return KernelError("argument '", param, "' must be a list of tensors");
    }
    ASSIGN_OR_RETURN(const Value* v, ValueOfNode(e.node(), param));
    if (!v->is_tensor()) {
      return KernelError("element ", e.node()->Ref(), " of '", param,
                         "' is a tuple; read one element with getitem");
    }
    out.push_back(v->tensor());
  }
  return out;
}

KernelTable& KernelTable::Global() {
  static KernelTable* table = [] {
    auto* t = new KernelTable();
    RegisterElementwiseKernels(*t);
    RegisterReduceKernels(*t);
    RegisterNnKernels(*t);
    RegisterShapeKernels(*t);
    RegisterCreationKernels(*t);
    RegisterQuantKernels(*t);
    RegisterCollectiveKernels(*t);
    RegisterFusedKernels(*t);
    return t;
  }();
  return *table;
}

absl::Status KernelTable::Register(std::string op, Kernel kernel) {
  std::unique_lock lock(mu_);
  if (kernels_.contains(op)) {
    return absl::AlreadyExistsError(
        absl::StrCat("op '", op, "' already has an interpreter kernel"));
  }
  kernels_.emplace(std::move(op), std::move(kernel));
  return absl::OkStatus();
}

void KernelTable::Add(std::string op, Kernel kernel) {
  std::unique_lock lock(mu_);
  kernels_[std::move(op)] = std::move(kernel);
}

const Kernel* KernelTable::Find(absl::string_view op) const {
  std::shared_lock lock(mu_);
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelTable::Ops() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> ops;
  for (const auto& [name, kernel] : kernels_) ops.push_back(name);
  return ops;
}

}  // namespace graft::interp
