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

absl::StatusOr<ActivationOverride> ParseActivationOverride(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "override '", text, "' is not GLOB:KEY=VALUE[,KEY=VALUE] (keys dtype, observer)"));
  }
  ActivationOverride o;
  o.glob = std::string(text.substr(0, colon));
  for (absl::string_view item : absl::StrSplit(text.substr(colon + 1), ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    if (kv.first == "dtype" && (kv.second == "int8" || kv.second == "uint8")) {
      o.dtype = kv.second == "int8" ? DType::kI8 : DType::kU8;
    } else if (kv.first == "observer") {
      absl::StatusOr<Calibrator> c = ParseCalibrator(kv.second);
      if (!c.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("override '", text, "': ", c.status().message()));
      }
      o.calibrator = *c;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("override '", text, "': '", item,
                       "' is not dtype=int8|uint8 or observer=minmax|percentile|entropy|mse"));
    }
  }
  return o;
}

const ActivationOverride* QuantConfig::OverrideFor(const std::string& name) const {
  for (const ActivationOverride& o : overrides) {
    if (GlobMatches(o.glob, name)) return &o;
  }
  return nullptr;
}

absl::Status QuantConfig::Validate() const {
  for (const ActivationOverride& o : overrides) {
    if (o.dtype.has_value() && *o.dtype != DType::kI8 && *o.dtype != DType::kU8) {
      return absl::InvalidArgumentError(absl::StrCat(
          "override '", o.glob, "': activations quantize to i8 or u8, not ", DTypeName(*o.dtype)));
    }
  }
  if (activation_dtype != DType::kI8 && activation_dtype != DType::kU8 &&
      activation_dtype != DType::kF8E4M3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activations quantize to i8, u8 or f8e4m3, not ", DTypeName(activation_dtype)));
  }
  if (weight_dtype != DType::kI8 && weight_dtype != DType::kF8E4M3) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights quantize to i8 or f8e4m3, not ", DTypeName(weight_dtype)));
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
