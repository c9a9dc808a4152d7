#include "passes/quantize/quant_config.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/op_registry.h"

namespace graft::passes::quantize {

void ReadOpsAndSkip(const PassOptions& options, QuantConfig& config) {
  const std::string ops = options.GetString("ops", "");
  if (!ops.empty()) config.ops = absl::StrSplit(ops, ';', absl::SkipEmpty());
  const std::string skip = options.GetString("skip", "");
  if (!skip.empty()) config.skip = absl::StrSplit(skip, ';', absl::SkipEmpty());
}

bool GlobMatches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

absl::Status QuantConfig::Validate() const {
  if (activation_dtype != DType::kI8 && activation_dtype != DType::kU8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activations quantize to i8 or u8, not ", DTypeName(activation_dtype)));
  }
  for (const std::string& op : ops) {
    if (OpRegistry::Global().Find(op) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no op named '", op, "' to quantize"));
    }
  }
  return absl::OkStatus();
}

bool QuantConfig::Quantizes(const Node& node) const {
  if (node.op() != OpCode::kCallFunction ||
      std::find(ops.begin(), ops.end(), node.target()) == ops.end()) {
    return false;
  }
  for (const std::string& glob : skip) {
    if (GlobMatches(glob, node.name())) return false;
  }
  return predicate == nullptr || predicate(node);
}

}  // namespace graft::passes::quantize
