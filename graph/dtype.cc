#include "graph/dtype.h"

#include <array>

namespace graft {
namespace {

struct DTypeInfo {
  absl::string_view name;
  int64_t size;
  bool floating;
  bool integer;
  int rank;  // Position in the promotion order.
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"f32", 4, true, false, 8},
    {"f16", 2, true, false, 6},
    {"bf16", 2, true, false, 7},
    {"f64", 8, true, false, 9},
    {"i8", 1, false, true, 1},
    {"u8", 1, false, true, 2},
    {"i32", 4, false, true, 3},
    {"i64", 8, false, true, 4},
    {"bool", 1, false, false, 0},
    {"f8e4m3", 1, false, false, 5},
}};

const DTypeInfo& Info(DType d) { return kInfo[static_cast<int>(d)]; }

}  // namespace

absl::string_view DTypeName(DType dtype) { return Info(dtype).name; }

std::optional<DType> ParseDType(absl::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

int64_t DTypeSize(DType dtype) { return Info(dtype).size; }
bool IsFloatingPoint(DType dtype) { return Info(dtype).floating; }
bool IsInteger(DType dtype) { return Info(dtype).integer; }
bool IsFloat8(DType dtype) { return dtype == DType::kF8E4M3; }

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  // f16 with bf16 has no common 16-bit type: PyTorch promotes to f32.
  if ((a == DType::kF16 && b == DType::kBF16) ||
      (a == DType::kBF16 && b == DType::kF16)) {
    return DType::kF32;
  }
  // i8 with u8 promotes to i16 in PyTorch; i32 is the nearest type we have.
  if ((a == DType::kI8 && b == DType::kU8) ||
      (a == DType::kU8 && b == DType::kI8)) {
    return DType::kI32;
  }
  return Info(a).rank >= Info(b).rank ? a : b;
}

}  // namespace graft
