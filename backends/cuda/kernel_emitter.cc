#include "backends/cuda/kernel_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "backends/cuda/attention_source.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/implicit_conv.h"
#include "backends/cuda/implicit_conv_source.h"
#include "backends/cuda/kernel_preamble.h"
#include "backends/cuda/skinny_gemm.h"
#include "backends/cuda/skinny_gemm_source.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "graph/quant_ops.h"
#include "graph/scalar_formula.h"
#include "support/status_macros.h"

namespace graft::cuda {

std::string StorageType(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kF16: return "g_half";
    case DType::kBF16: return "g_bfloat";
    case DType::kF64: return "double";
    case DType::kI8: return "signed char";
    case DType::kU8: return "unsigned char";
    case DType::kI32: return "int";
    case DType::kI64: return "long long";
    case DType::kBool: return "unsigned char";
    case DType::kF8E4M3: return "unsigned char";  // Codes: views move them, (de)quantize converts.
  }
  return "float";
}

namespace {

constexpr int kThreads = 256;


std::string RegisterType(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16: return "float";
    case DType::kBool: return "bool";
    default: return StorageType(t);
  }
}

// What reductions accumulate in: float or double, or 64-bit integers.
DType AccumulatorType(DType t) {
  if (t == DType::kF64) return DType::kF64;
  if (IsFloatingPoint(t)) return DType::kF32;
  return DType::kI64;
}

// A stored element's value (`element` already loaded) as `t`'s register
// value.
std::string FromStorage(DType t, const std::string& element) {
  switch (t) {
    case DType::kF16: return absl::StrCat("g_h2f(", element, ")");
    case DType::kBF16: return absl::StrCat("g_b2f(", element, ")");
    case DType::kBool: return absl::StrCat("(", element, " != 0)");
    default: return element;
  }
}

// `element` ("p1[i]") loaded through g_ld (kernel_preamble.h), as `t`'s
// register value.
std::string LoadExpr(DType t, const std::string& element) {
  return FromStorage(t, absl::StrCat("g_ld(&", element, ")"));
}

std::string StoreValue(DType t, const std::string& value) {
  switch (t) {
    case DType::kF16: return absl::StrCat("g_f2h(", value, ")");
    case DType::kBF16: return absl::StrCat("g_f2b(", value, ")");
    case DType::kBool: return absl::StrCat("(unsigned char)((", value, ") ? 1 : 0)");
    default: return absl::StrCat("(", StorageType(t), ")(", value, ")");
  }
}

// A register value of dtype `from` as dtype `to`.
std::string Convert(const std::string& value, DType from, DType to) {
  if (RegisterType(from) == RegisterType(to)) return value;
  if (to == DType::kBool) return absl::StrCat("((", value, ") != 0)");
  return absl::StrCat("((", RegisterType(to), ")(", value, "))");
}

std::string Literal(DType t, double v) {
  if (std::isnan(v)) {
    return t == DType::kF64 ? "__longlong_as_double(0x7ff8000000000000ULL)"
                            : "__int_as_float(0x7fc00000)";
  }
  if (std::isinf(v)) {
    if (t == DType::kF64) {
      return v > 0 ? "__longlong_as_double(0x7ff0000000000000ULL)"
                   : "__longlong_as_double(0xfff0000000000000ULL)";
    }
    return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  if (!IsFloatingPoint(t)) {
    if (t == DType::kBool) return v != 0 ? "true" : "false";
    std::snprintf(buffer, sizeof(buffer), "%lldLL", static_cast<long long>(v));
    return absl::StrCat("((", RegisterType(t), ")", buffer, ")");
  }
  return absl::StrCat("((", RegisterType(t), ")", buffer, ")");
}

// The identity of a max (lowest) or min (highest) in accumulator type.
std::string Extreme(DType acc, bool highest) {
  if (IsFloatingPoint(acc)) {
    return Literal(acc, highest ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity());
  }
  return highest ? "9223372036854775807LL" : "(-9223372036854775807LL - 1)";
}

bool IsComparison(const ScalarExpr& e) {
  if (e.kind == ScalarExpr::Kind::kUnary) return e.name == "!";
  if (e.kind != ScalarExpr::Kind::kBinary) return false;
  static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"};
  for (const char* op : kOps) {
    if (e.name == op) return true;
  }
  return false;
}

// A formula as a C++ expression computed in `ct`, names taken from `env`.
std::string FormulaExpr(const ScalarExpr& e, DType ct,
                        const absl::flat_hash_map<std::string, std::string>& env) {
  const std::string t = RegisterType(ct);
  auto operand = [&](size_t i) { return FormulaExpr(*e.operands[i], ct, env); };
  switch (e.kind) {
    case ScalarExpr::Kind::kNumber:
      return Literal(ct, e.number);
    case ScalarExpr::Kind::kName: {
      auto it = env.find(e.name);
      return it == env.end() ? Literal(ct, 0) : it->second;
    }
    case ScalarExpr::Kind::kUnary:
      return absl::StrCat("(", e.name, "(", operand(0), "))");
    case ScalarExpr::Kind::kBinary:
      if (IsComparison(e)) {
        return absl::StrCat("((", operand(0), ") ", e.name, " (", operand(1), "))");
      }
      return absl::StrCat("((", t, ")((", operand(0), ") ", e.name, " (", operand(1), ")))");
    case ScalarExpr::Kind::kCall: {
      std::vector<std::string> args;
      for (size_t i = 0; i < e.operands.size(); ++i) {
        args.push_back(absl::StrCat("(", t, ")(", operand(i), ")"));
      }
      return absl::StrCat("g_", e.name, "<", t, ">(", absl::StrJoin(args, ", "), ")");
    }
    case ScalarExpr::Kind::kSelect:
      return absl::StrCat("((", operand(0), ") ? (", t, ")(", operand(1), ") : (", t,
                          ")(", operand(2), "))");
  }
  return Literal(ct, 0);
}

// One operand of a map kernel: where element (c0, c1, ...) of the index
// space is. Without strides the kernel gets the pointer only.
struct Operand {
  DType dtype = DType::kF32;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  bool load = true;
};

// The largest element offset `op` reaches over `dims`.
int64_t MaxOffset(const Operand& op, const std::vector<int64_t>& dims) {
  int64_t m = op.offset;
  for (size_t k = 0; k < op.strides.size() && k < dims.size(); ++k) {
    m += (dims[k] - 1) * std::abs(op.strides[k]);
  }
  return m;
}

// The order a map kernel walks its index space in: the output's memory
// order (dims, slowest first), so that consecutive threads write
// consecutive elements whatever the output's layout (channels-last, NHWC,
// as well as row-major).
std::vector<size_t> MemoryOrder(const Operand& out, const std::vector<int64_t>& dims) {
  std::vector<size_t> order(dims.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  if (out.strides.size() != dims.size()) return order;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::abs(out.strides[a]) > std::abs(out.strides[b]);
  });
  return order;
}

// The strides of a dense value laid out in `order`: the flat index i of a
// map kernel walking that order is the offset of such an operand.
std::vector<int64_t> StridesInOrder(const std::vector<int64_t>& dims,
                                    const std::vector<size_t>& order) {
  std::vector<int64_t> strides(dims.size(), 0);
  int64_t s = 1;
  for (size_t pos = order.size(); pos-- > 0;) {
    strides[order[pos]] = s;
    s *= dims[order[pos]];
  }
  return strides;
}

// Element (c0, c1, ...)'s offset in `op`: the flat index i itself for a
// dense operand laid out as the kernel walks (`walked`, StridesInOrder).
// `suffix` is "LL" for 64-bit index arithmetic, "" for 32-bit.
std::string OffsetExpr(const Operand& op, const std::vector<int64_t>& walked,
                       const std::string& suffix) {
  if (op.offset == 0 && op.strides == walked) return "i";
  std::string e = absl::StrCat(op.offset, suffix);
  for (size_t k = 0; k < op.strides.size(); ++k) {
    if (op.strides[k] != 0) absl::StrAppend(&e, " + c", k, " * ", op.strides[k], suffix);
  }
  return e;
}

class Emitter {
 public:
  Emitter(const StepProgram& program, const CudaOptions& options, int multiprocessors,
          int compute_capability)
      : p_(program),
        options_(options),
        sms_(std::max(multiprocessors, 1)),
        compute_capability_(compute_capability) {}

  absl::StatusOr<KernelSource> Run() {
    out_.launches.resize(p_.steps.size());
    CopyKernels();
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      step_index_ = static_cast<int>(i);
      const Step& step = p_.steps[i];
      absl::Status s = IsGemmStep(step) ? AfterGemm(step) : EmitStep(step);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("%", step.node->name(), " (",
                                                   step.node->target(), "): ", s.message()));
      }
    }
    PackUnits();
    return std::move(out_);
  }

 private:
  absl::Status EmitStep(const Step& step) {
    step_ = &step;
    kernel_count_ = 0;
    if (step.elided) return absl::OkStatus();
    switch (step.kind) {
      case StepKind::kPointwise:
        return step.node->op() == OpCode::kCallModule ? FusedGroup() : Pointwise();
      case StepKind::kView: return View();
      case StepKind::kCopy: return Copy();
      case StepKind::kConcat: return Concat();
      case StepKind::kPad: return Pad();
      case StepKind::kReduce: return Reduce();
      case StepKind::kSoftmax: return Softmax();
      case StepKind::kLayerNorm: return LayerNorm();
      case StepKind::kBatchNorm: return BatchNorm();
      case StepKind::kPool: return Pool();
      case StepKind::kIndex: return Index();
      case StepKind::kArgmax: return Argmax();
      case StepKind::kCreate: return Create();
      case StepKind::kLibrary: return Conv2d();
      case StepKind::kCollective:
        return absl::OkStatus();  // NCCL, from the executable.
      case StepKind::kQuantize: return Quantize();
      case StepKind::kAttention: return Attention();
      case StepKind::kMatmul:  // Every matmul is a cuBLASLt call here.
      case StepKind::kScan:    // cumsum falls back (cuda_program.cc).
        break;
    }
    return absl::UnimplementedError("the cuda backend has no kernel for this step");
  }

  // A product of few rows is graft's own kernel. On cuBLASLt, exact GELU
  // has no epilogue: it runs on the product in place.
  absl::Status AfterGemm(const Step& step) {
    step_ = &step;
    kernel_count_ = 0;
    if (std::optional<ImplicitConv> implicit =
            ImplicitConvFor(step, p_, options_, sms_, compute_capability_)) {
      return Implicit(*implicit);
    }
    if (IsConvGemmStep(step)) RETURN_IF_ERROR(ConvColumns());
    if (std::optional<SkinnyGemm> skinny =
            SkinnyGemmFor(step, options_, sms_, compute_capability_, &p_)) {
      return Skinny(*skinny);
    }
    if (step.casts_input || step.result_dtype) {
      return absl::InternalError("a product that absorbed casts is not one graft's kernel runs");
    }
    if (step.node->is_call(kQuantizedLinearOp)) {
      // Shapes known only now may be ones graft's kernel does not take.
      RETURN_IF_ERROR(CanLowerQuantizedLinear(*step.node));
      return absl::UnimplementedError(
          "int8 products need compute capability 8.0 or more (mma.sync on s8)");
    }
    if (GemmActivation(step) != "gelu") return absl::OkStatus();
    const std::vector<int64_t> dims = DimsOf(node());
    const DType t = out_dtype();
    const std::string at = RegisterType(AccumulatorType(t));
    Map(dims, Contiguous(dims), step.result, {Contiguous(dims)}, {step.result},
        [&](const std::vector<std::string>& v) {
          return absl::StrCat("    r = ", Convert(absl::StrCat("(", at, ")0.5 * (", at, ")", v[0],
                                                            " * ((", at, ")1 + g_erf<", at, ">((",
                                                            at, ")", v[0], " * (", at,
                                                            ")0.70710678118654752))"),
                                                 AccumulatorType(t), t),
                              ";");
        });
    return absl::OkStatus();
  }

  // A convolution's patches (im2col) for the product that follows it
  // (conv_gemm.h), row-major [M, K], from the NHWC input, zero where a tap
  // falls in the padding. K ordered by taps (ConvTapsOuter): each tap's
  // channels are one contiguous run of the input and of the columns,
  // copied in pieces of up to 16 bytes a thread. Else (ci, ky, kx): one
  // element a thread in the columns' order (contiguous writes; each input
  // element is read by up to kh * kw neighbouring threads, from L1 or L2).
  absl::Status ConvColumns() {
    ASSIGN_OR_RETURN(const ConvGemm c, ConvGemmFor(*step_, p_));
    if (!c.needs_columns) return absl::OkStatus();
    const Node* x = node().inputs()[0];
    if (!ChannelsLast(x)) return absl::InternalError("a convolution product over NCHW input");
    const bool taps_outer = c.taps_outer;
    // Elements a thread copies: a piece of a tap's channels.
    const int64_t size = static_cast<int64_t>(DTypeSize(c.gemm.dtype));
    int64_t piece = taps_outer ? 16 / size : 1;
    while (piece > 1 && c.in_channels % piece != 0) piece /= 2;
    const char* type = piece * size == 16  ? "uint4"
                       : piece * size == 8 ? "uint2"
                       : piece * size == 4 ? "unsigned int"
                                           : "unsigned short";
    if (taps_outer && piece == 1 && c.gemm.k * size % 16 == 0) {
      return ConvColumnChunks(c, x, size == 2 ? "unsigned short" : "unsigned int", size);
    }
    const int64_t total = c.gemm.m * c.gemm.k / piece;
    const int64_t input_elements = c.batch * c.height * c.width * c.in_channels;
    const bool narrow = c.gemm.m * c.gemm.k < (int64_t{1} << 31) &&
                        input_elements < (int64_t{1} << 31);
    const std::string idx = narrow ? "int" : "long long", sfx = narrow ? "" : "LL";
    auto lit = [&](int64_t v) { return absl::StrCat(v, sfx); };
    std::string body = absl::StrCat(
        "  for (", idx, " i = (", idx, ")blockIdx.x * blockDim.x + threadIdx.x; i < ", lit(total),
        "; i += (", idx, ")gridDim.x * blockDim.x) {\n", "    ", idx, " rest = i;\n");
    // A padded row (taps_outer): its pieces past the taps are zeros.
    const bool padded = c.gemm.k != c.taps_k;
    if (padded) {
      absl::StrAppend(&body, "    ", idx, " tap = rest % ", lit(c.gemm.k / piece),
                      "; rest /= ", lit(c.gemm.k / piece), ";\n    const bool pad = tap >= ",
                      lit(c.taps_k / piece), ";\n");
    }
    std::vector<std::pair<std::string, int64_t>> digits{
        {"ci", c.in_channels / piece}, {"kx", c.kernel_w}, {"ky", c.kernel_h}};
    if (!taps_outer) digits = {{"kx", c.kernel_w}, {"ky", c.kernel_h}, {"ci", c.in_channels}};
    for (size_t d = 0; d < digits.size(); ++d) {
      const auto& [name, n] = digits[d];
      const std::string from = padded ? "tap" : "rest";
      if (padded && d + 1 == digits.size()) {
        absl::StrAppend(&body, "    const ", idx, " ", name, " = tap;\n");
        continue;
      }
      absl::StrAppend(&body, "    const ", idx, " ", name, " = ", from, " % ", lit(n), "; ", from,
                      " /= ", lit(n), ";\n");
    }
    for (const auto& [name, n] : std::vector<std::pair<std::string, int64_t>>{
             {"ox", c.out_width}, {"oy", c.out_height}}) {
      absl::StrAppend(&body, "    const ", idx, " ", name, " = rest % ", lit(n), "; rest /= ",
                      lit(n), ";\n");
    }
    // The piece's first channel, in units of pieces of the input.
    const std::string at = absl::StrCat("((rest * ", lit(c.height), " + y) * ", lit(c.width),
                                        " + x) * ", lit(c.in_channels / piece), " + ci");
    absl::StrAppend(
        &body, "    const ", idx, " y = oy * ", lit(c.stride_h), " - ", lit(c.pad_h), " + ky * ",
        lit(c.dilation_h), ", x = ox * ", lit(c.stride_w), " - ", lit(c.pad_w), " + kx * ",
        lit(c.dilation_w), ";\n    ", type, " v;\n    memset(&v, 0, sizeof(v));\n",
        "    if (", padded ? "!pad && " : "", "y >= 0 && y < ", lit(c.height), " && x >= 0 && x < ",
        lit(c.width), ") v = __ldca(p1 + ", at, ");\n    columns[i] = v;\n  }\n");
    AddKernel({absl::StrCat("const ", type, "* __restrict__ p1"),
               absl::StrCat(type, "* __restrict__ columns")},
              body, GridFor(total, kThreads), kThreads, {BufferOf(x)});
    out_.launches[step_index_].back().writes_columns = true;
    return absl::OkStatus();
  }

  // The patches of a convolution by taps over channels that no piece
  // wider than an element divides (ResNet's stem over RGB, whose patches
  // one element a thread cost more than its product): one thread 16 bytes
  // of a (padded) patch row, each element's tap and channel found apart,
  // stored at once, so that a warp's stores are one contiguous run.
  absl::Status ConvColumnChunks(const ConvGemm& c, const Node* x, const std::string& bits,
                                int64_t size) {
    const int64_t per = 16 / size;
    const int64_t chunks = c.gemm.k / per;
    const int64_t total = c.gemm.m * chunks;
    const int64_t input_elements = c.batch * c.height * c.width * c.in_channels;
    const bool narrow = c.gemm.m * c.gemm.k < (int64_t{1} << 31) &&
                        input_elements < (int64_t{1} << 31);
    const std::string idx = narrow ? "int" : "long long", sfx = narrow ? "" : "LL";
    auto lit = [&](int64_t v) { return absl::StrCat(v, sfx); };
    const std::string body = absl::StrCat(
        "  for (", idx, " i = (", idx, ")blockIdx.x * blockDim.x + threadIdx.x; i < ", lit(total),
        "; i += (", idx, ")gridDim.x * blockDim.x) {\n    ", idx, " rest = i;\n    const int j = (int)(rest % ",
        lit(chunks), "); rest /= ", lit(chunks), ";\n    const ", idx, " ox = rest % ",
        lit(c.out_width), "; rest /= ", lit(c.out_width), ";\n    const ", idx, " oy = rest % ",
        lit(c.out_height), "; rest /= ", lit(c.out_height), ";\n    __align__(16) ", bits, " o[",
        per, "];\n    #pragma unroll\n    for (int v = 0; v < ", per,
        "; ++v) {\n      const int e = j * ", per, " + v, tap = e / ", c.in_channels,
        ", ci = e % ", c.in_channels, ";\n      const int ky = tap / ", c.kernel_w, ", kx = tap % ",
        c.kernel_w, ";\n      const ", idx, " y = oy * ", lit(c.stride_h), " - ", lit(c.pad_h),
        " + ky * ", lit(c.dilation_h), ", x = ox * ", lit(c.stride_w), " - ", lit(c.pad_w),
        " + kx * ", lit(c.dilation_w), ";\n      o[v] = e < ", c.taps_k, " && y >= 0 && y < ",
        lit(c.height), " && x >= 0 && x < ", lit(c.width), " ? __ldca(p1 + ((rest * ",
        lit(c.height), " + y) * ", lit(c.width), " + x) * ", lit(c.in_channels), " + ci) : (",
        bits, ")0;\n    }\n    *(uint4*)(columns + i * ", lit(per),
        ") = *(const uint4*)o;\n  }\n");
    AddKernel({absl::StrCat("const ", bits, "* __restrict__ p1"),
               absl::StrCat(bits, "* __restrict__ columns")},
              body, GridFor(total, kThreads), kThreads, {BufferOf(x)});
    out_.launches[step_index_].back().writes_columns = true;
    return absl::OkStatus();
  }

  // A convolution by graft's implicit-GEMM kernel: no column kernel, no
  // cuBLASLt call.
  absl::Status Implicit(const ImplicitConv& plan) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    std::vector<BufferRef> buffers{BufferOf(call.TensorNode("input")),
                                   BufferOf(call.TensorNode("weight"))};
    // Pointers the kernel never reads where there is no bias or residual.
    buffers.push_back(plan.conv.gemm.has_bias ? BufferOf(call.TensorNode("bias")) : buffers[1]);
    buffers.push_back(plan.residual ? BufferOf(step_->inputs[step_->residual]) : buffers[0]);
    buffers.push_back(step_->result);
    const std::string name = Define(
        [&](const std::string& n) { return ImplicitConvKernel(n, plan); }, kImplicitConvSource);
    KernelLaunch launch{name, plan.grid, plan.threads(), std::move(buffers), false};
    launch.programmatic = compute_capability_ >= 90;  // griddepcontrol: Hopper on.
    launch.shared_bytes = plan.shared_bytes();
    out_.launches[step_index_].push_back(std::move(launch));
    return absl::OkStatus();
  }

  // The kernels that move inputs in and outputs out (KernelSource).
  absl::Status Skinny(const SkinnyGemm& plan) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    // With the cast before it absorbed, x is what the cast read.
    const Node* input = call.TensorNode("input");
    if (step_->casts_input) input = input->inputs()[0];
    std::vector<BufferRef> buffers{BufferOf(input), BufferOf(call.TensorNode("weight"))};
    // Without a bias the kernel's pointer is never read: pass the weight.
    buffers.push_back(plan.shape.has_bias ? BufferOf(call.TensorNode("bias")) : buffers[1]);
    if (plan.mode == 4) buffers.push_back(BufferOf(call.TensorNode("weight_scales")));
    buffers.push_back(step_->result);
    if (plan.mode == 5) {
      // x as scaled f16 rows first, into the scratch buffer the product reads.
      const std::string rows =
          Define([&](const std::string& n) { return SkinnyHalfInputKernel(n, plan); }, nullptr);
      KernelLaunch scales{rows, plan.shape.m, 128, {buffers[0]}, false};
      scales.split_k_scratch = true;
      scales.programmatic = compute_capability_ >= 90;
      out_.launches[step_index_].push_back(std::move(scales));
    }
    const std::string name =
        Define([&](const std::string& n) { return SkinnyGemmKernel(n, plan); }, kSkinnyGemmSource);
    KernelLaunch launch{name, plan.grid(), 128, std::move(buffers), false};
    launch.split_k_scratch = true;
    launch.programmatic = compute_capability_ >= 90;  // griddepcontrol: Hopper on.
    out_.launches[step_index_].push_back(std::move(launch));
    return absl::OkStatus();
  }

  void CopyKernels() {
    const IoLayout io = LayoutIo(p_);
    auto bytes = [](const TensorType& t) {
      int64_t n = DTypeSize(t.dtype);
      for (Dim d : t.shape) n *= d.value();
      return n;
    };
    int64_t in_max = 0, out_max = 4;
    std::string code = absl::StrCat("struct g_inputs { const char* p[", std::max<size_t>(io.inputs.size(), 1),
                                    "]; };\nstruct g_outputs { char* p[", io.outputs.size() + 1,
                                    "]; };\nextern \"C\" __global__ void __launch_bounds__(256) "
                                    "graft_copy_in(g_inputs in, char* io, int* err) {\n"
                                    "  if (blockIdx.x == 0 && threadIdx.x == 0) *err = 0;\n");
    for (size_t i = 0; i < io.inputs.size(); ++i) {
      const int64_t n = bytes(p_.input_types[i]);
      in_max = std::max(in_max, n);
      absl::StrAppend(&code, "  if (in.p[", i, "] != 0) g_copy_bytes(io + ", io.inputs[i],
                      "ULL, in.p[", i, "], ", n, "ULL);\n");
    }
    absl::StrAppend(&code, "}\nextern \"C\" __global__ void __launch_bounds__(256) "
                           "graft_copy_out(g_outputs out, const char* io, const int* err) {\n"
                           "  if (blockIdx.x == 0 && threadIdx.x == 0) *(int*)out.p[",
                    io.outputs.size(), "] = *err;\n");
    for (size_t j = 0; j < io.outputs.size(); ++j) {
      const int64_t n = bytes(p_.output_types[j]);
      out_max = std::max(out_max, n);
      absl::StrAppend(&code, "  if (out.p[", j, "] != 0) g_copy_bytes(out.p[", j, "], io + ",
                      io.outputs[j], "ULL, ", n, "ULL);\n");
    }
    absl::StrAppend(&code, "}\n");
    copy_kernels_ = std::move(code);
    auto grid = [&](int64_t n) {
      return std::clamp<int64_t>((n / 16 + 255) / 256, 1, static_cast<int64_t>(sms_) * 4);
    };
    out_.copy_in_grid = grid(in_max);
    out_.copy_out_grid = grid(out_max);
  }

  const Node& node() const { return *step_->node; }
  DType out_dtype() const { return node().type()->dtype; }
  int OperandIndex(const Node* n) const {
    for (size_t i = 0; i < step_->inputs.size(); ++i) {
      if (step_->inputs[i] == n) return static_cast<int>(i);
    }
    return -1;
  }
  const BufferRef& BufferOf(const Node* n) const {
    return step_->operands[OperandIndex(n)];
  }
  Operand Dense(DType t) const { return Operand{t, 0, {}, true}; }
  // Whether the step reads `n` channels-last (NHWC: Step::operand_channels_last).
  bool ChannelsLast(const Node* n) const {
    const int i = OperandIndex(n);
    return i >= 0 && static_cast<size_t>(i) < step_->operand_channels_last.size() &&
           step_->operand_channels_last[i] && n->type()->rank() == 4;
  }
  // `n` read over the index space `dims`, in its own layout, with stride 0
  // where it broadcasts (a channels-last 4-D value's dims are the last
  // four of `dims`).
  Operand Broadcast(const Node* n, const std::vector<int64_t>& dims) const {
    return Operand{n->type()->dtype, 0, LayoutBroadcastStrides(DimsOf(*n), dims, ChannelsLast(n)),
                   true};
  }
  Operand Contiguous(const std::vector<int64_t>& dims) const {
    return Operand{out_dtype(), 0, ContiguousStrides(dims), true};
  }
  // The step's result as it is laid out: channels-last where the step
  // writes NHWC (Step::channels_last), else row-major.
  Operand Out(const std::vector<int64_t>& dims) const {
    return Operand{out_dtype(), 0, LayoutStrides(dims, step_->channels_last), true};
  }

  std::string NextName() {
    return absl::StrCat("k", step_index_, "_", kernel_count_++);
  }

  // The name of the kernel `text(name)` defines: an earlier one with the
  // same text (a repeated layer's), or a new one. `library`: the source
  // the kernel instantiates (a product of few rows, skinny_gemm_source.h,
  // or attention, attention_source.h), which gets a unit of its own, since
  // one costs NVRTC as much as dozens of generated kernels; null for a
  // kernel that needs the preamble only.
  std::string Define(const std::function<std::string(const std::string&)>& text,
                     const char* library) {
    static constexpr char kPlaceholder[] = "@kernel@";
    const std::string key = text(kPlaceholder);
    auto [it, added] = defined_.emplace(key, "");
    if (!added) return it->second;
    it->second = NextName();
    kernels_.push_back(
        {absl::StrReplaceAll(key, {{kPlaceholder, it->second}}), it->second, library});
    return it->second;
  }

  // KernelSource::units from the kernels defined: each that instantiates a
  // library alone, the other kernels kKernelsPerUnit to a unit, the copy
  // kernels in the first; then each launch's unit.
  void PackUnits() {
    constexpr int kKernelsPerUnit = 8;
    std::map<std::string, int> unit_of;
    out_.units.push_back(absl::StrCat(kKernelPreamble, copy_kernels_));
    int in_first = 0, open = 0;  // Kernels in the unit generated kernels fill.
    for (const DefinedKernel& k : kernels_) {
      if (k.library != nullptr) {
        unit_of[k.name] = static_cast<int>(out_.units.size());
        out_.units.push_back(absl::StrCat(kKernelPreamble, k.library, k.text));
        continue;
      }
      if (in_first == kKernelsPerUnit) {
        open = static_cast<int>(out_.units.size());
        out_.units.push_back(kKernelPreamble);
        in_first = 0;
      }
      out_.units[open] += k.text;
      unit_of[k.name] = open;
      ++in_first;
    }
    for (auto& launches : out_.launches) {
      for (KernelLaunch& launch : launches) launch.unit = unit_of.at(launch.name);
    }
  }

  int64_t GridFor(int64_t n, int block) const {
    return std::max<int64_t>(1, std::min<int64_t>((n + block - 1) / block,
                                                   static_cast<int64_t>(sms_) * 16));
  }

  // Appends `__global__ void name(params) { body }` and its launch.
  void AddKernel(const std::vector<std::string>& params,
                 const std::string& body, int64_t grid, int block,
                 std::vector<BufferRef> buffers, bool error_flag = false,
                 const char* library = nullptr) {
    std::vector<std::string> all = params;
    if (error_flag) all.push_back("int* __restrict__ err");
    const std::string name = Define(
        [&](const std::string& n) {
          return absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", block, ") ", n,
                              "(", absl::StrJoin(all, ", "), ") {\n  g_pdl_begin();\n", body,
                              "}\n");
        },
        library);
    KernelLaunch launch{name, grid, block, std::move(buffers), error_flag};
    launch.programmatic = compute_capability_ >= 90;  // griddepcontrol: Hopper on.
    out_.launches[step_index_].push_back(std::move(launch));
  }

  // A kernel with one thread per element of `dims` (grid-stride), or per
  // VectorWidth elements of its last dimension: the coordinates are c0,
  // c1, ... and the flat index i; `body` gets each loaded operand (empty
  // for pointer-only operands, named p1, p2, ...) and returns statements
  // that set `r`, the result in the output's register type.
  void Map(const std::vector<int64_t>& dims, const Operand& out, BufferRef out_ref,
           const std::vector<Operand>& ins, const std::vector<BufferRef>& in_refs,
           const std::function<std::string(const std::vector<std::string>&)>& body,
           bool error_flag = false) {
    const int64_t n = Product(dims, 0, dims.size());
    if (n == 0) return;
    std::vector<std::string> params{
        absl::StrCat(StorageType(out.dtype), "* __restrict__ p0")};
    for (size_t i = 0; i < ins.size(); ++i) {
      params.push_back(absl::StrCat("const ", StorageType(ins[i].dtype),
                                    "* __restrict__ p", i + 1));
    }
    // 32-bit index arithmetic (division by constants becomes a multiply)
    // unless an offset needs more.
    constexpr int64_t kNarrow = int64_t{1} << 31;
    bool narrow = n < kNarrow && MaxOffset(out, dims) < kNarrow;
    for (const Operand& op : ins) narrow &= !op.load || MaxOffset(op, dims) < kNarrow;
    const IndexType index{narrow ? "int" : "long long", narrow ? "" : "LL"};
    Walk walk;
    walk.order = MemoryOrder(out, dims);
    walk.strides = StridesInOrder(dims, walk.order);
    const int width = VectorWidth(dims, out, ins, walk);
    const std::string code = width > 1 ? VectorLoop(dims, out, ins, body, index, walk, width)
                                       : ScalarLoop(dims, out, ins, body, index, walk);
    std::vector<BufferRef> buffers{out_ref};
    buffers.insert(buffers.end(), in_refs.begin(), in_refs.end());
    AddKernel(params, code, GridFor(n / width, kThreads), kThreads, std::move(buffers),
              error_flag);
  }

  struct IndexType {
    std::string type;    // "int" or "long long"
    std::string suffix;  // of its literals: "" or "LL"
  };

  // How a map kernel walks its index space: the dims in the output's
  // memory order (MemoryOrder), and the strides that walk gives a dense
  // value (StridesInOrder).
  struct Walk {
    std::vector<size_t> order;
    std::vector<int64_t> strides;
  };

  // Statements that set c0, c1, ...: the coordinates of flat index i,
  // walked in `walk`'s order.
  static std::string Coordinates(const std::vector<int64_t>& dims, const IndexType& index,
                                 const Walk& walk) {
    std::string code = absl::StrCat("    ", index.type, " rest = i;\n");
    for (size_t pos = dims.size(); pos-- > 0;) {
      const size_t k = walk.order[pos];
      if (pos == 0) {
        absl::StrAppend(&code, "    const ", index.type, " c", k, " = rest;\n");
      } else {
        absl::StrAppend(&code, "    const ", index.type, " c", k, " = rest % ", dims[k],
                        index.suffix, "; rest /= ", dims[k], index.suffix, ";\n");
      }
    }
    return absl::StrCat(code, "    (void)rest;\n");
  }

  static std::string ScalarLoop(const std::vector<int64_t>& dims, const Operand& out,
                                const std::vector<Operand>& ins,
                                const std::function<std::string(const std::vector<std::string>&)>& body,
                                const IndexType& index, const Walk& walk) {
    const std::string& idx = index.type;
    std::string code = absl::StrCat(
        "  for (", idx, " i = (", idx, ")blockIdx.x * blockDim.x + threadIdx.x; i < ",
        Product(dims, 0, dims.size()), index.suffix, "; i += (", idx,
        ")gridDim.x * blockDim.x) {\n", Coordinates(dims, index, walk));
    std::vector<std::string> loaded;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!ins[i].load) {
        loaded.push_back("");
        continue;
      }
      absl::StrAppend(&code, "    const ", RegisterType(ins[i].dtype), " x", i, " = ",
                      LoadExpr(ins[i].dtype, absl::StrCat("p", i + 1, "[", OffsetExpr(ins[i], walk.strides, index.suffix), "]")),
                      ";\n");
      loaded.push_back(absl::StrCat("x", i));
    }
    absl::StrAppend(&code, "    ", RegisterType(out.dtype), " r;\n", body(loaded),
                    "\n    p0[", OffsetExpr(out, walk.strides, index.suffix), "] = ", StoreValue(out.dtype, "r"),
                    ";\n  }\n");
    return code;
  }

  // How many consecutive elements of the last dimension walked one thread
  // of Map takes: 16 bytes of the output (at most 8 elements), where every
  // operand is loaded (not read by the body through its pointer) and that
  // dimension divides into such groups; 1 otherwise.
  static int VectorWidth(const std::vector<int64_t>& dims, const Operand& out,
                         const std::vector<Operand>& ins, const Walk& walk) {
    if (dims.empty() || out.strides.size() != dims.size()) return 1;
    for (const Operand& op : ins) {
      if (!op.load || op.strides.size() != dims.size()) return 1;
    }
    int width = std::min<int>(8, static_cast<int>(16 / DTypeSize(out.dtype)));
    while (width > 1 && dims[walk.order.back()] % width != 0) width /= 2;
    return width;
  }

  // Map's loop with `width` elements per thread: an operand whose last
  // stride is 1 (the output's too) is loaded as a vector, one whose last
  // stride is 0 once, any other one element at a time.
  static std::string VectorLoop(const std::vector<int64_t>& dims, const Operand& out,
                                const std::vector<Operand>& ins,
                                const std::function<std::string(const std::vector<std::string>&)>& body,
                                const IndexType& index, const Walk& walk, int width) {
    const std::string& idx = index.type;
    const size_t last = walk.order.back();
    const int64_t groups = Product(dims, 0, dims.size()) / width;
    std::string code = absl::StrCat(
        "  for (", idx, " t = (", idx, ")blockIdx.x * blockDim.x + threadIdx.x; t < ", groups,
        index.suffix, "; t += (", idx, ")gridDim.x * blockDim.x) {\n    const ", idx,
        " i = t * ", width, index.suffix, ";\n", Coordinates(dims, index, walk));
    auto last_stride = [&](const Operand& op) { return op.strides[last]; };
    std::string per_element;  // Statements for element v of the group.
    std::vector<std::string> loaded;
    for (size_t k = 0; k < ins.size(); ++k) {
      const Operand& op = ins[k];
      const std::string x = absl::StrCat("x", k), p = absl::StrCat("p", k + 1);
      const std::string at = absl::StrCat(p, "[", OffsetExpr(op, walk.strides, index.suffix), "]");
      const std::string rt = RegisterType(op.dtype);
      if (last_stride(op) == 1) {
        absl::StrAppend(&code, "    __align__(16) ", StorageType(op.dtype), " a", k, "[", width,
                        "];\n    g_ldv(a", k, ", &", at, ");\n");
        absl::StrAppend(&per_element, "      const ", rt, " ", x, " = ",
                        FromStorage(op.dtype, absl::StrCat("a", k, "[v]")), ";\n");
      } else if (last_stride(op) == 0) {
        absl::StrAppend(&code, "    const ", rt, " ", x, " = ", LoadExpr(op.dtype, at), ";\n");
      } else {
        absl::StrAppend(&per_element, "      const ", rt, " ", x, " = ", LoadExpr(op.dtype, at),
                        ";\n");
      }
      loaded.push_back(x);
    }
    const bool vector_store = last_stride(out) == 1;
    const std::string out_at = absl::StrCat("p0[", OffsetExpr(out, walk.strides, index.suffix), "]");
    if (vector_store) {
      absl::StrAppend(&code, "    __align__(16) ", StorageType(out.dtype), " o[", width, "];\n");
    }
    // Element v's own i and last coordinate, shadowing the group's.
    absl::StrAppend(&code, "    const ", idx, " g_i = i, g_c = c", last, ";\n",
                    "    #pragma unroll\n    for (int v = 0; v < ", width, "; ++v) {\n",
                    "      const ", idx, " i = g_i + v, c", last, " = g_c + v;\n",
                    "      (void)i; (void)c", last, ";\n", per_element, "      ",
                    RegisterType(out.dtype), " r;\n", body(loaded), "\n");
    if (vector_store) {
      absl::StrAppend(&code, "      o[v] = ", StoreValue(out.dtype, "r"), ";\n    }\n",
                      "    g_stv(&", out_at, ", o);\n  }\n");
    } else {
      absl::StrAppend(&code, "      ", out_at, " = ", StoreValue(out.dtype, "r"),
                      ";\n    }\n  }\n");
    }
    return code;
  }

  // The value of a pointwise call as an expression, its operands' register
  // values given by `value_of`, converted to the call's dtype.
  absl::StatusOr<std::string> EvaluateCall(
      const Node& call_node, const std::function<std::string(const Node*)>& value_of) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(call_node));
    std::optional<std::string> text = PointwiseFormulaOf(call_node);
    if (!text.has_value()) {
      return absl::InternalError(absl::StrCat("%", call_node.name(), " has no formula"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<ScalarExpr> formula, ParseScalarFormula(*text));
    const DType compute = PointwiseComputeType(call_node, call);
    absl::flat_hash_map<std::string, std::string> env;
    for (size_t i = 0; i < call.schema().params.size(); ++i) {
      const std::string& name = call.schema().params[i].name;
      const Argument& a = call.GetAt(i);
      if (a.is_node()) {
        env[name] = Convert(value_of(a.node()), a.node()->type()->dtype, compute);
      } else if (a.is_number()) {
        env[name] = Literal(compute, a.number());
      } else if (a.is_bool()) {
        env[name] = Literal(compute, a.bool_value() ? 1 : 0);
      }
    }
    const std::string r = FormulaExpr(*formula, compute, env);
    const DType from = IsComparison(*formula) ? DType::kBool : compute;
    return Convert(r, from, call_node.type()->dtype);
  }

  std::vector<BufferRef> InputRefs() const { return step_->operands; }

  absl::Status Pointwise() {
    const std::vector<int64_t> dims = DimsOf(node());
    std::vector<Operand> ins;
    for (const Node* input : step_->inputs) ins.push_back(Broadcast(input, dims));
    absl::Status status;
    Map(dims, Out(dims), step_->result, ins, InputRefs(),
        [&](const std::vector<std::string>& loaded) -> std::string {
          absl::StatusOr<std::string> r = EvaluateCall(
              node(), [&](const Node* n) { return loaded[OperandIndex(n)]; });
          if (!r.ok()) {
            status = r.status();
            return "r = 0;";
          }
          return absl::StrCat("    r = ", *r, ";");
        });
    return status;
  }

  // The submodule's nodes evaluated one after another per element.
  absl::Status FusedGroup() {
    const Module* group = p_.module->FindSubmodule(node().target());
    if (group == nullptr) return absl::InternalError("missing fused submodule");
    const std::vector<int64_t> dims = DimsOf(node());
    std::vector<Node*> placeholders = group->graph().placeholders();
    std::vector<Operand> ins;
    std::vector<BufferRef> refs;
    for (size_t i = 0; i < placeholders.size(); ++i) {
      const Node* arg = node().arg(i).node();
      ins.push_back(Broadcast(arg, dims));
      refs.push_back(BufferOf(arg));
    }
    absl::Status status;
    Map(dims, Out(dims), step_->result, ins, refs,
        [&](const std::vector<std::string>& loaded) -> std::string {
          absl::flat_hash_map<const Node*, std::string> values;
          for (size_t i = 0; i < placeholders.size(); ++i) values[placeholders[i]] = loaded[i];
          std::string code;
          const Node* result = nullptr;
          int next = 0;
          for (const Node* n : group->graph().nodes()) {
            if (n->op() == OpCode::kOutput) {
              result = n->arg(0).node();
              continue;
            }
            if (n->op() != OpCode::kCallFunction) continue;
            absl::StatusOr<std::string> r =
                EvaluateCall(*n, [&](const Node* x) { return values.at(x); });
            if (!r.ok()) {
              status = r.status();
              return "r = 0;";
            }
            const std::string var = absl::StrCat("v", next++);
            absl::StrAppend(&code, "    const ", RegisterType(n->type()->dtype), " ", var,
                            " = ", *r, ";\n");
            values[n] = var;
          }
          if (result == nullptr) {
            status = absl::InternalError("fused group without output");
            return "r = 0;";
          }
          absl::StrAppend(&code, "    r = ",
                          Convert(values.at(result), result->type()->dtype, out_dtype()), ";");
          return code;
        });
    return status;
  }

  absl::Status View() {
    const std::vector<int64_t> dims = DimsOf(node());
    ASSIGN_OR_RETURN(StridedSource source, step_->view_source.has_value()
                                               ? *step_->view_source
                                               : ViewSource(node()));
    const DType t = step_->inputs[0]->type()->dtype;
    Map(dims, Contiguous(dims), step_->result, {Operand{t, source.offset, source.strides}},
        InputRefs(), [&](const std::vector<std::string>& v) {
          return absl::StrCat("    r = ", Convert(v[0], t, out_dtype()), ";");
        });
    return absl::OkStatus();
  }

  // A value into another buffer, converting between NCHW and NHWC where
  // the two layouts differ.
  absl::Status Copy() {
    const std::vector<int64_t> dims = DimsOf(node());
    const bool from_channels_last =
        !step_->operand_channels_last.empty() && step_->operand_channels_last[0];
    Map(dims, Out(dims), step_->result,
        {Operand{out_dtype(), 0, LayoutStrides(dims, from_channels_last), true}}, InputRefs(),
        [](const std::vector<std::string>& v) { return absl::StrCat("    r = ", v[0], ";"); });
    return absl::OkStatus();
  }

  absl::Status Concat() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const int64_t dim = NormalizeDim(call.Int("dim"), static_cast<int64_t>(dims.size()));
    const std::vector<int64_t> out_strides = ContiguousStrides(dims);
    int64_t at = 0;
    for (const Node* input : call.TensorNodes("tensors")) {
      const std::vector<int64_t> in_dims = DimsOf(*input);
      Operand out{out_dtype(), at * out_strides[dim], out_strides};
      const DType from = input->type()->dtype;
      Map(in_dims, out, step_->result,
          {Operand{from, 0, ContiguousStrides(in_dims)}}, {BufferOf(input)},
          [&](const std::vector<std::string>& v) {
            return absl::StrCat("    r = ", Convert(v[0], from, out_dtype()), ";");
          });
      at += in_dims[dim];
    }
    return absl::OkStatus();
  }

  absl::Status Pad() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const std::vector<int64_t> in_dims = DimsOf(*input);
    const std::vector<int64_t> dims = DimsOf(node());
    const std::vector<int64_t> pads = call.Ints("pad");
    std::vector<int64_t> before(dims.size(), 0);
    for (size_t i = 0; 2 * i < pads.size() && i < dims.size(); ++i) {
      before[dims.size() - 1 - i] = pads[2 * i];
    }
    const std::vector<int64_t> in_strides = ContiguousStrides(in_dims);
    const DType t = out_dtype();
    const std::string fill = Literal(t, call.Float("value"));
    const bool empty_input = Product(in_dims, 0, in_dims.size()) == 0;
    const std::string& mode = call.String("mode");
    Map(dims, Contiguous(dims), step_->result, {Operand{t, 0, {}, false}}, InputRefs(),
        [&](const std::vector<std::string>&) {
          std::string inside = "true", offset = "0LL";
          for (size_t k = 0; k < dims.size(); ++k) {
            std::string i = absl::StrCat("(c", k, " - ", before[k], "LL)");
            if (mode == "constant") {
              absl::StrAppend(&inside, " && ", i, " >= 0 && ", i, " < ", in_dims[k], "LL");
            } else {
              i = absl::StrCat("g_pad_", mode, "(", i, ", ", in_dims[k], "LL)");
            }
            absl::StrAppend(&offset, " + ", i, " * ", in_strides[k], "LL");
          }
          if (empty_input) return absl::StrCat("    r = ", fill, ";");
          return absl::StrCat("    r = (", inside, ") ? ",
                              LoadExpr(t, absl::StrCat("p1[", offset, "]")), " : ", fill, ";");
        });
    return absl::OkStatus();
  }

  // Threads for a block that walks rows of `n` elements.
  static int RowThreads(int64_t n) {
    int t = 32;
    while (t < kThreads && t < n) t *= 2;
    return t;
  }

  absl::Status Reduce() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const ReductionSplit split = SplitReduction(call, DimsOf(*input));
    const std::vector<int64_t>& kept_dims = split.kept_dims;
    const std::vector<int64_t>& kept_strides = split.kept_strides;
    const std::vector<int64_t>& red_dims = split.reduced_dims;
    const std::vector<int64_t>& red_strides = split.reduced_strides;
    const std::string& op = node().target();
    const DType in_type = input->type()->dtype;
    const DType acc = AccumulatorType(out_dtype());
    const std::string at = RegisterType(acc);
    const std::string identity = op == "amax"   ? Extreme(acc, false)
                                 : op == "amin" ? Extreme(acc, true)
                                                : Literal(acc, 0);
    const std::string combine = op == "amax" ? "g_max_op()" : op == "amin" ? "g_min_op()"
                                                                           : "g_sum_op()";
    const int64_t outputs = Product(kept_dims, 0, kept_dims.size());
    const int64_t count = Product(red_dims, 0, red_dims.size());
    if (outputs == 0) return absl::OkStatus();
    // The element offset of output o's reduced element j.
    auto decompose = [](const std::string& var, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& strides, const std::string& into) {
      std::string code = absl::StrCat("      long long ", var, "_rest = ", var, ";\n");
      for (size_t k = dims.size(); k-- > 0;) {
        absl::StrAppend(&code, "      ", into, " += (", var, "_rest % ", dims[k], "LL) * ",
                        strides[k], "LL; ", var, "_rest /= ", dims[k], "LL;\n");
      }
      return code;
    };
    const std::string load = Convert(LoadExpr(in_type, "p1[base + off]"), in_type, acc);
    std::string finish = "acc";
    if (op == "mean") finish = absl::StrCat("acc / ", Literal(acc, static_cast<double>(count)));
    const std::string params0 = absl::StrCat(StorageType(out_dtype()), "* __restrict__ p0");
    const std::string params1 = absl::StrCat("const ", StorageType(in_type), "* __restrict__ p1");
    const std::string store =
        StoreValue(out_dtype(), Convert(finish, acc, out_dtype()));
    if (count <= 32) {
      // Short reductions: one thread per output.
      std::string code = absl::StrCat(
          "  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < ",
          outputs, "LL; o += (long long)gridDim.x * blockDim.x) {\n      long long base = 0;\n",
          decompose("o", kept_dims, kept_strides, "base"), "    ", at, " acc = ", identity,
          ";\n    for (long long j = 0; j < ", count,
          "LL; ++j) {\n      long long off = 0;\n",
          decompose("j", red_dims, red_strides, "off"), "      acc = ", combine, "(acc, ",
          load, ");\n    }\n    p0[o] = ", store, ";\n  }\n");
      AddKernel({params0, params1}, code, GridFor(outputs, kThreads), kThreads,
                {step_->result, step_->operands[0]});
      return absl::OkStatus();
    }
    const int threads = RowThreads(count);
    std::string code = absl::StrCat(
        "  const long long o = blockIdx.x;\n  long long base = 0;\n",
        decompose("o", kept_dims, kept_strides, "base"), "  ", at, " acc = ", identity,
        ";\n  for (long long j = threadIdx.x; j < ", count,
        "LL; j += blockDim.x) {\n      long long off = 0;\n",
        decompose("j", red_dims, red_strides, "off"), "      acc = ", combine, "(acc, ", load,
        ");\n  }\n  acc = g_block_reduce(acc, ", identity, ", ", combine,
        ");\n  if (threadIdx.x == 0) p0[o] = ", store, ";\n");
    AddKernel({params0, params1}, code, outputs, threads,
              {step_->result, step_->operands[0]});
    return absl::OkStatus();
  }

  // Rows of `n` elements `inner` apart, outer * inner of them.
  struct Rows {
    int64_t outer, n, inner;
  };
  static Rows RowsAlong(const std::vector<int64_t>& dims, size_t dim) {
    return {Product(dims, 0, dim), dims[dim], Product(dims, dim + 1, dims.size())};
  }

  absl::Status Softmax() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const std::vector<int64_t> dims = DimsOf(node());
    const Rows rows = dims.empty() ? Rows{1, 1, 1}
                                   : RowsAlong(dims, NormalizeDim(call.Int("dim"),
                                                                  static_cast<int64_t>(dims.size())));
    if (rows.outer * rows.inner == 0 || rows.n == 0) return absl::OkStatus();
    const DType t = out_dtype(), in_type = input->type()->dtype;
    const DType acc = AccumulatorType(t);
    const std::string at = RegisterType(acc);
    const bool log = node().is_call("log_softmax");
    if (rows.inner == 1 && rows.n <= kWarpRowMax) return WarpSoftmax(rows, in_type, log);
    auto x = [&](const std::string& j) {
      return Convert(LoadExpr(in_type, absl::StrCat("p1[start + ", j, " * ", rows.inner, "LL]")),
                     in_type, acc);
    };
    const std::string lowest = Extreme(acc, false);
    std::string code = absl::StrCat(
        "  const long long row = blockIdx.x;\n  const long long start = (row / ", rows.inner,
        "LL) * ", rows.n * rows.inner, "LL + row % ", rows.inner, "LL;\n  ", at, " m = ", lowest,
        ";\n  for (long long j = threadIdx.x; j < ", rows.n,
        "LL; j += blockDim.x) m = g_max(m, ", x("j"), ");\n  m = g_block_reduce(m, ", lowest,
        ", g_max_op());\n  ", at, " s = 0;\n  for (long long j = threadIdx.x; j < ", rows.n,
        "LL; j += blockDim.x) s += g_exp<", at, ">(", x("j"),
        " - m);\n  s = g_block_reduce(s, (", at, ")0, g_sum_op());\n");
    const std::string value =
        log ? absl::StrCat(x("j"), " - m - g_log<", at, ">(s)")
            : absl::StrCat("g_exp<", at, ">(", x("j"), " - m) * inv");
    if (!log) absl::StrAppend(&code, "  const ", at, " inv = (", at, ")1 / s;\n");
    absl::StrAppend(&code, "  for (long long j = threadIdx.x; j < ", rows.n,
                    "LL; j += blockDim.x) p0[start + j * ", rows.inner, "LL] = ",
                    StoreValue(t, Convert(value, acc, t)), ";\n");
    AddKernel({absl::StrCat(StorageType(t), "* __restrict__ p0"),
               absl::StrCat("const ", StorageType(in_type), "* __restrict__ p1")},
              code, rows.outer * rows.inner, RowThreads(rows.n),
              {step_->result, step_->operands[0]});
    return absl::OkStatus();
  }

  absl::Status LayerNorm() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const std::vector<int64_t> dims = DimsOf(node());
    const size_t k = call.Ints("normalized_shape").size();
    const int64_t outer = Product(dims, 0, dims.size() - k);
    const int64_t n = Product(dims, dims.size() - k, dims.size());
    if (outer == 0 || n == 0) return absl::OkStatus();
    const DType t = out_dtype(), in_type = input->type()->dtype;
    const DType acc = AccumulatorType(t);
    const std::string at = RegisterType(acc);
    const Node* weight = call.IsNone("weight") ? nullptr : call.TensorNode("weight");
    const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
    std::vector<std::string> params{
        absl::StrCat(StorageType(t), "* __restrict__ p0"),
        absl::StrCat("const ", StorageType(in_type), "* __restrict__ p1")};
    std::vector<BufferRef> buffers{step_->result, BufferOf(input)};
    // The affine part, element j: read from memory (`affine`), or from the
    // piece the warp kernel loads with the row's (`piece_affine`, after
    // `preload`, WarpRow::Store).
    std::string affine, piece_affine, preload;
    const WarpRow row(n, in_type);
    auto add_param = [&](const Node* n, const std::string& name) {
      const DType pt = n->type()->dtype;
      params.push_back(absl::StrCat("const ", StorageType(pt), "* __restrict__ ", name));
      buffers.push_back(BufferOf(n));
      absl::StrAppend(&preload, "    __align__(16) ", StorageType(pt), " ", name, "_a[",
                      row.width, "];\n    g_ldv(", name, "_a, ", name, " + j0);\n");
      return std::make_pair(Convert(LoadExpr(pt, absl::StrCat(name, "[j]")), pt, acc),
                            Convert(FromStorage(pt, absl::StrCat(name, "_a[e]")), pt, acc));
    };
    for (const auto& [param, name, op] : {std::tuple{weight, "w", " * "}, std::tuple{bias, "b", " + "}}) {
      if (param == nullptr) continue;
      const auto [element, piece] = add_param(param, name);
      absl::StrAppend(&affine, op, element);
      absl::StrAppend(&piece_affine, op, piece);
    }
    if (n <= kWarpRowMax) {
      return WarpLayerNorm(outer, row, in_type, piece_affine, preload, call.Float("eps"),
                           std::move(params), std::move(buffers));
    }
    const std::string x = Convert(LoadExpr(in_type, "p1[start + j]"), in_type, acc);
    std::string code = absl::StrCat(
        "  const long long start = (long long)blockIdx.x * ", n, "LL;\n  ", at,
        " s = 0;\n  for (long long j = threadIdx.x; j < ", n, "LL; j += blockDim.x) s += ", x,
        ";\n  const ", at, " mean = g_block_reduce(s, (", at, ")0, g_sum_op()) / (", at, ")", n,
        ";\n  ", at, " q = 0;\n  for (long long j = threadIdx.x; j < ", n,
        "LL; j += blockDim.x) { const ", at, " d = ", x, " - mean; q += d * d; }\n  const ", at,
        " inv = (", at, ")1 / g_sqrt<", at, ">(g_block_reduce(q, (", at, ")0, g_sum_op()) / (",
        at, ")", n, " + ", Literal(acc, call.Float("eps")), ");\n  for (long long j = threadIdx.x; j < ",
        n, "LL; j += blockDim.x) p0[start + j] = ",
        StoreValue(t, Convert(absl::StrCat("((", x, " - mean) * inv)", affine), acc, t)), ";\n");
    AddKernel(params, code, outer, RowThreads(n), std::move(buffers));
    return absl::OkStatus();
  }

  // Rows of up to kWarpRowMax contiguous elements: one warp per row, the
  // row in registers (ceil(n / 32) per lane), reductions by shuffles only.
  static constexpr int64_t kWarpRowMax = 1024;
  static constexpr int kRowsPerBlock = 8;

  // The start of a warp-per-row kernel: `row`, `lane`, and `start`.
  static std::string WarpRowStart(int64_t rows, int64_t n) {
    return absl::StrCat("  const int lane = threadIdx.x & 31;\n  const long long row = (long long)blockIdx.x * ",
                        kRowsPerBlock, " + (threadIdx.x >> 5);\n  if (row >= ", rows,
                        "LL) return;\n  const long long start = row * ", n, "LL;\n");
  }

  // graft::attention as one kernel (attention_source.h): a block per 64
  // queries of each matrix of the leading dims; q, k and v read through
  // the views the program builder left them in (Step::operand_views), the
  // mask, if any, through its broadcast strides.
  absl::Status Attention() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> qd = DimsOf(*call.TensorNode("query")),
                               kd = DimsOf(*call.TensorNode("key")),
                               vd = DimsOf(*call.TensorNode("value"));
    const size_t r = qd.size();
    const int64_t t_len = qd[r - 2], s_len = kd[r - 2], d = qd[r - 1], dv = vd[r - 1];
    const std::vector<int64_t> lead(qd.begin(), qd.end() - 2);
    const int64_t batch = Product(qd, 0, r - 2);
    if (batch * t_len * dv == 0) return absl::OkStatus();
    const int64_t tiles = (t_len + 63) / 64;
    const DType t = out_dtype();
    std::vector<std::string> params{absl::StrCat(StorageType(t), "* __restrict__ p0")};
    std::vector<BufferRef> buffers{step_->result};
    // Matrix b's start in each operand, and its row stride.
    std::string at = "    long long rest = b;\n";
    for (size_t i = r - 2; i-- > 0;) {
      absl::StrAppend(&at, "    const long long c", i, " = rest % ", lead[i], "LL; rest /= ",
                      lead[i], "LL;\n");
    }
    std::string starts;
    std::vector<int64_t> rows;
    int index = 1;
    for (const char* param : {"query", "key", "value"}) {
      const Node* n = call.TensorNode(param);
      const size_t i = OperandIndex(n);
      params.push_back(absl::StrCat("const ", StorageType(t), "* __restrict__ p", index++));
      buffers.push_back(step_->operands[i]);
      const std::vector<int64_t> dims = DimsOf(*n);
      const std::optional<StridedSource>& view = step_->operand_views[i];
      const std::vector<int64_t> strides = view ? view->strides : ContiguousStrides(dims);
      std::string start = absl::StrCat(view ? view->offset : 0, "LL");
      for (size_t k = 0; k + 2 < r; ++k) absl::StrAppend(&start, " + c", k, " * ", strides[k], "LL");
      absl::StrAppend(&starts, starts.empty() ? "" : ", ", start);
      rows.push_back(strides[r - 2]);
    }
    {
      // The result: dense, or laid out as the permute it was read through
      // (Step::result_view).
      const std::vector<int64_t> strides = step_->result_view
                                               ? step_->result_view->strides
                                               : ContiguousStrides(DimsOf(node()));
      std::string start = "0LL";
      for (size_t k = 0; k + 2 < r; ++k) absl::StrAppend(&start, " + c", k, " * ", strides[k], "LL");
      absl::StrAppend(&starts, ", ", start);
      rows.push_back(strides[r - 2]);
    }
    std::string masked = "[](long long, int, int) { return false; }";
    if (!call.IsNone("mask")) {
      const Node* mask = call.TensorNode("mask");
      std::vector<int64_t> scores(qd.begin(), qd.end() - 1);
      scores.push_back(s_len);
      const std::vector<int64_t> strides = BroadcastStrides(DimsOf(*mask), scores);
      params.push_back("const unsigned char* __restrict__ p4");
      buffers.push_back(step_->operands[OperandIndex(mask)]);
      std::string offset = absl::StrCat("(long long)i * ", strides[r - 2], "LL + (long long)j * ",
                                        strides[r - 1], "LL");
      for (size_t i = 0; i + 2 < r; ++i) absl::StrAppend(&offset, " + c", i, " * ", strides[i], "LL");
      masked = absl::StrCat("[&](long long b, int i, int j) {\n", at, "    return p4[", offset,
                            "] != 0;\n  }");
    }
    const std::string body = absl::StrCat(
        "  g_attention::run<", StorageType(t), ", ", d, ", ", dv, ", ",
        call.Bool("causal") ? "true" : "false", ", ", call.IsNone("mask") ? "false" : "true",
        ">(p0, p1, p2, p3, ", t_len, ", ", s_len, ", ", tiles, ", ",
        FloatLiteral(call.Float("scale")), ", ", FloatLiteral(call.Float("masked_value")),
        ",\n    ", masked, ",\n    [&](long long b) {\n", at, "    return g_attention::bases{",
        starts, "};\n  }, ", rows[0], "LL, ", rows[1], "LL, ", rows[2], "LL, ", rows[3], "LL);\n");
    AddKernel(params, body, batch * tiles, 128, std::move(buffers), false, kAttentionSource);
    return absl::OkStatus();
  }

  // A float literal of `v` (infinities and NaN included).
  static std::string FloatLiteral(double v) { return Literal(DType::kF32, v); }

  // Where a warp-per-row kernel keeps its row: lane `lane` holds v[k] for
  // k < per_lane, element J(k) of the row, taken `width` consecutive
  // elements at a time (16 bytes of the input, when the row divides into
  // such pieces) so that each load and store moves a vector.
  struct WarpRow {
    int64_t n;
    int width;
    int64_t per_lane;

    WarpRow(int64_t row_length, DType in_type) : n(row_length) {
      width = std::min<int>(8, static_cast<int>(16 / DTypeSize(in_type)));
      while (width > 1 && n % width != 0) width /= 2;
      per_lane = (n + 32 * width - 1) / (32 * width) * width;
    }
    std::string J(const std::string& k) const {
      if (width == 1) return absl::StrCat("(lane + 32 * ", k, ")");
      return absl::StrCat("((lane + 32 * (", k, " / ", width, ")) * ", width, " + ", k, " % ",
                          width, ")");
    }
    // Declares `at` v[per_lane] and loads the row into it (`fill` past n).
    std::string Load(DType in_type, DType acc, const std::string& fill) const {
      const std::string at = RegisterType(acc);
      return absl::StrCat(
          "  ", at, " v[", per_lane, "];\n#pragma unroll\n  for (int c = 0; c < ",
          per_lane / width, "; ++c) {\n    const int j0 = (lane + 32 * c) * ", width,
          ";\n    __align__(16) ", StorageType(in_type), " a[", width, "];\n    if (j0 < ", n,
          ") g_ldv(a, p1 + start + j0);\n#pragma unroll\n    for (int e = 0; e < ", width,
          "; ++e) v[c * ", width, " + e] = j0 < ", n, " ? ",
          Convert(FromStorage(in_type, "a[e]"), in_type, acc), " : ", fill, ";\n  }\n");
    }
    // Stores `value` (an expression of k and j, the element's index in the
    // row, and e, its index in the piece at j0) as `t` for every element of
    // the row; `preload`: statements run for each piece first.
    std::string Store(DType t, const std::string& value, const std::string& preload = "") const {
      return absl::StrCat(
          "#pragma unroll\n  for (int c = 0; c < ", per_lane / width,
          "; ++c) {\n    const int j0 = (lane + 32 * c) * ", width, ";\n    if (j0 >= ", n,
          ") continue;\n", preload, "    __align__(16) ", StorageType(t), " o[", width,
          "];\n#pragma unroll\n    for (int e = 0; e < ", width, "; ++e) {\n      const int k = c * ",
          width, " + e, j = j0 + e;\n      (void)j;\n      o[e] = ", StoreValue(t, value),
          ";\n    }\n    g_stv(p0 + start + j0, o);\n  }\n");
    }
  };

  absl::Status WarpSoftmax(const Rows& rows, DType in_type, bool log) {
    const DType t = out_dtype(), acc = AccumulatorType(t);
    const std::string at = RegisterType(acc);
    const WarpRow row(rows.n, in_type);
    const std::string lowest = Extreme(acc, false);
    std::string code = absl::StrCat(
        WarpRowStart(rows.outer, rows.n), row.Load(in_type, acc, lowest), "  ", at, " m = ",
        lowest, ";\n#pragma unroll\n  for (int k = 0; k < ", row.per_lane,
        "; ++k) m = g_max(m, v[k]);\n  m = g_warp_reduce(m, g_max_op());\n  ", at,
        " s = 0;\n#pragma unroll\n  for (int k = 0; k < ", row.per_lane, "; ++k) {\n    if (",
        row.J("k"), " < ", rows.n, ") s += g_exp<", at,
        ">(v[k] - m);\n  }\n  s = g_warp_reduce(s, g_sum_op());\n");
    const std::string value = log ? absl::StrCat("v[k] - m - g_log<", at, ">(s)")
                                  : absl::StrCat("g_exp<", at, ">(v[k] - m) * inv");
    if (!log) absl::StrAppend(&code, "  const ", at, " inv = (", at, ")1 / s;\n");
    absl::StrAppend(&code, row.Store(t, Convert(value, acc, t)));
    AddKernel({absl::StrCat(StorageType(t), "* __restrict__ p0"),
               absl::StrCat("const ", StorageType(in_type), "* __restrict__ p1")},
              code, (rows.outer + kRowsPerBlock - 1) / kRowsPerBlock, 32 * kRowsPerBlock,
              {step_->result, step_->operands[0]});
    return absl::OkStatus();
  }

  absl::Status WarpLayerNorm(int64_t outer, const WarpRow& row, DType in_type,
                             const std::string& affine, const std::string& preload, double eps,
                             std::vector<std::string> params, std::vector<BufferRef> buffers) {
    const DType t = out_dtype(), acc = AccumulatorType(t);
    const std::string at = RegisterType(acc);
    const int64_t n = row.n;
    std::string code = absl::StrCat(
        WarpRowStart(outer, n), row.Load(in_type, acc, absl::StrCat("(", at, ")0")), "  ", at,
        " s = 0;\n#pragma unroll\n  for (int k = 0; k < ", row.per_lane,
        "; ++k) s += v[k];\n  const ", at, " mean = g_warp_reduce(s, g_sum_op()) / (", at, ")",
        n, ";\n  ", at, " q = 0;\n#pragma unroll\n  for (int k = 0; k < ", row.per_lane,
        "; ++k) {\n    if (", row.J("k"), " < ", n, ") { const ", at,
        " d = v[k] - mean; q += d * d; }\n  }\n  const ", at, " inv = (", at, ")1 / g_sqrt<", at,
        ">(g_warp_reduce(q, g_sum_op()) / (", at, ")", n, " + ", Literal(acc, eps), ");\n",
        row.Store(t, Convert(absl::StrCat("((v[k] - mean) * inv)", affine), acc, t), preload));
    AddKernel(params, code, (outer + kRowsPerBlock - 1) / kRowsPerBlock,
              32 * kRowsPerBlock, std::move(buffers));
    return absl::OkStatus();
  }

  absl::Status BatchNorm() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const DType t = out_dtype();
    const DType acc = AccumulatorType(t);
    std::vector<int64_t> channel(dims.size(), 0);
    if (dims.size() > 1) channel[1] = 1;
    const Node* x = call.TensorNode("input");
    std::vector<Operand> ins{Broadcast(x, dims)};
    std::vector<BufferRef> refs{BufferOf(x)};
    const std::vector<std::string> names{"running_mean", "running_var", "weight", "bias"};
    std::vector<bool> present;
    for (const std::string& name : names) {
      present.push_back(!call.IsNone(name));
      if (!present.back()) continue;
      const Node* n = call.TensorNode(name);
      ins.push_back(Operand{n->type()->dtype, 0, channel});
      refs.push_back(BufferOf(n));
    }
    const std::string eps = Literal(acc, call.Float("eps"));
    Map(dims, Out(dims), step_->result, ins, refs,
        [&](const std::vector<std::string>& v) {
          size_t next = 0;
          auto take = [&]() {
            const size_t i = next++;
            return Convert(v[i], ins[i].dtype, acc);
          };
          const std::string y = take(), mean = take(), var = take();
          std::string e = absl::StrCat("((", y, " - ", mean, ") / g_sqrt<", RegisterType(acc),
                                       ">(", var, " + ", eps, "))");
          if (present[2]) e = absl::StrCat("(", e, " * ", take(), ")");
          if (present[3]) e = absl::StrCat("(", e, " + ", take(), ")");
          return absl::StrCat("    r = ", Convert(e, acc, t), ";");
        });
    return absl::OkStatus();
  }

  absl::Status Pool() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const std::vector<int64_t> in_dims = DimsOf(*input);
    const std::vector<int64_t> dims = DimsOf(node());
    const size_t r = in_dims.size();
    const int64_t h = in_dims[r - 2], w = in_dims[r - 1];
    const int64_t oh = dims[r - 2], ow = dims[r - 1];
    const bool adaptive = node().is_call("adaptive_avg_pool2d");
    const bool is_max = node().is_call("max_pool2d");
    auto pair = [&](absl::string_view name, int64_t fallback) {
      std::vector<int64_t> v =
          call.IsNone(name) ? std::vector<int64_t>{} : call.Ints(name);
      if (v.empty()) v = {fallback};
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    std::vector<int64_t> kernel{1, 1}, stride{1, 1}, pad{0, 0}, dil{1, 1};
    bool include_pad = false;
    if (!adaptive) {
      kernel = pair("kernel_size", 1);
      stride = call.IsNone("stride") || call.Ints("stride").empty() ? kernel : pair("stride", 1);
      pad = pair("padding", 0);
      if (is_max) dil = pair("dilation", 1);
      if (!is_max) include_pad = call.Bool("count_include_pad");
    }
    const DType t = out_dtype(), in_type = input->type()->dtype;
    if (is_max && ChannelsLast(input) && t == in_type && IsFloatingPoint(t)) {
      int64_t piece = 16 / static_cast<int64_t>(DTypeSize(t));
      while (piece > 1 && in_dims[1] % piece != 0) piece /= 2;
      if (piece > 1) return MaxPoolPieces(in_dims, dims, kernel, stride, pad, dil, piece);
    }
    const DType acc = AccumulatorType(t);
    const std::string at = RegisterType(acc);
    // Output (..., oy, ox) = coordinates c[r-2], c[r-1]; the plane is the
    // flat index of the leading coordinates.
    std::string plane = "0LL";
    for (size_t k = 0; k + 2 < r; ++k) {
      plane = absl::StrCat("(", plane, ") * ", dims[k], "LL + c", k);
    }
    const std::string oy = absl::StrCat("c", r - 2), ox = absl::StrCat("c", r - 1);
    // Channels-last (NHWC), a pixel's channels are adjacent: the window's
    // taps are channels apart.
    const bool nhwc = ChannelsLast(input);
    const int64_t channels = nhwc ? in_dims[1] : 1;
    const std::string base =
        nhwc ? absl::StrCat("c0 * ", h * w * channels, "LL + c1")
             : absl::StrCat("(", plane, ") * ", h * w, "LL");
    const std::string load = Convert(
        LoadExpr(in_type, absl::StrCat("p1[base + (y * ", w, "LL + x) * ", channels, "LL]")),
        in_type, acc);
    Map(dims, Out(dims), step_->result, {Operand{in_type, 0, {}, false}}, InputRefs(),
        [&](const std::vector<std::string>&) {
          std::string code = absl::StrCat("    const long long base = ", base, ";\n    ", at,
                                          " acc = ",
                                          is_max ? Extreme(acc, false) : Literal(acc, 0), ";\n");
          if (adaptive) {
            absl::StrAppend(
                &code, "    const long long y0 = (", oy, " * ", h, "LL) / ", oh,
                "LL, y1 = ((", oy, " + 1) * ", h, "LL + ", oh - 1, "LL) / ", oh,
                "LL;\n    const long long x0 = (", ox, " * ", w, "LL) / ", ow, "LL, x1 = ((", ox,
                " + 1) * ", w, "LL + ", ow - 1, "LL) / ", ow,
                "LL;\n    for (long long y = y0; y < y1; ++y) for (long long x = x0; x < x1; ++x) "
                "acc += ",
                load, ";\n    r = ", Convert(absl::StrCat("acc / (", at, ")((y1 - y0) * (x1 - x0))"), acc, t),
                ";");
            return code;
          }
          absl::StrAppend(&code, "    const long long sy = ", oy, " * ", stride[0], "LL - ",
                          pad[0], "LL, sx = ", ox, " * ", stride[1], "LL - ", pad[1], "LL;\n");
          if (is_max) {
            absl::StrAppend(&code, "    for (long long ky = 0; ky < ", kernel[0],
                            "LL; ++ky) for (long long kx = 0; kx < ", kernel[1],
                            "LL; ++kx) {\n      const long long y = sy + ky * ", dil[0],
                            "LL, x = sx + kx * ", dil[1], "LL;\n      if (y >= 0 && y < ", h,
                            "LL && x >= 0 && x < ", w, "LL) acc = g_max(acc, ", load,
                            ");\n    }\n    r = ", Convert("acc", acc, t), ";");
            return code;
          }
          absl::StrAppend(
              &code, "    const long long ey = min(sy + ", kernel[0], "LL, ", h + pad[0],
              "LL), ex = min(sx + ", kernel[1], "LL, ", w + pad[1],
              "LL);\n    const long long y0 = max(sy, 0LL), x0 = max(sx, 0LL), y1 = min(ey, ", h,
              "LL), x1 = min(ex, ", w, "LL);\n    for (long long y = y0; y < y1; ++y) for (long long x = x0; x < x1; ++x) acc += ",
              load, ";\n    const long long count = ",
              include_pad ? "(ey - sy) * (ex - sx)" : "(y1 - y0) * (x1 - x0)", ";\n    r = ",
              Convert(absl::StrCat("acc / (", at, ")count"), acc, t), ";");
          return code;
        });
    return absl::OkStatus();
  }

  // Max pooling of channels-last values: one thread a piece of `piece`
  // adjacent channels of an output pixel (up to 16 bytes), each window tap
  // one vector load; the output pixels' pieces are contiguous.
  absl::Status MaxPoolPieces(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& dims,
                             const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& pad, const std::vector<int64_t>& dil,
                             int64_t piece) {
    const DType t = out_dtype();
    const int64_t c = in_dims[1], h = in_dims[2], w = in_dims[3];
    const int64_t total = Product(dims, 0, dims.size()) / piece;
    const bool narrow = Product(in_dims, 0, in_dims.size()) < (int64_t{1} << 31) &&
                        total * piece < (int64_t{1} << 31);
    const std::string idx = narrow ? "int" : "long long", sfx = narrow ? "" : "LL";
    auto lit = [&](int64_t v) { return absl::StrCat(v, sfx); };
    const std::string st = StorageType(t), acc = RegisterType(AccumulatorType(t));
    std::string body = absl::StrCat(
        "  for (", idx, " i = (", idx, ")blockIdx.x * blockDim.x + threadIdx.x; i < ", lit(total),
        "; i += (", idx, ")gridDim.x * blockDim.x) {\n    ", idx, " rest = i;\n    const ", idx,
        " cp = rest % ", lit(c / piece), "; rest /= ", lit(c / piece), ";\n    const ", idx,
        " ox = rest % ", lit(dims[3]), "; rest /= ", lit(dims[3]), ";\n    const ", idx,
        " oy = rest % ", lit(dims[2]), "; rest /= ", lit(dims[2]), ";\n    ", acc, " m[", piece,
        "];\n    #pragma unroll\n    for (int v = 0; v < ", piece, "; ++v) m[v] = ",
        Extreme(AccumulatorType(t), false), ";\n    const ", idx, " sy = oy * ", lit(stride[0]),
        " - ", lit(pad[0]), ", sx = ox * ", lit(stride[1]), " - ", lit(pad[1]),
        ";\n    #pragma unroll\n    for (int ky = 0; ky < ", kernel[0], "; ++ky) {\n      const ",
        idx, " y = sy + ky * ", lit(dil[0]), ";\n      if (y < 0 || y >= ", lit(h),
        ") continue;\n      #pragma unroll\n      for (int kx = 0; kx < ", kernel[1],
        "; ++kx) {\n        const ", idx, " x = sx + kx * ", lit(dil[1]),
        ";\n        if (x < 0 || x >= ", lit(w), ") continue;\n        __align__(16) ", st, " a[",
        piece, "];\n        g_ldv(a, p1 + ((rest * ", lit(h), " + y) * ", lit(w), " + x) * ",
        lit(c), " + cp * ", lit(piece), ");\n        #pragma unroll\n        for (int v = 0; v < ",
        piece, "; ++v) m[v] = g_max(m[v], ", Convert(FromStorage(t, "a[v]"), t, AccumulatorType(t)),
        ");\n      }\n    }\n    __align__(16) ", st, " o[", piece,
        "];\n    #pragma unroll\n    for (int v = 0; v < ", piece, "; ++v) o[v] = ",
        StoreValue(t, Convert("m[v]", AccumulatorType(t), t)), ";\n    g_stv(p0 + i * ",
        lit(piece), ", o);\n  }\n");
    AddKernel({absl::StrCat(st, "* __restrict__ p0"), absl::StrCat("const ", st, "* __restrict__ p1")},
              body, GridFor(total, kThreads), kThreads, {step_->result, step_->operands[0]});
    return absl::OkStatus();
  }

  // A quantize or dequantize parameter: a number (a literal), or a tensor
  // of one value or of one per channel of `axis`, loaded as an operand.
  std::string QuantParam(const OpCall& call, absl::string_view name,
                         const std::vector<int64_t>& dims, std::optional<int64_t> axis,
                         std::vector<Operand>& ins, std::vector<BufferRef>& refs) {
    const Argument& a = call.Get(name);
    if (!a.is_node()) return Literal(DType::kF64, a.number());
    const Node* n = a.node();
    std::vector<int64_t> strides(dims.size(), 0);
    if (axis.has_value() && Product(DimsOf(*n), 0, n->type()->rank()) > 1) strides[*axis] = 1;
    ins.push_back(Operand{n->type()->dtype, 0, strides, true});
    refs.push_back(BufferOf(n));
    return absl::StrCat("(double)@", ins.size() - 1);
  }

  // In double, as the interpreter and orc compute it, so the integers
  // agree exactly: q = clamp(round_half_even(x / scale) + zero_point),
  // NaN -> zero point; x = (q - zero_point) * scale. f8e4m3 (symmetric):
  // q = the code nearest clamp(x / scale, +-448), NaN staying NaN
  // (g_double_to_f8); x = its value times scale.
  absl::Status Quantize() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = call.TensorNode("input");
    const std::vector<int64_t> dims = DimsOf(node());
    std::optional<int64_t> axis;
    if (call.schema().ParamIndex("axis") >= 0 && !call.IsNone("axis")) {
      int64_t a = call.Int("axis");
      if (a < 0) a += static_cast<int64_t>(dims.size());
      axis = a;
    }
    const bool dequantize = node().is_call("dequantize");
    const bool per_channel = node().is_call("quantize_per_channel");
    std::vector<Operand> ins{Operand{input->type()->dtype, 0, ContiguousStrides(dims), true}};
    std::vector<BufferRef> refs{BufferOf(input)};
    const std::string scale =
        QuantParam(call, per_channel ? "scales" : "scale", dims, axis, ins, refs);
    const std::string zero_point =
        QuantParam(call, per_channel ? "zero_points" : "zero_point", dims, axis, ins, refs);
    const DType t = out_dtype();
    const bool u8 = t == DType::kU8;
    const bool from_f8 = input->type()->dtype == DType::kF8E4M3;
    Map(dims, Contiguous(dims), step_->result, ins, refs,
        [&](const std::vector<std::string>& v) {
          auto operands = [&](std::string e) {
            for (size_t i = ins.size(); i-- > 1;) {
              e = absl::StrReplaceAll(e, {{absl::StrCat("@", i), v[i]}});
            }
            return e;
          };
          const std::string s = operands(scale), z = operands(zero_point);
          const std::string x = from_f8 ? absl::StrCat("g_f8_to_double(", v[0], ")")
                                        : absl::StrCat("(double)", v[0]);
          if (dequantize) {
            return absl::StrCat("    r = ", Convert(absl::StrCat("((", x, " - ", z, ") * ", s, ")"),
                                                  DType::kF64, t),
                                ";");
          }
          if (t == DType::kF8E4M3) {
            return absl::StrCat("    const double x = ", x, ";\n    r = g_double_to_f8(x != x ? x : fmin(fmax(x / ",
                                s, ", -448.0), 448.0));");
          }
          return absl::StrCat("    const double x = ", x, ";\n    double q = fmin(fmax(rint(x / ",
                              s, ") + ", z, ", ", u8 ? "0.0" : "-128.0", "), ",
                              u8 ? "255.0" : "127.0", ");\n    if (x != x) q = ", z,
                              ";\n    r = (", RegisterType(t), ")(int)q;");
        });
    return absl::OkStatus();
  }

  absl::Status Index() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const bool embedding = node().is_call("embedding");
    const Node* table = call.TensorNode(embedding ? "weight" : "input");
    const Node* index = call.TensorNode(embedding ? "input" : "index");
    const std::vector<int64_t> dims = DimsOf(node());
    const std::vector<int64_t> table_dims = DimsOf(*table);
    const std::vector<int64_t> table_strides = ContiguousStrides(table_dims);
    const std::vector<int64_t> index_strides = ContiguousStrides(DimsOf(*index));
    const DType index_type = index->type()->dtype;
    const int64_t rank = static_cast<int64_t>(table_dims.size());
    const int64_t dim =
        embedding ? 0 : NormalizeDim(call.Int("dim"), std::max<int64_t>(rank, 1));
    const int64_t size = rank == 0 ? 1 : table_dims[dim];
    // Where this element's index is.
    std::string at = "0LL";
    if (embedding) {
      for (size_t k = 0; k + 1 < dims.size(); ++k) {
        absl::StrAppend(&at, " + c", k, " * ", index_strides[k], "LL");
      }
    } else if (node().is_call("index_select")) {
      if (rank > 0) at = absl::StrCat("c", dim);
    } else {
      for (size_t k = 0; k < dims.size() && k < index_strides.size(); ++k) {
        absl::StrAppend(&at, " + c", k, " * ", index_strides[k], "LL");
      }
    }
    std::string offset = "0LL";
    for (int64_t k = 0; k < rank; ++k) {
      const std::string coordinate =
          k == dim ? "j" : (embedding ? absl::StrCat("c", dims.size() - 1) : absl::StrCat("c", k));
      absl::StrAppend(&offset, " + ", coordinate, " * ", table_strides[k], "LL");
    }
    const DType t = table->type()->dtype;
    const int failure = step_index_ + 1;
    Map(dims, Contiguous(dims), step_->result,
        {Operand{t, 0, {}, false}, Operand{index_type, 0, {}, false}},
        {BufferOf(table), BufferOf(index)},
        [&](const std::vector<std::string>&) {
          return absl::StrCat(
              "    const long long j = (long long)", LoadExpr(index_type, absl::StrCat("p2[", at, "]")), ";\n    if (j < 0 || j >= ", size,
              "LL) { atomicCAS(err, 0, ", failure, "); r = 0; } else { r = ",
              LoadExpr(t, absl::StrCat("p1[", offset, "]")), "; }");
        },
        /*error_flag=*/true);
    return absl::OkStatus();
  }

  absl::Status Argmax() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_->inputs[0];
    const std::vector<int64_t> in_dims = DimsOf(*input);
    Rows rows{1, Product(in_dims, 0, in_dims.size()), 1};
    if (!call.IsNone("dim") && !in_dims.empty()) {
      rows = RowsAlong(in_dims, NormalizeDim(call.Int("dim"), static_cast<int64_t>(in_dims.size())));
    }
    if (rows.outer == 0 || rows.inner == 0 || rows.n == 0) return absl::OkStatus();
    const DType t = input->type()->dtype;
    const std::string rt = RegisterType(t == DType::kBool ? DType::kU8 : t);
    const std::string load = absl::StrCat("(", rt, ")", LoadExpr(t == DType::kBool ? DType::kU8 : t,
                                                                   "p1[start + j * " + std::to_string(rows.inner) + "LL]"));
    const bool fp = IsFloatingPoint(t);
    const std::string better = fp ? "(best == best) && (v > best || v != v)" : "v > best";
    std::string code = absl::StrCat(
        "  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < ",
        rows.outer * rows.inner, "LL; o += (long long)gridDim.x * blockDim.x) {\n",
        "    const long long start = (o / ", rows.inner, "LL) * ", rows.n * rows.inner,
        "LL + o % ", rows.inner, "LL;\n    long long j = 0;\n    ", rt, " best = ", load,
        ";\n    long long best_at = 0;\n    for (j = 1; j < ", rows.n, "LL; ++j) {\n      const ",
        rt, " v = ", load, ";\n      if (", better,
        ") { best = v; best_at = j; }\n    }\n    p0[o] = best_at;\n  }\n");
    AddKernel({"long long* __restrict__ p0",
               absl::StrCat("const ", StorageType(t), "* __restrict__ p1")},
              code, GridFor(rows.outer * rows.inner, kThreads), kThreads,
              {step_->result, step_->operands[0]});
    return absl::OkStatus();
  }

  absl::Status Create() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const DType t = out_dtype();
    std::string value;
    if (node().is_call("zeros")) {
      value = Literal(t, 0);
    } else if (node().is_call("full")) {
      const Argument& fill = call.Get("fill_value");
      if (fill.is_int() && !IsFloatingPoint(t) && t != DType::kBool) {
        // Exact, wrapping into narrower integers as the interpreter does.
        value = absl::StrCat("((", RegisterType(t), ")(", fill.int_value(), "LL))");
      } else if (fill.is_double() && !IsFloatingPoint(t) && t != DType::kBool) {
        const double v = fill.number();
        const bool u = t == DType::kU8;
        const int bits = static_cast<int>(DTypeSize(t)) * 8;
        const double lo = u ? 0 : -std::ldexp(1.0, bits - 1);
        const double hi = u ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
        if (std::isnan(v)) {
          value = Literal(t, 0);
        } else if (v >= hi) {
          value = t == DType::kI64 ? "9223372036854775807LL"
                                   : absl::StrCat("((", RegisterType(t), ")", static_cast<long long>(hi), "LL)");
        } else {
          value = absl::StrCat("((", RegisterType(t), ")", static_cast<long long>(std::trunc(std::max(v, lo))), "LL)");
        }
      } else {
        value = Literal(t, fill.is_bool() ? fill.bool_value() : fill.number());
      }
    } else {
      auto integral = [](const Argument& a) { return a.is_int() || a.is_bool(); };
      auto number = [](const Argument& a) {
        return a.is_bool() ? static_cast<double>(a.bool_value()) : a.number();
      };
      const Argument& start = call.Get("start");
      const Argument& step = call.Get("step");
      if (integral(start) && integral(call.Get("end")) && integral(step)) {
        value = Convert(absl::StrCat("(", static_cast<long long>(number(start)), "LL + c0 * ",
                                     static_cast<long long>(number(step)), "LL)"),
                        DType::kI64, t);
      } else {
        value = Convert(absl::StrCat("(", Literal(DType::kF64, number(start)), " + (double)c0 * ",
                                     Literal(DType::kF64, number(step)), ")"),
                        DType::kF64, t);
      }
    }
    Map(dims, Contiguous(dims), step_->result, {}, {},
        [&](const std::vector<std::string>&) { return absl::StrCat("    r = ", value, ";"); });
    return absl::OkStatus();
  }

  // A direct convolution, one thread per output element: correct on any
  // shape, not fast.
  absl::Status Conv2d() {
    const bool int8 = node().is_call(kQuantizedConv2dOp);
    if (!node().is_call("conv2d") && !int8) {
      return absl::InternalError("a library step that is neither a GEMM nor conv2d");
    }
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* x = call.TensorNode("input");
    const Node* weight = call.TensorNode("weight");
    const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
    const std::vector<int64_t> in = DimsOf(*x), wd = DimsOf(*weight), out = DimsOf(node());
    if (in.size() != 4) return absl::UnimplementedError("conv2d on a tensor that is not 4-D");
    auto pair = [&](absl::string_view name) {
      std::vector<int64_t> v = call.Ints(name);
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    const std::vector<int64_t> stride = pair("stride"), pad = pair("padding"),
                               dil = pair("dilation");
    const int64_t groups = call.Int("groups");
    const int64_t cin_g = wd[1], cout_g = out[1] / groups;
    const DType t = out_dtype();
    // int8: the sums of (x - zero point) * w in int32, padding counting as
    // the zero point (a real 0), then the int8 epilogue.
    const DType acc = int8 ? DType::kI32 : AccumulatorType(t);
    const std::string at = RegisterType(acc);
    std::vector<Operand> ins{Operand{x->type()->dtype, 0, {}, false},
                             Operand{weight->type()->dtype, 0, {}, false}};
    std::vector<BufferRef> refs{BufferOf(x), BufferOf(weight)};
    if (bias != nullptr) {
      ins.push_back(Operand{bias->type()->dtype, 0, {}, false});
      refs.push_back(BufferOf(bias));
    }
    const std::string scales = absl::StrCat("p", ins.size() + 1);
    if (int8) {
      const Node* s = call.TensorNode("weight_scales");
      ins.push_back(Operand{s->type()->dtype, 0, {}, false});
      refs.push_back(BufferOf(s));
    }
    const DType xt = x->type()->dtype, wt = weight->type()->dtype;
    const std::string x_zero_point =
        int8 ? absl::StrCat(" - ", call.Int("input_zero_point")) : std::string();
    const std::string initial =
        bias != nullptr && !int8
            ? Convert(LoadExpr(bias->type()->dtype, "p3[c1]"), bias->type()->dtype, acc)
            : Literal(acc, 0);
    Map(out, Contiguous(out), step_->result, ins, refs, [&](const std::vector<std::string>&) {
      return absl::StrCat(
          "    const long long g = c1 / ", cout_g, "LL;\n    ", at, " acc = ", initial,
          ";\n    for (long long ci = 0; ci < ", cin_g, "LL; ++ci) {\n",
          "      const long long plane = (c0 * ", in[1], "LL + g * ", cin_g, "LL + ci) * ",
          in[2] * in[3], "LL;\n      const long long wbase = (c1 * ", cin_g, "LL + ci) * ",
          wd[2] * wd[3], "LL;\n      for (long long ky = 0; ky < ", wd[2],
          "LL; ++ky) {\n        const long long y = c2 * ", stride[0], "LL - ", pad[0],
          "LL + ky * ", dil[0], "LL;\n        if (y < 0 || y >= ", in[2],
          "LL) continue;\n        for (long long kx = 0; kx < ", wd[3],
          "LL; ++kx) {\n          const long long xx = c3 * ", stride[1], "LL - ", pad[1],
          "LL + kx * ", dil[1], "LL;\n          if (xx < 0 || xx >= ", in[3],
          "LL) continue;\n          acc += (",
          Convert(LoadExpr(xt, absl::StrCat("p1[plane + y * ", in[3], "LL + xx]")), xt, acc),
          x_zero_point, ") * ",
          Convert(LoadExpr(wt, absl::StrCat("p2[wbase + ky * ", wd[3], "LL + kx]")), wt, acc),
          ";\n        }\n      }\n    }\n",
          int8 ? Int8Result(call, bias != nullptr, scales) : absl::StrCat("    r = ", Convert("acc", acc, t), ";"));
    });
    return absl::OkStatus();
  }

  // `r` from the int32 sum `acc` of output channel c1 of an int8 product
  // (kernel_preamble.h's g_int8_value and g_requantize): `scales` names
  // the weight scales' pointer, p3 the bias.
  std::string Int8Result(const OpCall& call, bool has_bias, const std::string& scales) const {
    const auto hex = ExactDoubleLiteral;
    std::string code = absl::StrCat(
        "    const double v = g_int8_value(acc, __dmul_rn(", hex(call.Float("input_scale")),
        ", (double)", LoadExpr(DType::kF32, absl::StrCat(scales, "[c1]")), "), ",
        has_bias ? absl::StrCat("true, ", LoadExpr(DType::kF32, "p3[c1]")) : "false, 0.0f", ", ",
        call.String("activation") == "relu" ? "true" : "false", ");\n");
    const DType t = out_dtype();
    if (t == DType::kF32) return absl::StrCat(code, "    r = (float)v;");
    const double scale = call.Float("output_scale");
    return absl::StrCat(code, "    r = (", RegisterType(t), ")g_requantize(v, ", hex(scale), ", ",
                        hex(1.0 / scale), ", ", call.Int("output_zero_point"), ", ",
                        t == DType::kU8 ? "0, 255" : "-128, 127", ");");
  }

  const StepProgram& p_;
  const CudaOptions& options_;
  const int sms_;
  const int compute_capability_;
  KernelSource out_;
  const Step* step_ = nullptr;
  int step_index_ = 0;
  int kernel_count_ = 0;
  struct DefinedKernel {
    std::string text, name;
    const char* library;
  };
  std::vector<DefinedKernel> kernels_;
  std::map<std::string, std::string> defined_;  // Text (name left out) to name.
  std::string copy_kernels_;
};

}  // namespace

IoLayout LayoutIo(const StepProgram& program) {
  IoLayout io;
  auto add = [&](const TensorType& t, std::vector<size_t>& offsets) {
    int64_t n = DTypeSize(t.dtype);
    for (Dim d : t.shape) n *= d.value();
    offsets.push_back(io.bytes);
    io.bytes += (static_cast<size_t>(n) + 255) / 256 * 256;
  };
  for (const TensorType& t : program.input_types) add(t, io.inputs);
  for (const TensorType& t : program.output_types) add(t, io.outputs);
  return io;
}

std::string ExactDoubleLiteral(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%a", v);
  return buffer;
}

bool IsGemmStep(const Step& step) {
  if (step.kind != StepKind::kLibrary || step.node->is_call(kQuantizedConv2dOp)) return false;
  return !step.node->is_call("conv2d") || IsConvGemmStep(step);
}

absl::StatusOr<KernelSource> GenerateKernels(const StepProgram& program,
                                             const CudaOptions& options, int multiprocessors,
                                             int compute_capability) {
  return Emitter(program, options, multiprocessors, compute_capability).Run();
}

}  // namespace graft::cuda
