#include "graph/module.h"

#include "absl/strings/str_cat.h"

namespace graft {

const Tensor* Module::FindTensor(absl::string_view name) const {
  auto it = tensors_.find(std::string(name));
  return it == tensors_.end() ? nullptr : &it->second.value;
}

void Module::SetTensor(std::string name, Tensor value, std::string init) {
  tensors_[std::move(name)] = ModuleTensor{std::move(value), std::move(init)};
}

bool Module::RemoveTensor(absl::string_view name) {
  return tensors_.erase(std::string(name)) > 0;
}

namespace {

template <typename Map>
std::string UniqueKey(const Map& map, absl::string_view base) {
  std::string name(base);
  for (int i = 1; map.count(name) > 0; ++i) name = absl::StrCat(base, "_", i);
  return name;
}

}  // namespace

std::string Module::UniqueTensorName(absl::string_view base) const {
  return UniqueKey(tensors_, base);
}

Module* Module::FindSubmodule(absl::string_view name) const {
  auto it = submodules_.find(std::string(name));
  return it == submodules_.end() ? nullptr : it->second.get();
}

Module* Module::AddSubmodule(std::string name, Module module) {
  auto& slot = submodules_[std::move(name)];
  slot = std::make_unique<Module>(std::move(module));
  return slot.get();
}

bool Module::RemoveSubmodule(absl::string_view name) {
  return submodules_.erase(std::string(name)) > 0;
}

std::string Module::UniqueSubmoduleName(absl::string_view base) const {
  return UniqueKey(submodules_, base);
}

Module Module::Clone() const {
  Module copy;
  copy.graph_->CopyFrom(*graph_);
  copy.tensors_ = tensors_;
  for (const auto& [name, sub] : submodules_) {
    copy.submodules_[name] = std::make_unique<Module>(sub->Clone());
  }
  return copy;
}

}  // namespace graft
