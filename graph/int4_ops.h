#ifndef GRAFT_GRAPH_INT4_OPS_H_
#define GRAFT_GRAPH_INT4_OPS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "graph/node.h"

namespace graft {

// 4-bit integers stored two to a byte, as weight-only int4 quantization
// (quantize-weights{bits=4}) keeps its weights:
//
//   graft::unpack_int4(packed: Tensor) -> Tensor
//
// packed u8 [..., n]; the result i8 [..., 2n]: element 2j is byte j's low
// nibble, element 2j + 1 its high nibble, each a two's complement value in
// [-8, 7]. Backends that cannot run it fold it over module tensors at
// compile time (backends/unpack_int4_constants.h).
inline constexpr absl::string_view kUnpackInt4Op = "graft::unpack_int4";

// Whether `node` unpacks a module tensor (its argument a get_attr): the
// form compiled backends fold into an int8 module tensor.
inline bool IsInt4ConstantUnpack(const Node& node) {
  return node.is_call(kUnpackInt4Op) && node.num_args() == 1 && node.arg(0).is_node() &&
         node.arg(0).node()->op() == OpCode::kGetAttr;
}

// The byte holding `low` and `high` (each in [-8, 7]).
inline uint8_t PackInt4Pair(int8_t low, int8_t high) {
  return static_cast<uint8_t>((static_cast<uint8_t>(low) & 0x0f) |
                              ((static_cast<uint8_t>(high) & 0x0f) << 4));
}
// Byte `b`'s low and high nibbles as signed values.
inline int8_t LowInt4(uint8_t b) { return static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4; }
inline int8_t HighInt4(uint8_t b) { return static_cast<int8_t>(b) >> 4; }

// The 2n values of the n bytes at `from`, as unpack_int4 gives them.
inline void UnpackInt4Bytes(const uint8_t* from, int64_t n, int8_t* to) {
  for (int64_t i = 0; i < n; ++i) {
    to[2 * i] = LowInt4(from[i]);
    to[2 * i + 1] = HighInt4(from[i]);
  }
}

}  // namespace graft

#endif  // GRAFT_GRAPH_INT4_OPS_H_
