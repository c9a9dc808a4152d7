// The CUDA backend against the interpreter, op by op, on fresh random data:
// broadcasting, odd sizes, size-1 dims, rank 0 and empty tensors. Each test
// skips with the reason on a machine without a GPU; the kernel source of
// every module is compiled by NVRTC even there (cuda_codegen_test.cc).

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/strided_view.h"
#include "passes/shape_prop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;
using Dims = std::vector<int64_t>;

TEST(CudaPointwise, FloatOpsBroadcast) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{7}, {7}}, {{3, 1, 5}, {4, 1}}, {{}, {13}}, {{1003}, {1003}},
      {{2, 0, 3}, {3}}, {{4, 1}, {1, 6}}, {{5, 1, 1}, {1, 7, 9}}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(sa), DimsText(sb)));
      ModuleBuilder b(rng);
      Node* a = b.In(dtype, sa, -3, 3);
      Node* c = b.In(dtype, sb, -3, 3);
      Node* p = b.In(dtype, sa, 0.1, 3);
      Node* cond = b.In(DType::kBool, sa);
      std::vector<Node*> out;
      for (const char* op : {"neg", "abs", "relu", "exp", "sin", "cos", "tanh", "sigmoid",
                             "silu", "erf", "gelu", "logical_not", "floor", "ceil",
                             "round", "tan", "asin", "acos", "atan", "sinh", "cosh",
                             "asinh", "acosh", "atanh"}) {
        out.push_back(b.Call(op, {a}));
      }
      for (const char* op : {"log", "sqrt", "rsqrt", "reciprocal"}) {
        out.push_back(b.Call(op, {p}));
      }
      out.push_back(b.Call("gelu", {a}, {{"approximate", "tanh"}}));
      out.push_back(b.Call("clamp", {a}, {{"min", -1.0}, {"max", 0.75}}));
      for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "lt",
                             "ge", "logical_and"}) {
        out.push_back(b.Call(op, {a, c}));
      }
      out.push_back(b.Call("pow", {p, c}));
      out.push_back(b.Call("where", {cond, a, c}));
      out.push_back(b.Call("add", {a, 2.5}));
      out.push_back(b.Call("div", {0.5, p}));
      out.push_back(b.Call("leaky_relu", {a}, {{"negative_slope", 0.2}}));
      b.Out(out);
      ExpectCudaMatchesInterp(b, kPointwiseTol);
    }
  }
}

TEST(CudaPointwise, SpecialValuesIntegersBoolsAndCasts) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(interp_test::T(DType::kF32, {8},
                                {-INFINITY, -100, -0.0, 0.0, 1e-30, 100, INFINITY, NAN}));
  Node* y = b.In(DType::kF32, {8}, -3, 3);
  Node* i = b.In(DType::kI64, {3, 8}, -50, 50);
  Node* j = b.In(DType::kI32, {8}, 1, 9);
  Node* k = b.In(DType::kI8, {8}, -100, 100);
  Node* u = b.In(DType::kU8, {8}, 0, 250);
  Node* f = b.In(DType::kBool, {3, 8});
  std::vector<Node*> out;
  for (const char* op : {"exp", "tanh", "sigmoid", "relu", "abs", "erf"}) {
    out.push_back(b.Call(op, {x}));
  }
  out.push_back(b.Call("maximum", {x, y}));
  out.push_back(b.Call("minimum", {x, y}));
  for (const char* op : {"add", "sub", "mul", "maximum", "eq", "gt"}) {
    out.push_back(b.Call(op, {i, j}));
  }
  out.push_back(b.Call("mul", {k, k}));  // Wraps.
  out.push_back(b.Call("add", {u, u}));
  out.push_back(b.Call("pow", {j, int64_t{3}}));
  out.push_back(b.Call("logical_or", {f, b.Call("gt", {i, int64_t{0}})}));
  out.push_back(b.Call("where", {f, i, int64_t{7}}));
  for (DType to : {DType::kF64, DType::kI32, DType::kI64, DType::kBool, DType::kU8,
                   DType::kF16, DType::kBF16}) {
    out.push_back(b.Call("cast", {y, Argument(to)}));
    out.push_back(b.Call("cast", {i, Argument(to)}));
  }
  b.Out(out);
  ExpectCudaMatchesInterp(b, kPointwiseTol);
}

// Saturating casts into bf16 and f16 (finite values past the range become
// its largest), alone and fused with the add that reads them (bf16 scores:
// a fused kernel keeps a cast's f32 value unrounded where the interpreter
// rounds it, docs/backends.md).
TEST(CudaPointwise, SaturatingCastsIntoNarrowFloats) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  const double lowest = std::numeric_limits<float>::lowest();
  Node* f = b.In(interp_test::T(DType::kF32, {10}, {lowest, -lowest, 3.39e38, 1e30, 65519, 65520,
                                                    -INFINITY, INFINITY, NAN, -2.5}));
  Node* scores = b.In(DType::kBF16, {10}, -3, 3);
  std::vector<Node*> out;
  for (DType to : {DType::kBF16, DType::kF16}) {
    for (bool saturate : {true, false}) {
      out.push_back(b.Call("cast", {f, Argument(to)}, {{"saturate", saturate}}));
    }
  }
  out.push_back(b.Call("add", {scores, b.Call("cast", {f, Argument(DType::kBF16)},
                                               {{"saturate", true}})}));
  b.Out(out);
  ExpectCudaMatchesInterp(b, kExact);
}

TEST(CudaPointwise, FusedChains) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {4, 33}, -2, 2);
  Node* y = b.In(DType::kF32, {33}, -2, 2);
  Node* h = b.Call("mul", {x, 2.0});
  h = b.Call("add", {h, y});
  h = b.Call("relu", {h});
  Node* g = b.Call("gelu", {b.Call("sub", {h, 1.0})});
  b.Out({g, b.Call("tanh", {b.Call("add", {g, x})})});
  // The backend fuses the chain into one kernel.
  ExpectCudaMatchesInterp(b, kPointwiseTol);
}

TEST(CudaDataMovement, ViewsConcatPadSplit) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64, DType::kBool, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(dtype, {2, 3, 4, 5}, -50, 50);
    Node* x0 = b.In(dtype, {2, 0, 4, 5}, -50, 50);
    Node* m = b.In(dtype, {7, 6}, -50, 50);
    Node* v = b.In(dtype, {1003}, -50, 50);
    std::vector<Node*> out;
    out.push_back(b.Call("permute", {x, Ints({3, 1, 0, 2})}));
    out.push_back(b.Call("transpose", {x, int64_t{1}, int64_t{-1}}));
    out.push_back(b.Call("reshape", {x, Ints({6, 20})}));
    out.push_back(b.Call("expand", {b.Call("unsqueeze", {m, int64_t{0}}), Ints({3, 7, 6})}));
    out.push_back(b.Call("slice", {v, int64_t{0}, int64_t{3}, int64_t{900}, int64_t{7}}));
    out.push_back(b.Call("slice", {x, int64_t{-1}, int64_t{1}, int64_t{4}}));
    out.push_back(b.Call("concat", {List({x, x0, x})}, {{"dim", int64_t{1}}}));
    out.push_back(b.Call("concat", {List({v, v})}));
    out.push_back(b.Call("pad", {m, Ints({1, 2, 3, 0})}, {{"value", 1.0}}));
    out.push_back(b.Call("pad", {m, Ints({-1, 1})}));
    // Mirrored and repeated edges (reflect pads stay below the dim).
    out.push_back(b.Call("pad", {m, Ints({5, 2, 1, 6})}, {{"mode", "reflect"}}));
    out.push_back(b.Call("pad", {x, Ints({1, 4, 3, 0})}, {{"mode", "reflect"}}));
    out.push_back(b.Call("pad", {m, Ints({7, 1, 0, 9})}, {{"mode", "replicate"}}));
    out.push_back(b.Call("pad", {x, Ints({2, 2, 2, 2, 3, 1})}, {{"mode", "replicate"}}));
    Node* chunks = b.Call("split", {m, int64_t{3}});
    for (int64_t i : {0, 1, 2, -1}) out.push_back(b.Call("getitem", {chunks, i}));
    b.Out(out);
    ExpectCudaMatchesInterp(b, kExact);
  }
}

TEST(CudaDataMovement, ViewsOfViews) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCudaMatchesInterp(ViewsOfViews(rng, dtype), kExact);
  }
}

TEST(CudaReduce, ReductionsSoftmaxNorms) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const Dims& dims : {Dims{3, 5, 7}, Dims{2, 1003, 3}, Dims{2, 0, 4}, Dims{1, 1, 1}}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(dims)));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, dims, -5, 5);
      std::vector<Node*> out;
      const bool empty = Product(dims, 0, dims.size()) == 0;
      // amax and amin have no identity: an empty dim is an error.
      for (const char* op : {"sum", "mean", "amax", "amin"}) {
        if (empty && op[0] == 'a') continue;
        out.push_back(b.Call(op, {x}));
        out.push_back(b.Call(op, {x}, {{"dim", Ints({1})}, {"keepdim", true}}));
        out.push_back(b.Call(op, {x}, {{"dim", Ints({0, 2})}}));
        out.push_back(b.Call(op, {x}, {{"dim", Ints({-1})}}));
      }
      for (int64_t dim : {0, 1, -1}) {
        out.push_back(b.Call("softmax", {x, dim}));
        out.push_back(b.Call("log_softmax", {x, dim}));
      }
      Node* w = b.In(dtype, {dims.back()}, 0.5, 2);
      Node* bias = b.Const(dtype, {dims.back()}, -1, 1);
      out.push_back(b.Call("layer_norm", {x, Ints({dims.back()}), w, bias}));
      out.push_back(b.Call("layer_norm", {x, Ints({dims[1], dims[2]})}, {{"eps", 1e-3}}));
      Node* mean = b.In(dtype, {dims[1]}, -1, 1);
      Node* var = b.In(dtype, {dims[1]}, 0.25, 2);
      out.push_back(b.Call("batch_norm", {x, mean, var}));
      b.Out(out);
      ExpectCudaMatchesInterp(b, kReduceTol);
    }
  }
}

TEST(CudaReduce, IntegerReductionsArgmaxPooling) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* i = b.In(DType::kI64, {4, 9}, -100, 100);
  Node* f = b.In(DType::kF32, {2, 3, 9, 11}, -3, 3);
  std::vector<Node*> out;
  out.push_back(b.Call("sum", {i}, {{"dim", Ints({1})}}));
  out.push_back(b.Call("amax", {i}, {{"dim", Ints({0})}}));
  out.push_back(b.Call("argmax", {i}, {{"dim", int64_t{1}}}));
  out.push_back(b.Call("argmax", {f}));
  out.push_back(b.Call("max_pool2d", {f, Ints({3, 3})},
                       {{"stride", Ints({2, 2})}, {"padding", Ints({1, 1})}}));
  out.push_back(b.Call("avg_pool2d", {f, Ints({2, 3})}, {{"padding", Ints({1, 1})}}));
  out.push_back(b.Call("adaptive_avg_pool2d", {f, Ints({4, 3})}));
  b.Out(out);
  ExpectCudaMatchesInterp(b, kReduceTol);
}

TEST(CudaGemm, LinearMatmulLinearActivation) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (const Dims& input : {Dims{5, 8}, Dims{2, 3, 8}, Dims{8}, Dims{7, 1000}, Dims{0, 8}}) {
    SCOPED_TRACE(DimsText(input));
    const int64_t k = input.back(), n = 33;
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, input, -1, 1);
    Node* w = b.In(DType::kF32, {n, k}, -1, 1);
    Node* cw = b.Const(DType::kF32, {n, k}, -1, 1);
    Node* cb = b.Const(DType::kF32, {n}, -1, 1);
    std::vector<Node*> out{b.Call("linear", {x, w}), b.Call("linear", {x, cw, cb}),
                           b.Call("relu", {b.Call("linear", {x, cw, cb})})};
    for (const char* activation : {"relu", "gelu", "gelu_tanh"}) {
      out.push_back(b.Call("graft::linear_activation", {x, cw},
                           {{"bias", cb}, {"activation", activation}}));
    }
    b.Out(out);
    ExpectCudaMatchesInterp(b, kReduceTol);
  }
  for (const auto& [a, c] : std::vector<std::pair<Dims, Dims>>{
           {{5, 7}, {7, 3}}, {{2, 5, 7}, {7, 3}}, {{5, 7}, {2, 7, 3}}, {{2, 5, 7}, {2, 7, 3}},
           {{7}, {7, 3}}, {{2, 5, 7}, {7}}, {{2, 4, 9, 16}, {2, 4, 16, 9}}}) {
    SCOPED_TRACE(absl::StrCat(DimsText(a), " @ ", DimsText(c)));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, a, -1, 1);
    Node* y = b.In(DType::kF32, c, -1, 1);
    b.Out({b.Call("matmul", {x, y})});
    ExpectCudaMatchesInterp(b, kReduceTol);
  }
}

TEST(CudaGemm, Conv2d) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 4, 11, 9}, -1, 1);
  Node* w = b.Const(DType::kF32, {6, 4, 3, 3}, -1, 1);
  Node* g = b.Const(DType::kF32, {4, 2, 3, 1}, -1, 1);
  Node* bias = b.Const(DType::kF32, {6}, -1, 1);
  b.Out({b.Call("conv2d", {x, w, bias}, {{"padding", Ints({1, 1})}}),
         b.Call("conv2d", {x, w}, {{"stride", Ints({2, 1})}, {"dilation", Ints({2, 2})}}),
         b.Call("conv2d", {x, g}, {{"groups", int64_t{2}}})});
  ExpectCudaMatchesInterp(b, kReduceTol);
}

TEST(CudaIndex, GatherEmbeddingCreateAndOutOfRange) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* table = b.Const(DType::kF32, {50, 16}, -1, 1);
  Node* ids = b.In(DType::kI64, {3, 7}, 0, 50);
  Node* x = b.In(DType::kF32, {5, 6}, -1, 1);
  Node* sel = b.In(DType::kI64, {4}, 0, 6);
  b.Out({b.Call("embedding", {ids, table}), b.Call("index_select", {x, int64_t{1}, sel}),
         b.Call("gather", {x, int64_t{0}, b.In(DType::kI64, {5, 6}, 0, 5)}),
         b.Call("arange", {int64_t{0}, int64_t{10}, int64_t{3}}),
         b.Call("full", {Ints({2, 3}), 1.5})});
  ExpectCudaMatchesInterp(b, kExact);
  // An index past the table fails the run and names the node.
  std::vector<Tensor> inputs = b.inputs();
  inputs[0] = inputs[0].Clone();  // The builder's inputs stay good.
  inputs[0].data<int64_t>()[4] = 50;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), {}));
  EXPECT_THAT(exe->Run(inputs), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("out of range")));
  // The executable still runs good inputs afterwards.
  EXPECT_OK(exe->Run(b.inputs()).status());
}

// The benchmark MLP's shape in every precision, within DESIGN's tolerances.
TEST(CudaPrecision, Tf32Bf16F16) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {32, 256}, -1, 1);
  Node* w1 = b.Const(DType::kF32, {512, 256}, -0.06, 0.06);
  Node* b1 = b.Const(DType::kF32, {512}, -0.1, 0.1);
  Node* w2 = b.Const(DType::kF32, {128, 512}, -0.05, 0.05);
  Node* h = b.Call("relu", {b.Call("linear", {x, w1, b1})});
  Node* y = b.Call("layer_norm", {b.Call("linear", {h, w2}), Ints({128})});
  b.Out({y, b.Call("softmax", {y, int64_t{-1}})});
  for (const char* precision : {"tf32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    CompileOptions options;
    options.options["precision"] = precision;
    if (std::string(precision) == "tf32") {
      ExpectCudaMatchesInterp(b, kTf32Tol, options);
      continue;
    }
    // A half-precision model rounds every stored value to 8 (bf16) or 11
    // (f16) significant bits: measured as ||got - want|| / ||want|| per
    // output, as METHOD-style checks of bf16 kernels do.
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), options));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(b.inputs()));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].dtype(), DType::kF32);  // Outputs stay f32.
      ASSERT_EQ(got[i].dims(), want[i].dims());
      const L2Comparison c = CompareL2(got[i], want[i]);
      EXPECT_EQ(c.nonfinite_mismatches, 0) << "output " << i;
      EXPECT_LE(c.diff / c.norm, kHalfTol) << "output " << i;
      EXPECT_GT(c.diff / c.norm, 0) << "output " << i << " is exact: not computed in "
                                           << precision << "?";
    }
  }
}

TEST(CudaExecutable, ConcurrentRunsSymbolicBatchAndOutputsOnDevice) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  Module module;
  Graph& g = module.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {Dim::Symbol("batch"), Dim(64)}});
  module.SetTensor("w", RandomData(DType::kF32, {32, 64}, rng));
  Node* w = g.GetAttr("w");
  g.Output(g.CallFunction("tanh", {g.CallFunction("linear", {x, w})}));
  ASSERT_OK(passes::PropagateShapes(module).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(module, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(module, {}));
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 local(t);
      for (int64_t batch : {1, 7, 32, 7}) {
        Tensor in = RandomData(DType::kF32, {batch, 64}, local);
        absl::StatusOr<std::vector<Tensor>> got = exe->Run({in});
        absl::StatusOr<std::vector<Tensor>> want = reference->Run({in});
        if (!got.ok() || !want.ok()) {
          failures[t] = got.ok() ? want.status().ToString() : got.status().ToString();
          return;
        }
        for (int64_t i = 0; i < (*want)[0].NumElements(); ++i) {
          if (std::fabs((*got)[0].GetAsDouble(i) - (*want)[0].GetAsDouble(i)) > 1e-4) {
            failures[t] = absl::StrCat("batch ", batch, " element ", i, " differs");
            return;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  CompileOptions on_device;
  on_device.keep_outputs_on_device = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> chained, Cuda().Compile(module, on_device));
  Tensor in = RandomData(DType::kF32, {3, 64}, rng);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, chained->Run({in}));
  EXPECT_EQ(out[0].device().kind, DeviceKind::kCuda);
  ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(out[0]));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run({in}));
  ExpectClose(host, want[0], kReduceTol, "outputs kept on the device");
}

// Programs of one or two kernels run without a CUDA graph, reading device
// inputs in place: host and device inputs, outputs on either side, an
// output fed back as the next input, a bad index caught and the program
// still good after it.
TEST(CudaExecutable, SmallProgramsRunWithoutAGraph) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {1024}, -2, 2);
  b.Out({b.Call("relu", {x})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  CompileOptions on_device;
  on_device.keep_outputs_on_device = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> host_out, Cuda().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> device_out,
                       Cuda().Compile(b.module(), on_device));
  for (int run = 0; run < 3; ++run) {
    Tensor in = RandomData(DType::kF32, {1024}, rng, -2, 2);
    ASSERT_OK_AND_ASSIGN(Tensor in_device, CopyToDevice(in, Cuda().allocator(on_device)));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run({in}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, host_out->Run({in}));
    ExpectClose(a[0], want[0], kExact, "host in, host out");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> c, host_out->Run({in_device}));
    ExpectClose(c[0], want[0], kExact, "device in, host out");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> d, device_out->Run({in_device}));
    ASSERT_EQ(d[0].device().kind, DeviceKind::kCuda);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> e, device_out->Run({d[0]}));  // relu(relu(x)).
    ASSERT_OK_AND_ASSIGN(Tensor e_host, CopyToHost(e[0]));
    ExpectClose(e_host, want[0], kExact, "device in, device out, twice");
  }
  ModuleBuilder ib(rng);
  Node* table = ib.In(DType::kF32, {5, 6}, -1, 1);
  Node* ids = ib.In(DType::kI64, {4}, 0, 5);
  ib.Out({ib.Call("index_select", {table, int64_t{0}, ids})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> select, Cuda().Compile(ib.module(), {}));
  std::vector<Tensor> bad = ib.inputs();
  bad[1] = bad[1].Clone();
  bad[1].data<int64_t>()[2] = 5;
  EXPECT_THAT(select->Run(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("out of range")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> select_ref,
                       Interp().Compile(ib.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, select_ref->Run(ib.inputs()));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, select->Run(ib.inputs()));
  ExpectAllClose(got, want, kExact);
}

// A run that keeps its outputs on the device returns once it is queued on
// the device's stream; what reads its outputs next (another executable's
// run, a copy to the host) is ordered after it, and an input's block,
// freed and handed out again while the run is queued, is not overwritten
// before the run has read it.
TEST(CudaExecutable, DeviceRunsReturnOnceQueuedAndStayInOrder) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  // Milliseconds of GPU work: sixteen 2048-wide f32 products. (Its input
  // is the only block of its size the test frees.)
  ModuleBuilder slow_b(rng);
  Node* h = slow_b.In(DType::kF32, {2048, 1024}, -1, 1);
  for (int i = 0; i < 16; ++i) {
    Node* w = slow_b.Const(DType::kF32, {i == 0 ? 1024 : 2048, 2048}, -0.04, 0.04);
    h = slow_b.Call("tanh", {slow_b.Call("matmul", {h, w})});
  }
  slow_b.Out({h});
  // Two small models, the second reading the first's output.
  ModuleBuilder first_b(rng);
  Node* x = first_b.In(DType::kF32, {256, 128}, -2, 2);
  first_b.Out({first_b.Call("softmax", {first_b.Call("mul", {x, 3.0}), int64_t{-1}})});
  ModuleBuilder second_b(rng);
  Node* y = second_b.In(DType::kF32, {256, 128}, 0, 1);
  Node* w = second_b.Const(DType::kF32, {64, 128}, -1, 1);
  second_b.Out({second_b.Call("relu", {second_b.Call("linear", {y, w})})});

  CompileOptions on_device;
  on_device.keep_outputs_on_device = true;
  const std::shared_ptr<DeviceAllocator> gpu = Cuda().allocator(on_device);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> slow, Cuda().Compile(slow_b.module(), on_device));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> slow_waits,
                       Cuda().Compile(slow_b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> first, Cuda().Compile(first_b.module(), on_device));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> second,
                       Cuda().Compile(second_b.module(), on_device));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> first_ref, Interp().Compile(first_b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> second_ref,
                       Interp().Compile(second_b.module(), {}));

  const Tensor big = slow_b.inputs()[0];
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> slow_want, slow_waits->Run({big}));
  ASSERT_OK(slow->Run({big}).status());  // Captures the graph.
  ASSERT_OK(gpu->Synchronize());
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    ASSERT_OK_AND_ASSIGN(Tensor big_on_gpu, CopyToDevice(big, gpu));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> slow_got, slow->Run({big_on_gpu}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> slow_again, slow->Run({big_on_gpu}));
    ASSERT_OK_AND_ASSIGN(const bool idle, cuda::DeviceIdle(0));
    EXPECT_FALSE(idle) << "the runs waited for the GPU";
    // The input's block, freed, is handed out again to the next copy of
    // the same size, which must land after both runs have read it.
    const void* freed = big_on_gpu.raw_data();
    big_on_gpu = Tensor();
    ASSERT_OK_AND_ASSIGN(Tensor other,
                         CopyToDevice(RandomData(DType::kF32, {2048, 1024}, rng, -1, 1), gpu));
    EXPECT_EQ(other.raw_data(), freed);
    // Chained small runs, their inputs dropped as soon as they are queued.
    std::vector<Tensor> xs, want;
    std::vector<Tensor> outs;
    for (int i = 0; i < 4; ++i) {
      xs.push_back(RandomData(DType::kF32, {256, 128}, rng, -2, 2));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> p, first_ref->Run({xs.back()}));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> q, second_ref->Run(p));
      want.push_back(q[0]);
      ASSERT_OK_AND_ASSIGN(Tensor x_on_gpu, CopyToDevice(xs.back(), gpu));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> mid, first->Run({x_on_gpu}));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, second->Run(mid));
      outs.push_back(out[0]);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(outs[i]));
      ExpectClose(host, want[i], kReduceTol, absl::StrCat("chained run ", i));
    }
    for (const std::vector<Tensor>* got : {&slow_got, &slow_again}) {
      ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost((*got)[0]));
      ExpectClose(host, slow_want[0], 1e-5, "the slow model");
    }
  }
}

// A graph run reads a device input that only generated kernels read where
// the caller has it, and writes an output that only generated kernels
// write into the caller's new tensor (each run's pointers set in the
// graph); an input cuBLASLt reads is copied as before. Run after run with
// new tensors, inputs on either side, an output fed back as an input, and
// a misaligned view of a device tensor: every result matches the
// interpreter, and each run's outputs are its own.
TEST(CudaExecutable, GraphRunsBindDeviceInputsAndOutputsInPlace) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {256, 128}, -2, 2);
  Node* m = b.In(DType::kF32, {256, 128}, -2, 2);  // Also cuBLASLt's operand.
  Node* w = b.Const(DType::kF32, {128, 128}, -0.1, 0.1);
  Node* h = b.Call("softmax", {b.Call("add", {b.Call("mul", {x, 2.0}), m}), int64_t{-1}});
  Node* y = b.Call("layer_norm", {b.Call("add", {b.Call("linear", {m, w}), h}), Ints({128})});
  b.Out({b.Call("tanh", {y}), b.Call("relu", {x})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  CompileOptions on_device;
  on_device.keep_outputs_on_device = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), on_device));
  std::vector<Tensor> previous;
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    std::vector<Tensor> in = {RandomData(DType::kF32, {256, 128}, rng, -2, 2),
                              RandomData(DType::kF32, {256, 128}, rng, -2, 2)};
    if (run == 3) in[0] = previous[1];  // relu(x) of the run before, on the device.
    std::vector<Tensor> given = in;
    for (Tensor& t : given) {
      if (run % 2 == 1 && t.on_host()) {
        ASSERT_OK_AND_ASSIGN(t, CopyToDevice(t, Cuda().allocator(on_device)));
      }
    }
    if (run == 2) {
      // A device tensor one element into its storage: not aligned for
      // in-place reads, so copied.
      Tensor wide = RandomData(DType::kF32, {256 * 128 + 1}, rng, -2, 2);
      std::memcpy(wide.data<float>() + 1, in[0].data<float>(), in[0].NumBytes());
      ASSERT_OK_AND_ASSIGN(Tensor on_gpu, CopyToDevice(wide, Cuda().allocator(on_device)));
      given[0] = Tensor(DType::kF32, {256, 128}, on_gpu.storage(), sizeof(float));
    }
    if (!in[0].on_host()) {
      ASSERT_OK_AND_ASSIGN(in[0], CopyToHost(in[0]));
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(in));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(given));
    ASSERT_EQ(got.size(), 2u);
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_EQ(got[j].device().kind, DeviceKind::kCuda);
      for (const Tensor& p : previous) EXPECT_NE(got[j].raw_data(), p.raw_data());
      ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(got[j]));
      ExpectClose(host, want[j], kReduceTol, absl::StrCat("output ", j));
    }
    previous = got;
  }
  // An index program whose ids are bound in place (no copy kernel runs):
  // a bad id fails its run only; the runs after it succeed.
  ModuleBuilder ib(rng);
  Node* table = ib.In(DType::kF32, {50, 64}, -1, 1);
  Node* ids = ib.In(DType::kI64, {256}, 0, 50);
  Node* rows = ib.Call("index_select", {table, int64_t{0}, ids});
  ib.Out({ib.Call("softmax", {ib.Call("mul", {rows, 3.0}), int64_t{-1}})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> select, Cuda().Compile(ib.module(), on_device));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> select_ref, Interp().Compile(ib.module(), {}));
  std::vector<Tensor> good;
  for (const Tensor& t : ib.inputs()) {
    ASSERT_OK_AND_ASSIGN(Tensor d, CopyToDevice(t, Cuda().allocator(on_device)));
    good.push_back(d);
  }
  Tensor bad_ids = ib.inputs()[1].Clone();
  bad_ids.data<int64_t>()[7] = 50;
  ASSERT_OK_AND_ASSIGN(Tensor bad_on_gpu, CopyToDevice(bad_ids, Cuda().allocator(on_device)));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, select_ref->Run(ib.inputs()));
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(absl::StrCat("index run ", run));
    EXPECT_THAT(select->Run({good[0], bad_on_gpu}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, select->Run(good));
    ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(got[0]));
    ExpectClose(host, want[0], kReduceTol, "after a bad id");
  }
}

TEST(CudaBackend, RefusesBadOptionsAndSaysWhatFallsBack) {
  CompileOptions bad;
  bad.options["precision"] = "f8";
  Module module;
  Node* x = module.graph().Placeholder("x", TensorType{DType::kF32, {Dim(4)}});
  Node* q = module.graph().CallFunction("cumsum", {x, int64_t{0}});
  module.graph().Output(q);
  ASSERT_OK(passes::PropagateShapes(module).status());
  EXPECT_THAT(Cuda().CanRun(*q, {}), StatusIs(absl::StatusCode::kUnimplemented,
                                              HasSubstr("cumsum")));
  absl::StatusOr<::graft::cuda::GpuInfo> gpu = ::graft::cuda::ProbeGpu();
  if (!gpu.ok()) {
    // Without a GPU, compiling says so instead of failing obscurely.
    EXPECT_THAT(Cuda().Compile(module, {}).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("GPU")));
    return;
  }
  EXPECT_THAT(Cuda().Compile(module, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("precision")));
  bad.options = {{"gemm", "cublas"}};
  EXPECT_THAT(Cuda().Compile(module, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gemm must be")));
  bad.options = {{"autotuned", "1"}};
  EXPECT_THAT(Cuda().Compile(module, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no option 'autotuned'")));
}

}  // namespace
}  // namespace graft::cuda_test
