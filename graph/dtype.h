#ifndef GRAFT_GRAPH_DTYPE_H_
#define GRAFT_GRAPH_DTYPE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace graft {

// Element type of a tensor. The order is part of the .gpb format: append only.
enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kI8 = 4,
  kU8 = 5,
  kI32 = 6,
  kI64 = 7,
  kBool = 8,
  // 8-bit float, e4m3fn as PyTorch's float8_e4m3fn (4 exponent bits, 3
  // mantissa bits, no infinities, NaN 0x7f/0xff, largest 448): a storage
  // type for quantized values. Only views (with f8e4m3 values only) and
  // dequantize read it (InferNodeTypes refuses it elsewhere). Conversions
  // saturate at +-448 (PyTorch's .to() gives NaN from 480).
  kF8E4M3 = 9,
};

inline constexpr int kNumDTypes = 10;

// Short name used by the text format: "f32", "i64", "bool", ...
absl::string_view DTypeName(DType dtype);
std::optional<DType> ParseDType(absl::string_view name);
// Bytes per element.
int64_t DTypeSize(DType dtype);
bool IsFloatingPoint(DType dtype);
bool IsInteger(DType dtype);  // Signed or unsigned integers, not bool.
bool IsFloat8(DType dtype);   // f8e4m3: neither floating point nor integer here.
// The dtype of an arithmetic result between a and b (PyTorch's promotion
// lattice: bool < integers < floating point; wider wins).
DType PromoteTypes(DType a, DType b);

}  // namespace graft

#endif  // GRAFT_GRAPH_DTYPE_H_
