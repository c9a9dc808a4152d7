#ifndef GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_
#define GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "absl/status/statusor.h"
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
    {
      std::shared_lock lock(mu_);
      if (const Compiled* found = Find(types)) return found;
    }
    absl::StatusOr<std::unique_ptr<Compiled>> compiled = build(types);
    if (!compiled.ok()) return compiled.status();
    std::unique_lock lock(mu_);
    // Another thread may have compiled the same types meanwhile.
    if (const Compiled* found = Find(types)) return found;
    programs_.push_back({types, *std::move(compiled)});
    return programs_.back().compiled.get();
  }

  void Put(const std::vector<TensorType>& types, std::unique_ptr<Compiled> compiled) {
    std::unique_lock lock(mu_);
    for (Entry& e : programs_) {
      if (e.types == types) {
        e.compiled = std::move(compiled);
        return;
      }
    }
    programs_.push_back({types, std::move(compiled)});
  }

  // The one program, when exactly one was compiled; else null.
  const Compiled* only() const {
    std::shared_lock lock(mu_);
    return programs_.size() == 1 ? programs_.front().compiled.get() : nullptr;
  }

 private:
  struct Entry {
    std::vector<TensorType> types;
    std::unique_ptr<Compiled> compiled;
  };

  // A linear search comparing types directly: a run at a known size (every
  // run after the first) costs no string building or allocation; models
  // are compiled for a handful of sizes.
  const Compiled* Find(const std::vector<TensorType>& types) const {
    for (const Entry& e : programs_) {
      if (e.types == types) return e.compiled.get();
    }
    return nullptr;
  }

  mutable std::shared_mutex mu_;
  std::vector<Entry> programs_;
};

}  // namespace graft

#endif  // GRAFT_BACKENDS_PROGRAMS_BY_SHAPE_H_
