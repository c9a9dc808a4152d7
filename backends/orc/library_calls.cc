#include "backends/orc/library_calls.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

#ifdef GRAFT_ORC_WITH_DNNL
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace graft::orc {
namespace {

thread_local absl::Status last_error;

}  // namespace

extern "C" int graft_orc_run_library(void* call, void* const* buffers) {
  absl::Status s = static_cast<const LibraryCall*>(call)->Run(buffers);
  if (s.ok()) return 0;
  last_error = std::move(s);
  return 1;
}

absl::Status TakeLibraryError() {
  absl::Status s = std::move(last_error);
  last_error = absl::OkStatus();
  return s.ok() ? absl::InternalError("a library call failed") : s;
}

void SetLibraryThreads(int threads) {
  // oneDNN runs on OpenMP; its library is already loaded by ours.
  using SetThreads = void (*)(int);
  static const auto set =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static const auto procs =
      reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_num_procs"));
  if (set == nullptr) return;
  set(threads > 0 ? threads : (procs != nullptr ? procs() : 1));
}

#ifndef GRAFT_ORC_WITH_DNNL

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const Program& program, const Step& step) {
  return absl::UnimplementedError(absl::StrCat(
      step.node->target(), " needs oneDNN, which this graft was built without"));
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DnnlType = memory::data_type;

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

std::vector<int64_t> DimsOf(const Node& node) {
  std::vector<int64_t> dims;
  for (Dim d : node.type()->shape) dims.push_back(d.value());
  return dims;
}

// A plain row-major memory descriptor.
memory::desc Plain(const memory::dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return memory::desc(dims, DnnlType::f32, strides);
}

// out[..., M, N] = activation(src[..., M, K] @ weights[..., K, N] + bias).
// Batch dims of src and weights may broadcast. Weights given as a module
// tensor are reordered once, here, into the layout oneDNN prefers.
class MatmulCall : public LibraryCall {
 public:
  struct Spec {
    memory::dims src, weights, dst;
    bool weights_transposed = false;  // Stored [..., N, K].
    bool has_bias = false;
    dnnl::algorithm activation = dnnl::algorithm::undef;
    int src_operand = 0, weights_operand = 0, bias_operand = -1;
    const Tensor* constant_weights = nullptr;
  };

  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(Spec spec) {
    auto call = std::unique_ptr<MatmulCall>(new MatmulCall(std::move(spec)));
    try {
      call->Prepare();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN: ", e.what()));
    }
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  absl::Status Run(void* const* buffers) const override {
    try {
      std::unique_ptr<Bound> bound = TakeBound();
      bound->src.set_data_handle(buffers[1 + spec_.src_operand]);
      bound->dst.set_data_handle(buffers[0]);
      if (!packed_weights_) {
        bound->weights.set_data_handle(buffers[1 + spec_.weights_operand]);
      }
      if (spec_.has_bias) {
        bound->bias.set_data_handle(buffers[1 + spec_.bias_operand]);
      }
      primitive_.execute(ThreadStream(), bound->args);
      ThreadStream().wait();
      ReturnBound(std::move(bound));
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN matmul: ", e.what()));
    }
    return absl::OkStatus();
  }

 private:
  // oneDNN memory objects for one run at a time, kept for the next run:
  // creating them costs more than a small matmul.
  struct Bound {
    memory src, weights, bias, dst;
    std::unordered_map<int, memory> args;
  };

  std::unique_ptr<Bound> TakeBound() const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<Bound> bound = std::move(free_.back());
        free_.pop_back();
        return bound;
      }
    }
    dnnl::engine& engine = Engine();
    auto bound = std::make_unique<Bound>();
    bound->src = memory(src_md_, engine, nullptr);
    bound->dst = memory(dst_md_, engine, nullptr);
    bound->args = {{DNNL_ARG_SRC, bound->src}, {DNNL_ARG_DST, bound->dst}};
    if (packed_weights_) {
      bound->args.emplace(DNNL_ARG_WEIGHTS, *packed_weights_);
    } else {
      bound->weights = memory(weights_md_, engine, nullptr);
      bound->args.emplace(DNNL_ARG_WEIGHTS, bound->weights);
    }
    if (spec_.has_bias) {
      bound->bias = memory(bias_md_, engine, nullptr);
      bound->args.emplace(DNNL_ARG_BIAS, bound->bias);
    }
    return bound;
  }
  void ReturnBound(std::unique_ptr<Bound> bound) const {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(bound));
  }

  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Bound>> free_;

  explicit MatmulCall(Spec spec) : spec_(std::move(spec)) {}

  void Prepare() {
    dnnl::engine& engine = Engine();
    src_md_ = Plain(spec_.src);
    dst_md_ = Plain(spec_.dst);
    memory::desc user_weights = Plain(spec_.weights);
    if (spec_.weights_transposed) {
      // Stored [N, K] row-major: seen as [K, N], element (k, n) is at
      // n * K + k.
      user_weights = memory::desc(spec_.weights, DnnlType::f32,
                                  memory::dims{1, spec_.weights[0]});
    }
    memory::dims bias_dims(spec_.dst.size(), 1);
    bias_dims.back() = spec_.dst.back();
    bias_md_ = Plain(bias_dims);
    dnnl::post_ops post;
    if (spec_.activation != dnnl::algorithm::undef) {
      post.append_eltwise(1.f, spec_.activation, 0.f, 0.f);
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(post);
    const bool pack = spec_.constant_weights != nullptr;
    weights_md_ = pack ? memory::desc(spec_.weights, DnnlType::f32, Tag::any)
                       : user_weights;
    dnnl::matmul::primitive_desc pd =
        spec_.has_bias
            ? dnnl::matmul::primitive_desc(
                  dnnl::matmul::desc(src_md_, weights_md_, bias_md_, dst_md_), attr,
                  engine)
            : dnnl::matmul::primitive_desc(
                  dnnl::matmul::desc(src_md_, weights_md_, dst_md_), attr, engine);
    primitive_ = dnnl::matmul(pd);
    if (pack) {
      memory user(user_weights, engine,
                   const_cast<void*>(spec_.constant_weights->raw_data()));
      packed_weights_ = std::make_unique<memory>(pd.weights_desc(), engine);
      dnnl::stream stream(engine);
      dnnl::reorder(user, *packed_weights_).execute(stream, user, *packed_weights_);
      stream.wait();
    }
  }

  Spec spec_;
  memory::desc src_md_, weights_md_, bias_md_, dst_md_;
  dnnl::matmul primitive_;
  std::unique_ptr<memory> packed_weights_;
};

int OperandOf(const Step& step, const Node* node) {
  auto it = std::find(step.inputs.begin(), step.inputs.end(), node);
  return static_cast<int>(it - step.inputs.begin());
}

const Tensor* ConstantOf(const Program& program, const Node* node) {
  return node->op() == OpCode::kGetAttr ? program.module->FindTensor(node->target())
                                        : nullptr;
}

absl::StatusOr<MatmulCall::Spec> LinearSpec(const Program& program,
                                            const Step& step, const OpCall& call,
                                            bool weight_in_out) {
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  std::vector<int64_t> in = DimsOf(*input);
  std::vector<int64_t> w = DimsOf(*weight);
  const int64_t k = in.back();
  const int64_t n = weight_in_out ? w[1] : w[0];
  int64_t m = 1;
  for (size_t i = 0; i + 1 < in.size(); ++i) m *= in[i];
  MatmulCall::Spec spec;
  spec.src = {m, k};
  spec.weights = {k, n};
  spec.dst = {m, n};
  spec.weights_transposed = !weight_in_out;
  spec.src_operand = OperandOf(step, input);
  spec.weights_operand = OperandOf(step, weight);
  spec.constant_weights = ConstantOf(program, weight);
  if (!call.IsNone("bias")) {
    spec.has_bias = true;
    spec.bias_operand = OperandOf(step, call.TensorNode("bias"));
  }
  return spec;
}

// torch.matmul's shapes: a 1-D operand gains a dim of 1 that the result
// drops (the bytes are the same), batch dims broadcast.
absl::StatusOr<MatmulCall::Spec> MatmulSpec(const Program& program,
                                            const Step& step, const OpCall& call) {
  const Node* a = call.TensorNode("input");
  const Node* b = call.TensorNode("other");
  std::vector<int64_t> ad = DimsOf(*a), bd = DimsOf(*b);
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const size_t rank = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), rank - ad.size(), 1);
  bd.insert(bd.begin(), rank - bd.size(), 1);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i + 2 < rank; ++i) out[i] = std::max(ad[i], bd[i]);
  out[rank - 2] = ad[rank - 2];
  out[rank - 1] = bd[rank - 1];
  MatmulCall::Spec spec;
  spec.src = memory::dims(ad.begin(), ad.end());
  spec.weights = memory::dims(bd.begin(), bd.end());
  spec.dst = memory::dims(out.begin(), out.end());
  spec.src_operand = OperandOf(step, a);
  spec.weights_operand = OperandOf(step, b);
  spec.constant_weights = rank == 2 ? ConstantOf(program, b) : nullptr;
  return spec;
}

absl::Status CheckF32(const Step& step) {
  auto check = [](const Node* n) {
    return n->type()->dtype == DType::kF32
               ? absl::OkStatus()
               : absl::UnimplementedError(absl::StrCat(
                     "oneDNN calls take f32 tensors; %", n->name(), " is ",
                     DTypeName(n->type()->dtype)));
  };
  RETURN_IF_ERROR(check(step.node));
  for (const Node* n : step.inputs) RETURN_IF_ERROR(check(n));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const Program& program, const Step& step) {
  RETURN_IF_ERROR(CheckF32(step));
  const Node& node = *step.node;
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  MatmulCall::Spec spec;
  if (node.is_call("linear")) {
    ASSIGN_OR_RETURN(spec, LinearSpec(program, step, call, false));
  } else if (node.is_call("graft::linear_activation")) {
    ASSIGN_OR_RETURN(spec, LinearSpec(program, step, call,
                                      call.String("weight_layout") == "in_out"));
    const std::string& act = call.String("activation");
    spec.activation = act == "relu"       ? dnnl::algorithm::eltwise_relu
                      : act == "gelu"     ? dnnl::algorithm::eltwise_gelu_erf
                      : act == "gelu_tanh" ? dnnl::algorithm::eltwise_gelu_tanh
                                           : dnnl::algorithm::undef;
    if (spec.activation == dnnl::algorithm::undef) {
      return absl::UnimplementedError(
          absl::StrCat("linear_activation with activation '", act, "'"));
    }
  } else if (node.is_call("matmul")) {
    ASSIGN_OR_RETURN(spec, MatmulSpec(program, step, call));
  } else {
    return absl::UnimplementedError(
        absl::StrCat("no library call for op '", node.target(), "'"));
  }
  return MatmulCall::Create(std::move(spec));
}

#endif  // GRAFT_ORC_WITH_DNNL

}  // namespace graft::orc
