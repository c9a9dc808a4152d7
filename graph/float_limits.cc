#include "graph/float_limits.h"

#include <limits>

namespace graft {

double LargestFinite(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 65504.0;
    case DType::kBF16: return 3.3895313892515355e38;
    case DType::kF32: return std::numeric_limits<float>::max();
    case DType::kF64: return std::numeric_limits<double>::max();
    default: return 0;
  }
}

}  // namespace graft
