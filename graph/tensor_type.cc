#include "graph/tensor_type.h"

#include "absl/strings/str_cat.h"

namespace graft {

std::string TensorType::ToString() const {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

}  // namespace graft
