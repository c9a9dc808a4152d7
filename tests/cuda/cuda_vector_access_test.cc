// Pointwise kernels, views and warp-per-row kernels (softmax, layer_norm)
// move 16 bytes per thread and access where their operands allow it
// (kernel_preamble.h g_ldv/g_stv): the generated PTX has the wide
// accesses, and on a GPU every path (wide, a stride-0 operand loaded once,
// a strided operand an element at a time, an address a view leaves
// unaligned) matches the interpreter.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

using Dims = std::vector<int64_t>;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

// A transformer's streaming steps in bf16: a residual add with a
// broadcast bias, a layer norm of 768, a softmax of 256 and casts.
ModuleBuilder StreamingSteps(std::mt19937_64& rng, DType dtype) {
  ModuleBuilder b(rng);
  Node* x = b.In(dtype, {64, 768}, -2, 2);
  Node* y = b.In(dtype, {64, 768}, -2, 2);
  Node* bias = b.In(dtype, {768}, -1, 1);
  Node* scores = b.In(dtype, {32, 256}, -4, 4);
  Node* h = b.Call("add", {b.Call("add", {x, y}), bias});
  b.Out({b.Call("layer_norm", {h, Ints({768})}),
         b.Call("softmax", {scores, int64_t{-1}}),
         b.Call("cast", {h, Argument(DType::kF32)})});
  return b;
}

TEST(CudaCodegen, StreamingKernelsAccessSixteenBytesAtATime) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b = StreamingSteps(rng, DType::kBF16);
  std::vector<TensorType> types;
  for (const Tensor& t : b.inputs()) types.push_back(t.type());
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(b.module(), types, {}));
  ASSERT_OK_AND_ASSIGN(cuda::KernelSource source,
                       cuda::GenerateKernels(program, {}, 132));
  int wide_loads = 0, wide_stores = 0;
  for (size_t u = 0; u < source.units.size(); ++u) {
    ASSERT_OK_AND_ASSIGN(std::string ptx,
                         cuda::CompileToPtx(source.units[u], "compute_90"));
    // Each kernel's PTX, from its .entry to the next; the copy kernels
    // (graft_copy_in, graft_copy_out) left out.
    for (size_t at = ptx.find(".entry"); at != std::string::npos;) {
      const size_t next = ptx.find(".entry", at + 1);
      const std::string kernel =
          ptx.substr(at, next == std::string::npos ? next : next - at);
      if (kernel.find("graft_copy") == std::string::npos) {
        wide_loads += Count(kernel, "ld.global.ca.v4.u32");
        wide_stores += Count(kernel, "st.global.v4.u32");
      }
      at = next;
    }
  }
  // The add, the layer norm, the softmax and the cast: each loads and
  // stores 16 bytes (8 bf16) at a time; the cast stores 2 x 16 bytes.
  EXPECT_GE(wide_loads, 3);
  EXPECT_GE(wide_stores, 4);
}

TEST(CudaVectorAccess, WideAndNarrowPathsMatchTheInterpreter) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const double tol = dtype == DType::kF32 ? kReduceTol : kHalfTol;
    ModuleBuilder b(rng);
    Node* x = b.In(dtype, {6, 64}, -2, 2);
    Node* column = b.In(dtype, {6, 1}, -2, 2);  // Last stride 0: loaded once.
    Node* wide = b.In(dtype, {6, 65}, -2, 2);
    Node* square = b.In(dtype, {16, 16}, -2, 2);
    std::vector<Node*> out;
    out.push_back(b.Call("mul", {b.Call("add", {x, column}), 0.5}));
    // A slice starting one element in: addresses a 16-byte access cannot
    // take on most rows.
    Node* shifted =
        b.Call("slice", {wide, int64_t{-1}, int64_t{1}, int64_t{65}});
    out.push_back(b.Call("add", {shifted, x}));
    out.push_back(b.Call("neg", {shifted}));
    // Transposed: the last stride is 16, one element at a time.
    out.push_back(b.Call(
        "add",
        {b.Call("transpose", {square, int64_t{0}, int64_t{1}}), square}));
    out.push_back(
        b.Call("concat", {List({x, shifted, x})}, {{"dim", int64_t{-1}}}));
    out.push_back(b.Call("cast", {x, Argument(DType::kF32)}));
    out.push_back(b.Call("gt", {x, column}));
    // Rows whose pieces fill every lane, a few lanes, and rows that do not
    // divide into pieces.
    for (const Dims& dims :
         {Dims{5, 768}, Dims{3, 24}, Dims{2, 1000}, Dims{2, 1003}}) {
      Node* r = b.In(dtype, dims, -4, 4);
      out.push_back(b.Call("layer_norm", {r, Ints({dims.back()})}));
      out.push_back(b.Call("softmax", {r, int64_t{-1}}));
      out.push_back(b.Call("log_softmax", {r, int64_t{-1}}));
    }
    b.Out(out);
    ExpectCudaMatchesInterp(b, tol);
  }
}

}  // namespace
}  // namespace graft::cuda_test
