#ifndef GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_
#define GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/backend.h"
#include "graph/tensor_type.h"

namespace graft {

// Whether every input type is known and has constant dims.
inline bool AllConcrete(const std::vector<ValueSignature>& signature) {
  for (const ValueSignature& s : signature) {
    if (!s.type.has_value()) return false;
    for (Dim d : s.type->shape) {
      if (d.is_symbolic()) return false;
    }
  }
  return true;
}

// The compiled programs of one executable, one per set of concrete input
// types: a module with symbolic dims is compiled at the first run of each
// new size and kept for later runs. Thread-safe; a compile runs outside the
// lock, so runs at sizes already compiled go on meanwhile.
template <typename Compiled>
class ProgramsByShape {
 public:
  using Build = std::function<absl::StatusOr<std::unique_ptr<Compiled>>(
      const std::vector<TensorType>&)>;

  absl::StatusOr<const Compiled*> Get(const std::vector<TensorType>& types,
                                      const Build& build) {
    const std::string key = Key(types);
    {
      std::shared_lock lock(mu_);
      auto it = programs_.find(key);
      if (it != programs_.end()) return it->second.get();
    }
    absl::StatusOr<std::unique_ptr<Compiled>> compiled = build(types);
    if (!compiled.ok()) return compiled.status();
    std::unique_lock lock(mu_);
    auto [it, inserted] = programs_.emplace(key, *std::move(compiled));
    return it->second.get();
  }

  void Put(const std::vector<TensorType>& types, std::unique_ptr<Compiled> compiled) {
    std::unique_lock lock(mu_);
    programs_[Key(types)] = std::move(compiled);
  }

  // The one program, when exactly one was compiled; else null.
  const Compiled* only() const {
    std::shared_lock lock(mu_);
    return programs_.size() == 1 ? programs_.begin()->second.get() : nullptr;
  }

 private:
  static std::string Key(const std::vector<TensorType>& types) {
    std::string key;
    for (const TensorType& t : types) absl::StrAppend(&key, t.ToString(), ";");
    return key;
  }

  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<Compiled>> programs_;
};

}  // namespace graft

#endif  // GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_
