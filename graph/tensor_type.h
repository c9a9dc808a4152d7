#ifndef GRAFT_GRAPH_TENSOR_TYPE_H_
#define GRAFT_GRAPH_TENSOR_TYPE_H_

#include <string>

#include "graph/dtype.h"
#include "graph/shape.h"

namespace graft {

// The static type of a value: element type and (possibly symbolic) shape.
struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // "f32[2,batch]".
  std::string ToString() const;

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) {
    return !(a == b);
  }
};

}  // namespace graft

#endif  // GRAFT_GRAPH_TENSOR_TYPE_H_
