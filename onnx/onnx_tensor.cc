#include "onnx/onnx_tensor.h"

#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graft::onnx_import {
namespace {

using TP = onnx::TensorProto;

// A tensor bigger than this many dims is not a real model.
constexpr int kMaxRank = 64;

absl::Status Error(absl::string_view what, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", message));
}

// The field the typed form of `dtype` lives in, for messages.
const char* TypedField(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float_data";
    case DType::kF64:
      return "double_data";
    case DType::kI64:
      return "int64_data";
    default:
      return "int32_data";
  }
}

// Stores `count` values (already checked to be there) through `store`.
template <typename Src, typename Fn>
void CopyTyped(const Src& values, int64_t count, Fn store) {
  for (int64_t i = 0; i < count; ++i) store(i, values[static_cast<int>(i)]);
}

absl::StatusOr<Tensor> DecodeTyped(const TP& p, DType dtype,
                                   const std::vector<int64_t>& dims,
                                   int64_t count, absl::string_view what) {
  int64_t given = 0;
  switch (dtype) {
    case DType::kF32:
      given = p.float_data_size();
      break;
    case DType::kF64:
      given = p.double_data_size();
      break;
    case DType::kI64:
      given = p.int64_data_size();
      break;
    default:
      given = p.int32_data_size();
      break;
  }
  if (given == 0 && count > 0) {
    return Error(
        what,
        absl::StrCat("has no data (no raw_data, no ", TypedField(dtype),
                     " and no external data) for its ", count, " elements"));
  }
  // Checked before allocating: `given` values exist in memory already.
  if (given != count) {
    return Error(what,
                 absl::StrCat("has ", given, " values in ", TypedField(dtype),
                              " but its shape [", absl::StrJoin(dims, ","),
                              "] needs ", count));
  }
  Tensor t(dtype, dims);
  switch (dtype) {
    case DType::kF32:
      CopyTyped(p.float_data(), count,
                [&](int64_t i, float v) { t.data<float>()[i] = v; });
      break;
    case DType::kF64:
      CopyTyped(p.double_data(), count,
                [&](int64_t i, double v) { t.data<double>()[i] = v; });
      break;
    case DType::kI64:
      CopyTyped(p.int64_data(), count,
                [&](int64_t i, int64_t v) { t.data<int64_t>()[i] = v; });
      break;
    case DType::kI32:
      CopyTyped(p.int32_data(), count,
                [&](int64_t i, int32_t v) { t.data<int32_t>()[i] = v; });
      break;
    case DType::kI8:
      CopyTyped(p.int32_data(), count, [&](int64_t i, int32_t v) {
        t.data<int8_t>()[i] = static_cast<int8_t>(v);
      });
      break;
    case DType::kU8:
      CopyTyped(p.int32_data(), count, [&](int64_t i, int32_t v) {
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      });
      break;
    case DType::kBool:
      CopyTyped(p.int32_data(), count, [&](int64_t i, int32_t v) {
        t.data<uint8_t>()[i] = v != 0 ? 1 : 0;
      });
      break;
    case DType::kF16:
    case DType::kBF16:
      // The 16 bits of each value, as ONNX stores them in int32_data.
      CopyTyped(p.int32_data(), count, [&](int64_t i, int32_t v) {
        t.data<uint16_t>()[i] = static_cast<uint16_t>(v);
      });
      break;
    case DType::kF8E4M3:  // DTypeFromOnnx never gives it.
      break;
  }
  return t;
}

absl::StatusOr<Tensor> DecodeExternal(const TP& p, DType dtype,
                                      const std::vector<int64_t>& dims,
                                      ExternalDataReader& external,
                                      absl::string_view what) {
  std::optional<std::string> location;
  std::optional<uint64_t> offset, length;
  for (const onnx::StringStringEntryProto& e : p.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t v;
      if (!absl::SimpleAtoi(e.value(), &v)) {
        return Error(what, absl::StrCat("external data ", e.key(), " '",
                                        e.value(), "' is not a number"));
      }
      (e.key() == "offset" ? offset : length) = v;
    }
    // "checksum" and unknown keys carry nothing graft needs.
  }
  if (!location.has_value()) {
    return Error(what, "is stored as external data but names no location");
  }
  absl::StatusOr<Tensor> t =
      external.Read(p.name(), *location, offset, length, dtype, dims);
  if (!t.ok()) return Error(what, t.status().message());
  return t;
}

}  // namespace

std::string OnnxTypeName(int32_t elem_type) {
  if (TP::DataType_IsValid(elem_type)) {
    return TP::DataType_Name(static_cast<TP::DataType>(elem_type));
  }
  return absl::StrCat("data type ", elem_type);
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case TP::FLOAT:
      return DType::kF32;
    case TP::FLOAT16:
      return DType::kF16;
    case TP::BFLOAT16:
      return DType::kBF16;
    case TP::DOUBLE:
      return DType::kF64;
    case TP::INT8:
      return DType::kI8;
    case TP::UINT8:
      return DType::kU8;
    case TP::INT32:
      return DType::kI32;
    case TP::INT64:
      return DType::kI64;
    case TP::BOOL:
      return DType::kBool;
    default:
      break;
  }
  return absl::UnimplementedError(absl::StrCat(
      "element type ", OnnxTypeName(elem_type),
      " is not supported (graft has f32, f16, bf16, f64, i8, u8, i32, i64 "
      "and bool)"));
}

int32_t DTypeToOnnx(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return TP::FLOAT;
    case DType::kF16:
      return TP::FLOAT16;
    case DType::kBF16:
      return TP::BFLOAT16;
    case DType::kF64:
      return TP::DOUBLE;
    case DType::kI8:
      return TP::INT8;
    case DType::kU8:
      return TP::UINT8;
    case DType::kI32:
      return TP::INT32;
    case DType::kI64:
      return TP::INT64;
    case DType::kBool:
      return TP::BOOL;
    case DType::kF8E4M3:  // FLOAT8E4M3FN is newer than the ONNX graft builds with.
      return TP::UNDEFINED;
  }
  return TP::UNDEFINED;
}

absl::StatusOr<Tensor> DecodeTensor(const TP& p, ExternalDataReader& external,
                                    absl::string_view what) {
  absl::StatusOr<DType> dtype = DTypeFromOnnx(p.data_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(what, ": ", dtype.status().message()));
  }
  if (p.has_segment()) {
    return absl::UnimplementedError(
        absl::StrCat(what, ": segmented tensors are not supported"));
  }
  if (p.dims_size() > kMaxRank) {
    return Error(what, absl::StrCat("has ", p.dims_size(), " dims (at most ",
                                    kMaxRank, " are supported)"));
  }
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  int64_t count = 1;
  int64_t bytes = DTypeSize(*dtype);
  for (int64_t d : dims) {
    if (d < 0) {
      return Error(what, absl::StrCat("has a negative dim in [",
                                      absl::StrJoin(dims, ","), "]"));
    }
    if (__builtin_mul_overflow(count, d, &count) ||
        __builtin_mul_overflow(bytes, d, &bytes)) {
      return Error(what, absl::StrCat("shape [", absl::StrJoin(dims, ","),
                                      "] is too large"));
    }
  }
  if (p.data_location() == TP::EXTERNAL) {
    return DecodeExternal(p, *dtype, dims, external, what);
  }
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (static_cast<int64_t>(raw.size()) != bytes) {
      return Error(what,
                   absl::StrCat("raw_data has ", raw.size(),
                                " bytes but its type ", DTypeName(*dtype), "[",
                                absl::StrJoin(dims, ","), "] needs ", bytes));
    }
    Tensor t(*dtype, dims);
    if (bytes > 0) std::memcpy(t.raw_data(), raw.data(), bytes);
    if (*dtype == DType::kBool) {
      for (uint8_t& b : t.span<uint8_t>()) b = b != 0 ? 1 : 0;
    }
    return t;
  }
  return DecodeTyped(p, *dtype, dims, count, what);
}

}  // namespace graft::onnx_import
