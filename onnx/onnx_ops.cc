#include "onnx/onnx_ops.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace graft::onnx_import {
namespace {

// Built once, on first use; read-only afterwards.
const absl::flat_hash_map<std::string, OpConverter>& Table() {
  static const auto* table = [] {
    std::vector<OpConverter> all;
    AddElementwiseConverters(all);
    AddNnConverters(all);
    AddShapeConverters(all);
    AddReduceConverters(all);
    AddConvTransposeConverters(all);
    AddResizeConverters(all);
    AddRearrangeConverters(all);
    AddRecurrentConverters(all);
    AddQuantizeConverters(all);
    auto* map = new absl::flat_hash_map<std::string, OpConverter>();
    for (OpConverter& c : all) {
      std::string name = c.op_type;
      map->emplace(std::move(name), std::move(c));
    }
    return map;
  }();
  return *table;
}

}  // namespace

const OpConverter* FindOpConverter(absl::string_view op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> out;
  for (const auto& [name, c] : Table()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graft::onnx_import
