#ifndef GRAFT_TESTS_ONNX_ONNX_TEST_UTIL_H_
#define GRAFT_TESTS_ONNX_ONNX_TEST_UTIL_H_

// Small ONNX models built in C++ with libonnx's generated classes, for the
// importer's tests. Only with ONNX (GRAFT_HAVE_ONNX).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/interp/interpreter.h"
#include "gmock/gmock.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import_model.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_test {

using TP = onnx::TensorProto;

// Builds a ModelProto: inputs, initializers, nodes with attributes,
// outputs.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("graft-test");
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // A graph input; a dim given as a string is symbolic ("batch") unless it
  // is a number.
  ModelBuilder& Input(const std::string& name, int32_t elem_type,
                      const std::vector<std::string>& dims) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (const std::string& d : dims) {
      onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
      if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0])))) {
        dim->set_dim_value(std::stoll(d));
      } else if (!d.empty()) {
        dim->set_dim_param(d);
      }
    }
    return *this;
  }
  ModelBuilder& Input(const std::string& name, int32_t elem_type,
                      const std::vector<int64_t>& dims) {
    std::vector<std::string> s;
    for (int64_t d : dims) s.push_back(std::to_string(d));
    return Input(name, elem_type, s);
  }
  ModelBuilder& FloatInput(const std::string& name,
                           const std::vector<int64_t>& dims) {
    return Input(name, TP::FLOAT, dims);
  }

  // A graph output; elem_type 0 leaves the type undeclared.
  ModelBuilder& Output(const std::string& name, int32_t elem_type = 0) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    if (elem_type != 0) {
      v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    }
    return *this;
  }

  // Initializers: raw bytes of a graft tensor, or the typed fields.
  TP* RawInitializer(const std::string& name, const Tensor& t) {
    TP* p = model_.mutable_graph()->add_initializer();
    FillRaw(p, name, t);
    return p;
  }
  TP* FloatInitializer(const std::string& name, std::vector<int64_t> dims,
                       const std::vector<float>& values) {
    TP* p = NewTensor(name, TP::FLOAT, dims);
    for (float v : values) p->add_float_data(v);
    return p;
  }
  TP* Int64Initializer(const std::string& name, std::vector<int64_t> dims,
                       const std::vector<int64_t>& values) {
    TP* p = NewTensor(name, TP::INT64, dims);
    for (int64_t v : values) p->add_int64_data(v);
    return p;
  }
  TP* NewTensor(const std::string& name, int32_t elem_type,
                const std::vector<int64_t>& dims) {
    TP* p = model_.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(elem_type);
    for (int64_t d : dims) p->add_dims(d);
    return p;
  }

  onnx::NodeProto* Node(const std::string& op_type,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name.empty()
                    ? op_type + "_" + std::to_string(model_.graph().node_size())
                    : name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    return n;
  }

  // A Constant node holding an i64 vector (or scalar when `scalar`).
  void IntsConstant(const std::string& output, const std::vector<int64_t>& v,
                    bool scalar = false) {
    onnx::NodeProto* n = Node("Constant", {}, {output});
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    TP* t = a->mutable_t();
    t->set_data_type(TP::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  }
  void FloatConstant(const std::string& output,
                     const std::vector<int64_t>& dims,
                     const std::vector<float>& v) {
    onnx::NodeProto* n = Node("Constant", {}, {output});
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    TP* t = a->mutable_t();
    t->set_data_type(TP::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  }

  onnx::ModelProto& model() { return model_; }

  absl::StatusOr<Module> Import(const OnnxImportOptions& options = {}) {
    return ImportOnnxModel(model_, "", "test.onnx", options);
  }

  static void FillRaw(TP* p, const std::string& name, const Tensor& t) {
    p->set_name(name);
    p->set_data_type(ElemType(t.dtype()));
    for (int64_t d : t.dims()) p->add_dims(d);
    p->set_raw_data(
        std::string(static_cast<const char*>(t.raw_data()), t.NumBytes()));
  }

  static int32_t ElemType(DType dtype) {
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
      case DType::kF8E4M3:
        return TP::UNDEFINED;
    }
    return TP::UNDEFINED;
  }

 private:
  onnx::ModelProto model_;
};

// Attributes.
inline void AttrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void AttrFloat(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void AttrString(onnx::NodeProto* n, const std::string& name,
                       const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void AttrInts(onnx::NodeProto* n, const std::string& name,
                     const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void AttrFloats(onnx::NodeProto* n, const std::string& name,
                       const std::vector<float>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// A tensor from values (converted through double).
inline Tensor T(DType dtype, std::vector<int64_t> dims,
                const std::vector<double>& values) {
  Tensor t(dtype, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.NumElements()), values.size());
  for (size_t i = 0;
       i < values.size() && i < static_cast<size_t>(t.NumElements()); ++i) {
    t.SetFromDouble(static_cast<int64_t>(i), values[i]);
  }
  return t;
}
inline Tensor F32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return T(DType::kF32, std::move(dims), v);
}
inline Tensor I64(std::vector<int64_t> dims, const std::vector<double>& v) {
  return T(DType::kI64, std::move(dims), v);
}

// Runs a module on the interpreter.
inline absl::StatusOr<std::vector<Tensor>> RunModule(
    const Module& module, std::vector<Tensor> inputs) {
  interp::Interpreter interpreter(module);
  return interpreter.Run(inputs);
}

// Imports and runs `b` on `inputs`, failing the test on any error.
inline std::vector<Tensor> RunModel(ModelBuilder& b, std::vector<Tensor> inputs) {
  absl::StatusOr<Module> m = b.Import();
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = RunModule(*m, std::move(inputs));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return *out;
}

// Expects `t` to have `dtype`, `dims` and (within `tol`, NaN matching NaN,
// infinities exactly) `values`.
inline void ExpectTensor(const Tensor& t, DType dtype,
                         const std::vector<int64_t>& dims,
                         const std::vector<double>& values, double tol = 1e-6) {
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(DTypeName(t.dtype()), DTypeName(dtype));
  ASSERT_EQ(t.dims(), dims) << t.TypeString();
  ASSERT_EQ(static_cast<size_t>(t.NumElements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = t.GetAsDouble(static_cast<int64_t>(i));
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got;
    } else if (std::isinf(values[i])) {
      EXPECT_EQ(got, values[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, values[i], tol * std::max(1.0, std::fabs(values[i])))
          << "element " << i;
    }
  }
}

// Imports `b` and returns the error message ("" if it imported).
inline std::string ImportError(ModelBuilder& b, const OnnxImportOptions& options = {}) {
  absl::StatusOr<Module> m = b.Import(options);
  return m.ok() ? "" : std::string(m.status().message());
}

// The call_function targets of a module's graph, in order.
inline std::vector<std::string> CallTargets(const Module& m) {
  std::vector<std::string> out;
  for (const graft::Node* n : m.graph().nodes()) {
    if (n->op() == OpCode::kCallFunction) out.push_back(n->target());
  }
  return out;
}

}  // namespace graft::onnx_test

// Unwraps a StatusOr in a test, failing with its message.
#define ONNX_ASSERT_OK_AND_ASSIGN(lhs, expr)                  \
  auto lhs##_or = (expr);                                     \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status().ToString(); \
  auto lhs = *std::move(lhs##_or)

#endif  // GRAFT_TESTS_ONNX_ONNX_TEST_UTIL_H_
