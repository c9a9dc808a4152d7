#ifndef GRAFT_ONNX_ONNX_TENSOR_H_
#define GRAFT_ONNX_ONNX_TENSOR_H_

// ONNX element types and TensorProto contents as graft dtypes and Tensors:
// raw_data, the typed fields (float_data, int32_data, int64_data,
// double_data, uint64_data) and external data. Every count is checked
// against the shape before anything is allocated.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/tensor.h"
#include "onnx/onnx_external_data.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// "FLOAT", "INT16", ... or "data type 99" for values ONNX does not define.
std::string OnnxTypeName(int32_t elem_type);

// The graft dtype of an ONNX element type; an error naming the type for
// those graft lacks (INT16, UINT32, STRING, COMPLEX64, ...).
absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type);

// The ONNX element type of a graft dtype.
int32_t DTypeToOnnx(DType dtype);

// The contents of `proto`. `what` names it in errors ("initializer 'w'").
absl::StatusOr<Tensor> DecodeTensor(const onnx::TensorProto& proto,
                                    ExternalDataReader& external,
                                    absl::string_view what);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_TENSOR_H_
