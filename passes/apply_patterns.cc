#include "passes/apply_patterns.h"

#include <exception>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "passes/replace_pattern.h"

namespace graft::passes {
namespace {

std::string KnownPatterns() {
  std::vector<std::string> names;
  for (const PatternInfo* p : PatternRegistry::Global().All()) {
    names.push_back(p->name);
  }
  if (names.empty()) return "none is registered";
  return absl::StrCat("registered: ", absl::StrJoin(names, ", "));
}

std::string Describe(const PatternInfo& p) {
  if (p.origin.empty()) return absl::StrCat("pattern '", p.name, "'");
  return absl::StrCat("pattern '", p.name, "' (from ", p.origin, ")");
}

// ReplacePattern with the exceptions a plugin's match filter may throw
// turned into errors.
absl::StatusOr<std::vector<ReplacedPattern>> GuardedReplace(
    Module& module, const PatternInfo& p, const PassContext& ctx) {
  try {
    return ReplacePattern(module, p.pattern, p.replacement, p.options, &ctx);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("threw an exception: ", e.what()));
  } catch (...) {
    return absl::InternalError(
        "threw an exception that is not a std::exception");
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ApplyPatternsPass>>
ApplyPatternsPass::FromOptions(const PassOptions& options) {
  std::string names = options.GetString("names", "");
  std::vector<const PatternInfo*> patterns;
  if (names.empty()) {
    patterns = PatternRegistry::Global().All();
  } else {
    for (absl::string_view name :
         absl::StrSplit(names, ';', absl::SkipEmpty())) {
      const PatternInfo* p = PatternRegistry::Global().Find(name);
      if (p == nullptr) {
        return absl::NotFoundError(absl::StrCat("unknown pattern '", name,
                                                "' (", KnownPatterns(), ")"));
      }
      patterns.push_back(p);
    }
  }
  return std::make_unique<ApplyPatternsPass>(std::move(patterns));
}

absl::StatusOr<bool> ApplyPatternsPass::Run(Module& module, PassContext& ctx) {
  if (patterns_.empty()) {
    ctx.Note(
        "apply-patterns: no pattern is registered, so nothing was done (load a "
        "plugin that registers patterns with --load-pass-plugin)");
    return false;
  }
  bool changed = false;
  for (const PatternInfo* p : patterns_) {
    absl::StatusOr<std::vector<ReplacedPattern>> replaced =
        GuardedReplace(module, *p, ctx);
    if (!replaced.ok()) {
      return absl::Status(
          replaced.status().code(),
          absl::StrCat(Describe(*p), ": ", replaced.status().message()));
    }
    changed |= !replaced->empty();
  }
  return changed;
}

}  // namespace graft::passes
