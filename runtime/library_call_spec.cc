// The byte form of LibraryCallSpec, for compiled model files.

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "graph/quant_ops.h"
#include "runtime/library_call.h"
#include "support/status_macros.h"

namespace graft::runtime {
namespace {

constexpr int64_t kMaxDim = kMaxElements;

absl::Status CheckDims(const ByteReader& in, const std::vector<int64_t>& dims, size_t min_rank,
                       size_t max_rank, absl::string_view what) {
  if (dims.size() < min_rank || dims.size() > max_rank) {
    return in.Error(absl::StrCat("the ", what, " have rank ", dims.size()));
  }
  if (CheckedElementCount(dims) < 0) {
    return in.Error(absl::StrCat("the ", what, " have more than 2^40 elements or a bad dim"));
  }
  return absl::OkStatus();
}

absl::Status CheckOperand(const ByteReader& in, int32_t operand, int32_t count, bool optional,
                          absl::string_view what) {
  if ((optional && operand == -1) || (operand >= 0 && operand < count)) return absl::OkStatus();
  return in.Error(absl::StrCat("the ", what, " is operand ", operand, " of ", count));
}

absl::Status Check(const ByteReader& in, const LibraryCallSpec& s) {
  if (s.activation != "" && s.activation != "relu" && s.activation != "gelu" &&
      s.activation != "gelu_tanh") {
    return in.Error(absl::StrCat("unknown activation '", s.activation, "'"));
  }
  if (s.operand_count < 0 || s.operand_count > 64) {
    return in.Error(absl::StrCat("a call of ", s.operand_count, " operands"));
  }
  switch (s.kind) {
    case LibraryCallKind::kEmptyProduct:
      if (s.elements < 0 || s.elements > kMaxDim || s.period < 1 || s.repeat < 1) {
        return in.Error("an empty product's sizes are out of range");
      }
      // bias_buffer counts the result as buffer 0: operand i is buffer 1 + i.
      return CheckOperand(in, s.bias_buffer == -1 ? -1 : s.bias_buffer - 1, s.operand_count,
                          true, "bias buffer");
    case LibraryCallKind::kMatmul:
    case LibraryCallKind::kConv: {
      const size_t rank = s.kind == LibraryCallKind::kConv ? 4 : 2;
      const size_t max_rank = s.kind == LibraryCallKind::kConv ? 5 : 8;
      for (const auto* dims : {&s.src, &s.weights, &s.dst}) {
        RETURN_IF_ERROR(CheckDims(in, *dims, rank, max_rank, "product's dims"));
      }
      if (s.kind == LibraryCallKind::kConv) {
        for (const auto* v : {&s.stride, &s.padding, &s.dilation}) {
          RETURN_IF_ERROR(CheckDims(in, *v, 2, 2, "convolution's window"));
        }
        if (s.groups < 1 || s.groups > kMaxDim) return in.Error("bad convolution groups");
      }
      RETURN_IF_ERROR(CheckOperand(in, s.src_operand, s.operand_count, false, "input"));
      RETURN_IF_ERROR(CheckOperand(in, s.weights_operand, s.operand_count,
                                   s.weights_state >= 0 || s.packed_index >= 0, "weight"));
      return CheckOperand(in, s.bias_operand, s.operand_count, true, "bias");
    }
    case LibraryCallKind::kDynamicQuantizedMatmul:
      for (const auto* dims : {&s.src, &s.weights, &s.dst}) {
        RETURN_IF_ERROR(CheckDims(in, *dims, 2, 2, "int8 product's dims"));
      }
      if (s.src[1] != s.weights[0] || s.src[0] != s.dst[0] || s.weights[1] != s.dst[1] ||
          s.scales.size() != static_cast<size_t>(s.dst[1])) {
        return in.Error("a dynamic int8 product whose dims or scales do not agree");
      }
      // The int32 sums of s8 x s8 terms must not overflow.
      if (s.src[1] > kMaxInt8SumTerms) {
        return in.Error("a dynamic int8 product with too many terms per sum");
      }
      for (float scale : s.scales) {
        if (!(scale > 0) || !std::isfinite(scale)) {
          return in.Error("an int8 product with a scale that is not positive and finite");
        }
      }
      if (s.weights_state < 0 && s.packed_index < 0) {
        return in.Error("an int8 product without constant weights");
      }
      return CheckOperand(in, s.src_operand, s.operand_count, false, "input");
    case LibraryCallKind::kQuantizedMatmul:
    case LibraryCallKind::kQuantizedConv: {
      const bool conv = s.kind == LibraryCallKind::kQuantizedConv;
      for (const auto* dims : {&s.src, &s.weights, &s.dst}) {
        RETURN_IF_ERROR(CheckDims(in, *dims, conv ? 4 : 2, conv ? 4 : 2, "int8 product's dims"));
      }
      if (conv) {
        for (const auto* v : {&s.stride, &s.padding, &s.dilation}) {
          RETURN_IF_ERROR(CheckDims(in, *v, 2, 2, "convolution's window"));
        }
        if (s.groups < 1 || s.groups > kMaxDim) return in.Error("bad convolution groups");
        // Channels: weights [O, C/groups, KH, KW], src [N, C, ..], dst [N, O, ..].
        if (s.weights[0] % s.groups != 0 || s.weights[1] * s.groups != s.src[1] ||
            s.weights[0] != s.dst[1] || s.src[0] != s.dst[0]) {
          return in.Error("an int8 convolution whose channels do not agree");
        }
      }
      for (float scale : s.scales) {
        if (!(scale > 0) || !std::isfinite(scale)) {
          return in.Error("an int8 product with a scale that is not positive and finite");
        }
      }
      if (s.dst_dtype != DType::kF32 && (!(s.dst_scale > 0) || !std::isfinite(s.dst_scale))) {
        return in.Error("an int8 product whose result scale is not positive and finite");
      }
      if (s.scales.size() != static_cast<size_t>(conv ? s.dst[1] : s.dst.back())) {
        return in.Error("an int8 product needs one scale per output channel");
      }
      if ((s.src_dtype != DType::kI8 && s.src_dtype != DType::kU8) ||
          (s.dst_dtype != DType::kF32 && s.dst_dtype != DType::kI8 &&
           s.dst_dtype != DType::kU8)) {
        return in.Error("an int8 product of unsupported types");
      }
      if (s.weights_state < 0 && s.packed_index < 0) {
        return in.Error("an int8 product without constant weights");
      }
      return CheckOperand(in, s.src_operand, s.operand_count, false, "input");
    }
  }
  return in.Error(absl::StrCat("unknown library call kind ", static_cast<int>(s.kind)));
}

}  // namespace

void EncodeLibraryCallSpec(const LibraryCallSpec& s, ByteWriter& out) {
  out.Put(s.kind);
  out.PutString(s.label);
  out.PutString(s.activation);
  out.PutVector(s.src);
  out.PutVector(s.weights);
  out.PutVector(s.dst);
  for (int32_t v : {s.operand_count, s.src_operand, s.weights_operand, s.bias_operand,
                    s.weights_state, s.bias_state, s.src_zero_point, s.dst_zero_point,
                    s.bias_buffer, s.packed_index}) {
    out.Put(v);
  }
  out.Put<uint8_t>(s.weights_transposed);
  out.Put<uint8_t>(s.bf16);
  out.Put<uint8_t>(s.src_channels_last);
  out.Put<uint8_t>(s.dst_channels_last);
  out.Put(s.src_dtype);
  out.Put(s.dst_dtype);
  out.PutVector(s.scales);
  out.Put(s.dst_scale);
  out.PutVector(s.stride);
  out.PutVector(s.padding);
  out.PutVector(s.dilation);
  for (int64_t v : {s.groups, s.elements, s.period, s.repeat}) out.Put(v);
}

absl::StatusOr<LibraryCallSpec> DecodeLibraryCallSpec(ByteReader& in) {
  LibraryCallSpec s;
  ASSIGN_OR_RETURN(s.kind, in.Get<LibraryCallKind>());
  ASSIGN_OR_RETURN(s.label, in.GetString());
  ASSIGN_OR_RETURN(s.activation, in.GetString());
  ASSIGN_OR_RETURN(s.src, in.GetVector<int64_t>());
  ASSIGN_OR_RETURN(s.weights, in.GetVector<int64_t>());
  ASSIGN_OR_RETURN(s.dst, in.GetVector<int64_t>());
  for (int32_t* v : {&s.operand_count, &s.src_operand, &s.weights_operand, &s.bias_operand,
                     &s.weights_state, &s.bias_state, &s.src_zero_point, &s.dst_zero_point,
                     &s.bias_buffer, &s.packed_index}) {
    ASSIGN_OR_RETURN(*v, in.Get<int32_t>());
  }
  for (bool* v : {&s.weights_transposed, &s.bf16, &s.src_channels_last, &s.dst_channels_last}) {
    ASSIGN_OR_RETURN(uint8_t b, in.Get<uint8_t>());
    *v = b != 0;
  }
  ASSIGN_OR_RETURN(s.src_dtype, in.Get<DType>());
  ASSIGN_OR_RETURN(s.dst_dtype, in.Get<DType>());
  ASSIGN_OR_RETURN(s.scales, in.GetVector<float>());
  ASSIGN_OR_RETURN(s.dst_scale, in.Get<float>());
  ASSIGN_OR_RETURN(s.stride, in.GetVector<int64_t>());
  ASSIGN_OR_RETURN(s.padding, in.GetVector<int64_t>());
  ASSIGN_OR_RETURN(s.dilation, in.GetVector<int64_t>());
  for (int64_t* v : {&s.groups, &s.elements, &s.period, &s.repeat}) {
    ASSIGN_OR_RETURN(*v, in.Get<int64_t>());
  }
  RETURN_IF_ERROR(Check(in, s));
  return s;
}

}  // namespace graft::runtime
