#include "passes/pattern_registry.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

bool IsPatternName(absl::string_view name) {
  if (name.empty() || !absl::ascii_isalpha(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-' &&
        c != ':') {
      return false;
    }
  }
  return true;
}

size_t NumOutputs(const Graph& g) {
  const Node* out = g.output();
  if (out == nullptr || out->num_args() != 1) return 0;
  return out->arg(0).is_list() ? out->arg(0).list().size() : 1;
}

}  // namespace

absl::Status CheckPatternInfo(const PatternInfo& info) {
  if (!IsPatternName(info.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid pattern name '", info.name,
        "': use letters, digits, '_', '.', '-' and ':', starting with a "
        "letter"));
  }
  const Graph& p = info.pattern.graph();
  const Graph& r = info.replacement.graph();
  if (p.output() == nullptr || r.output() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern '", info.name,
                     "': the pattern and the replacement each need "
                     "a graph with an output"));
  }
  if (p.placeholders().size() != r.placeholders().size() ||
      NumOutputs(p) != NumOutputs(r)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern '", info.name, "': the replacement takes ",
                     r.placeholders().size(), " inputs and returns ",
                     NumOutputs(r), " values, but the pattern takes ",
                     p.placeholders().size(), " and returns ", NumOutputs(p)));
  }
  return absl::OkStatus();
}

PatternRegistry& PatternRegistry::Global() {
  static PatternRegistry* registry = new PatternRegistry();
  return *registry;
}

absl::Status PatternRegistry::Register(PatternInfo info) {
  RETURN_IF_ERROR(CheckPatternInfo(info));
  std::lock_guard<std::mutex> lock(mu_);
  if (patterns_.contains(info.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("pattern '", info.name, "' is already registered"));
  }
  std::string name = info.name;
  patterns_.emplace(std::move(name),
                    std::make_unique<PatternInfo>(std::move(info)));
  return absl::OkStatus();
}

const PatternInfo* PatternRegistry::Find(absl::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = patterns_.find(name);
  return it == patterns_.end() ? nullptr : it->second.get();
}

std::vector<const PatternInfo*> PatternRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const PatternInfo*> out;
  out.reserve(patterns_.size());
  for (const auto& [name, info] : patterns_) out.push_back(info.get());
  return out;
}

}  // namespace graft::passes
