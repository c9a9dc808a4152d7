#include "runtime/library_call.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/openmp.h"
#include "graph/huge_pages.h"
#include "support/status_macros.h"

#ifdef GRAFT_RUNTIME_WITH_DNNL
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace graft::runtime {
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

namespace {

// The threads the current run asked for (SetLibraryThreads), per thread.
thread_local int requested_threads = 0;

// oneDNN runs on OpenMP, whose library ours already loaded: the thread
// count is the calling thread's OpenMP setting.
void SetOpenMpThreads(int threads) {
  const OpenMp& omp = Omp();
  if (omp.set_num_threads == nullptr) return;
  omp.set_num_threads(threads > 0                      ? threads
                      : omp.get_num_procs != nullptr ? omp.get_num_procs()
                                                     : 1);
}

}  // namespace

void SetLibraryThreads(int threads) {
  requested_threads = threads;
  SetOpenMpThreads(threads);
}

namespace {

// The calling thread's OpenMP thread count, or 0 when OpenMP is absent.
int OpenMpThreads() {
  const OpenMp& omp = Omp();
  return omp.get_max_threads != nullptr ? omp.get_max_threads() : 0;
}

}  // namespace

ScopedLibraryThreads::ScopedLibraryThreads(int threads)
    : previous_openmp_(OpenMpThreads()), previous_requested_(requested_threads) {
  SetLibraryThreads(threads);
}

ScopedLibraryThreads::~ScopedLibraryThreads() {
  requested_threads = previous_requested_;
  if (previous_openmp_ > 0) SetOpenMpThreads(previous_openmp_);
}

#ifdef GRAFT_RUNTIME_WITH_DNNL


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

// A plain row-major memory descriptor.
memory::desc Plain(const memory::dims& dims, DnnlType type = DnnlType::f32) {
  memory::dims strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return memory::desc(dims, type, strides);
}

// Each dim's block size in a blocked layout (the product of its inner
// blocks), and the product of all of them; both capped at kBlockCap, past
// which no layout graft accepts goes (inner blocks of at most 4096 each,
// so a product below the cap times one more stays far from overflow).
constexpr int64_t kBlockCap = int64_t{4096} * 4096 + 1;
struct DimBlocks {
  int64_t block[DNNL_MAX_NDIMS];
  int64_t inner = 1;
};
DimBlocks BlocksOf(const dnnl_blocking_desc_t& b) {
  DimBlocks blocks;
  std::fill(blocks.block, blocks.block + DNNL_MAX_NDIMS, 1);
  for (int i = 0; i < b.inner_nblks; ++i) {
    int64_t& dim = blocks.block[b.inner_idxs[i]];
    dim = std::min(dim * b.inner_blks[i], kBlockCap);
    blocks.inner = std::min(blocks.inner * b.inner_blks[i], kBlockCap);
  }
  return blocks;
}

// A layout of plain blocks that oneDNN can reorder from: no extras, no
// special format, indices and counts in range. Layouts read from a file
// are checked so before oneDNN sees them.
bool IsPlainBlocked(const dnnl_memory_desc_t& d) {
  if (d.ndims <= 0 || d.ndims > DNNL_MAX_NDIMS || d.format_kind != dnnl_blocked ||
      d.extra.flags != dnnl_memory_extra_flag_none) {
    return false;
  }
  if (d.data_type != dnnl_f32 && d.data_type != dnnl_bf16 && d.data_type != dnnl_s8 &&
      d.data_type != dnnl_u8) {
    return false;
  }
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  if (b.inner_nblks < 0 || b.inner_nblks > DNNL_MAX_NDIMS) return false;
  for (int i = 0; i < b.inner_nblks; ++i) {
    if (b.inner_idxs[i] < 0 || b.inner_idxs[i] >= d.ndims || b.inner_blks[i] <= 0 ||
        b.inner_blks[i] > 4096) {
      return false;
    }
  }
  // Each dim's block size must divide its padded size.
  const DimBlocks blocks = BlocksOf(b);
  if (blocks.inner >= kBlockCap) return false;
  const int64_t* block = blocks.block;
  for (int i = 0; i < d.ndims; ++i) {
    if (block[i] > 4096) return false;
    const int64_t limit = int64_t{1} << 40;
    if (d.dims[i] <= 0 || d.dims[i] > limit || d.padded_dims[i] < d.dims[i] ||
        d.padded_dims[i] > limit || d.padded_offsets[i] < 0 || b.strides[i] < 0 ||
        b.strides[i] > (int64_t{1} << 50) || d.padded_dims[i] % block[i] != 0) {
      return false;
    }
  }
  return d.offset0 == 0;
}

// The number of elements a plain blocked layout reaches: one past its
// largest offset. oneDNN's own size of a layout whose strides overlap can
// be smaller, and a reorder from it would read past the bytes.
int64_t BlockedExtent(const dnnl_memory_desc_t& d) {
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  const DimBlocks blocks = BlocksOf(b);
  const int64_t* block = blocks.block;
  const int64_t inner = blocks.inner;
  // Within the limits IsPlainBlocked checks, nothing below overflows:
  // 32 dims of at most 2^40 blocks times strides of at most 2^50 can, so
  // the sum saturates instead.
  int64_t last = inner - 1;
  for (int i = 0; i < d.ndims; ++i) {
    const int64_t blocks = d.padded_dims[i] / block[i];
    if (blocks > 1 && b.strides[i] > (INT64_MAX - last) / (blocks - 1)) return INT64_MAX;
    last += (blocks - 1) * b.strides[i];
  }
  return last + 1;
}

// One argument of a primitive: a step buffer, or a module tensor
// reordered once into the layout the primitive asked for.
struct PrimitiveArg {
  int dnnl_arg;
  memory::desc desc;  // The buffer's layout as the step holds it.
  int buffer = -1;    // Index into the step's buffers; -1: `constant`.
  const void* tensor = nullptr;  // Module tensor to reorder into `constant`.
  // Or the weights already packed (from a compiled model file).
  const PackedWeights* packed = nullptr;
  std::shared_ptr<memory> constant;
  // DNNL_ARG_SCRATCHPAD: memory of `desc` owned by each set of memory
  // objects, so that concurrent runs never share one.
  bool scratchpad = false;
  // When the primitive takes the buffer in another data type (bf16
  // matrix products read f32 activations as bf16): its layout there, and
  // the reorder that converts the buffer into it before each run.
  std::optional<memory::desc> converted;
  std::shared_ptr<dnnl::reorder> convert;
  // The primitive writes the converted form and `convert` brings it back
  // into the buffer after the call (a result in another layout).
  bool convert_after = false;
};

// The primitive's scratchpad as an argument. oneDNN's own (library-managed)
// scratchpad may not be used by one primitive from several threads at
// once, and concurrent Runs do just that; so every primitive is made with
// scratchpad_mode::user (see Activation) and each run brings its own.
PrimitiveArg ScratchpadArg(const memory::desc& desc) {
  PrimitiveArg a{DNNL_ARG_SCRATCHPAD, desc};
  a.scratchpad = true;
  return a;
}

// A oneDNN primitive run on a step's buffers. Memory objects are created
// for the first run and reused by later ones (creating them costs more
// than a small matmul); concurrent runs each take their own set.
class PrimitiveCall : public LibraryCall {
 public:
  PrimitiveCall(std::string what, dnnl::primitive primitive,
                std::vector<PrimitiveArg> args, double flops)
      : what_(std::move(what)), primitive_(std::move(primitive)),
        args_(std::move(args)), small_(flops < kParallelFlops) {}

  std::optional<PackedWeights> packed_weights() const override {
    for (const PrimitiveArg& a : args_) {
      if (a.dnnl_arg != DNNL_ARG_WEIGHTS || a.constant == nullptr) continue;
      const memory::desc desc = a.constant->get_desc();
      // Only plain blocked layouts travel: they can be checked and, on a
      // CPU that wants another, reordered. Weights with extras (the s8s8
      // compensation of int8 products) or Winograd's transformed form are
      // packed again where they load.
      if (!IsPlainBlocked(desc.data)) return std::nullopt;
      PackedWeights w;
      w.data = a.constant->get_data_handle();
      w.bytes = desc.get_size();
      w.layout.assign(reinterpret_cast<const char*>(&desc.data), sizeof(desc.data));
      return w;
    }
    return std::nullopt;
  }

  absl::Status Run(void* const* buffers) const override {
    // Starting a parallel region costs microseconds, more than a small
    // product takes on one core: those run on the calling thread alone.
    if (small_) SetOpenMpThreads(1);
    absl::Status status = RunPrimitive(buffers);
    if (small_) SetOpenMpThreads(requested_threads);
    return status;
  }

 private:
  // Below this many floating-point operations (about 8 us on one core),
  // a call runs on one thread.
  static constexpr double kParallelFlops = 2e6;

  absl::Status RunPrimitive(void* const* buffers) const {
    try {
      std::unique_ptr<Bound> bound = TakeBound();
      for (size_t i = 0; i < args_.size(); ++i) {
        if (args_[i].buffer >= 0) {
          bound->memories[i].set_data_handle(buffers[args_[i].buffer]);
        }
        if (args_[i].convert && !args_[i].convert_after) {
          args_[i].convert->execute(ThreadStream(), bound->memories[i],
                                    bound->converted.at(i));
        }
      }
      // The C call with arguments built once: the C++ one copies a map
      // into a fresh vector on every call.
      const dnnl_status_t executed =
          dnnl_primitive_execute(primitive_.get(), ThreadStream().get(),
                                 static_cast<int>(bound->args.size()), bound->args.data());
      if (executed != dnnl_success) {
        throw dnnl::error(executed, "could not execute a primitive");
      }
      for (size_t i = 0; i < args_.size(); ++i) {
        if (args_[i].convert && args_[i].convert_after) {
          args_[i].convert->execute(ThreadStream(), bound->converted.at(i),
                                    bound->memories[i]);
        }
      }
      ThreadStream().wait();
      ReturnBound(std::move(bound));
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN ", what_, ": ", e.what()));
    }
    return absl::OkStatus();
  }

  struct Bound {
    std::vector<memory> memories;
    std::unordered_map<size_t, memory> converted;  // By argument index.
    std::vector<dnnl_exec_arg_t> args;  // The C handles of those two.
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
    auto bound = std::make_unique<Bound>();
    for (size_t i = 0; i < args_.size(); ++i) {
      const PrimitiveArg& a = args_[i];
      bound->memories.push_back(a.constant     ? *a.constant
                                : a.scratchpad ? memory(a.desc, Engine())
                                               : memory(a.desc, Engine(), nullptr));
      if (a.converted) {
        bound->converted.emplace(i, memory(*a.converted, Engine()));
      }
    }
    for (size_t i = 0; i < args_.size(); ++i) {
      const memory& m = args_[i].converted ? bound->converted.at(i) : bound->memories[i];
      bound->args.push_back({args_[i].dnnl_arg, m.get()});
    }
    return bound;
  }
  void ReturnBound(std::unique_ptr<Bound> bound) const {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(bound));
  }

  std::string what_;
  dnnl::primitive primitive_;
  std::vector<PrimitiveArg> args_;
  bool small_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Bound>> free_;
};

// The layout packed weights were written in, if it is one that can be
// checked; else nullopt.
std::optional<memory::desc> PackedLayout(const PackedWeights& packed) {
  memory::desc desc;
  if (packed.layout.size() != sizeof(desc.data)) return std::nullopt;
  std::memcpy(&desc.data, packed.layout.data(), sizeof(desc.data));
  if (!IsPlainBlocked(desc.data) || desc.get_size() != packed.bytes) return std::nullopt;
  const int64_t element = static_cast<int64_t>(dnnl_data_type_size(desc.data.data_type));
  const int64_t extent = BlockedExtent(desc.data);
  if (extent > static_cast<int64_t>(packed.bytes) / element) return std::nullopt;
  return desc;
}

// Reorders each argument that holds a module tensor into `wanted(arg)`,
// the layout the primitive chose, once.
void PackConstants(std::vector<PrimitiveArg>& args,
                   const std::function<memory::desc(int)>& wanted) {
  dnnl::engine& engine = Engine();
  dnnl::stream stream(engine);
  for (PrimitiveArg& a : args) {
    if (a.tensor == nullptr && a.packed == nullptr) continue;
    memory user(a.desc, engine, const_cast<void*>(a.tensor));
    if (a.packed != nullptr) {
      // Packed by the same library build: used where it lies (a mapped
      // file) if the layout is the one wanted here, else reordered. It was
      // checked when the call was made (PackedOf).
      const memory::desc layout = *PackedLayout(*a.packed);
      if (layout == wanted(a.dnnl_arg)) {
        a.constant = std::make_shared<memory>(layout, engine, const_cast<void*>(a.packed->data));
        a.packed = nullptr;  // Only the caller's while preparing.
        continue;
      }
      user = memory(layout, engine, const_cast<void*>(a.packed->data));
    }
    // Weights are large: huge pages take one page fault per 2 MiB instead
    // of per 4 KiB, which is most of the cost of packing 100 MB.
    const memory::desc packed = wanted(a.dnnl_arg);
    const size_t bytes = packed.get_size();
    void* data = bytes >= kHugePageBytes ? MapHugePages(bytes) : nullptr;
    if (data != nullptr) {
      a.constant = std::shared_ptr<memory>(
          new memory(packed, engine, data), [data, bytes](memory* m) {
            delete m;
            UnmapHugePages(data, bytes);
          });
    } else {
      a.constant = std::make_shared<memory>(packed, engine);
    }
    dnnl::reorder(user, *a.constant).execute(stream, user, *a.constant);
    a.packed = nullptr;
  }
  stream.wait();
}

dnnl::primitive_attr Activation(dnnl::algorithm activation) {
  dnnl::post_ops post;
  if (activation != dnnl::algorithm::undef) {
    post.append_eltwise(1.f, activation, 0.f, 0.f);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // ScratchpadArg.
  return attr;
}

// dst[..., M, N] = activation(src[..., M, K] @ weights[..., K, N] + bias).
// Batch dims of src and weights may broadcast.
struct MatmulSpec {
  memory::dims src, weights, dst;
  bool weights_transposed = false;  // Stored [N, K] (linear's weight).
  int src_operand = 0, weights_operand = 0, bias_operand = -1;
  const void* constant_weights = nullptr;
  const PackedWeights* packed_weights = nullptr;
  dnnl::algorithm activation = dnnl::algorithm::undef;
  // Multiply in bf16 (weights stored bf16, activations converted as they
  // go in), accumulate and write f32.
  bool bf16 = false;
};

std::unique_ptr<LibraryCall> CreateMatmul(const MatmulSpec& spec) {
  memory::desc weights = Plain(spec.weights);
  if (spec.weights_transposed) {
    // [N, K] row-major seen as [K, N]: element (k, n) at n * K + k.
    weights = memory::desc(spec.weights, DnnlType::f32,
                           memory::dims{1, spec.weights[0]});
  }
  memory::dims bias_dims(spec.dst.size(), 1);
  bias_dims.back() = spec.dst.back();
  std::vector<PrimitiveArg> args{
      {DNNL_ARG_SRC, Plain(spec.src), 1 + spec.src_operand},
      {DNNL_ARG_WEIGHTS, weights, 1 + spec.weights_operand, spec.constant_weights},
      {DNNL_ARG_DST, Plain(spec.dst), 0}};
  const bool constant = spec.constant_weights != nullptr || spec.packed_weights != nullptr;
  args[1].packed = spec.packed_weights;
  if (constant) args[1].buffer = -1;
  const bool bf16 = spec.bf16 && constant;
  const DnnlType multiply = bf16 ? DnnlType::bf16 : DnnlType::f32;
  const memory::desc packed =
      constant ? memory::desc(spec.weights, multiply, Tag::any) : weights;
  memory::desc src = args[0].desc;
  if (bf16) {
    src = Plain(spec.src, DnnlType::bf16);
    args[0].converted = src;
    args[0].convert = std::make_shared<dnnl::reorder>(
        dnnl::reorder::primitive_desc(Engine(), args[0].desc, Engine(), src));
  }
  const memory::desc bias = Plain(bias_dims);
  dnnl::primitive_attr attr = Activation(spec.activation);
  dnnl::matmul::primitive_desc pd =
      spec.bias_operand >= 0
          ? dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(src, packed, bias, args[2].desc), attr, Engine())
          : dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(src, packed, args[2].desc), attr, Engine());
  if (spec.bias_operand >= 0) {
    args.push_back({DNNL_ARG_BIAS, bias, 1 + spec.bias_operand});
  }
  args.push_back(ScratchpadArg(pd.scratchpad_desc()));
  PackConstants(args, [&](int) { return pd.weights_desc(); });
  double flops = 2.0 * spec.dst.back() * spec.src.back();
  for (size_t i = 0; i + 1 < spec.dst.size(); ++i) flops *= spec.dst[i];
  return std::make_unique<PrimitiveCall>("matmul", dnnl::matmul(pd), std::move(args),
                                         flops);
}

// What an int8 product (matmul or convolution) takes beyond its shapes:
// u8 or s8 activations times constant s8 weights (VNNI on CPUs that have
// it), int32 sums scaled into f32 or quantized again.
struct Int8Params {
  DnnlType src_type = DnnlType::s8;
  int src_operand = 0;
  const void* weights_tensor = nullptr;
  const PackedWeights* packed_weights = nullptr;
  const float* bias = nullptr;  // Constant, f32, one per output; null: none.
  std::vector<float> scales;    // One per output: the int32 sums' scale.
  int32_t src_zero_point = 0;
  // A quantized result (u8 or s8): its scale and zero point.
  DnnlType dst_type = DnnlType::f32;
  float dst_scale = 1;
  int32_t dst_zero_point = 0;
  dnnl::algorithm activation = dnnl::algorithm::undef;

  // Output scales (per output, mask `output_mask`), zero points and the
  // activation.
  dnnl::primitive_attr Attr(int output_mask) const {
    dnnl::primitive_attr attr = Activation(activation);
    // Into a quantized result: the sums' scale over the result's.
    std::vector<float> output_scales = scales;
    for (float& s : output_scales) s /= dst_scale;
    attr.set_output_scales(output_mask, output_scales);
    if (src_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {src_zero_point});
    if (dst_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {dst_zero_point});
    return attr;
  }

  // oneDNN 2 adds the bias to the sums before it scales them: the bias
  // divided by each output's scale, once. Empty without a bias.
  std::vector<float> ScaledBias() const {
    std::vector<float> scaled;
    if (bias != nullptr) {
      for (size_t j = 0; j < scales.size(); ++j) scaled.push_back(bias[j] / scales[j]);
    }
    return scaled;
  }
};

// dst[M, N] = activation(src_scale * w_scales[n] *
//   sum_k (src[M, K] - src_zero_point) * w[N, K] + bias[N]).
struct QuantizedMatmulSpec : Int8Params {
  memory::dims src, weights, dst;  // weights as [K, N], stored [N, K].
};

std::unique_ptr<LibraryCall> CreateQuantizedMatmul(const QuantizedMatmulSpec& spec) {
  const memory::desc stored(spec.weights, DnnlType::s8, memory::dims{1, spec.weights[0]});
  std::vector<PrimitiveArg> args{
      {DNNL_ARG_SRC, Plain(spec.src, spec.src_type), 1 + spec.src_operand},
      {DNNL_ARG_WEIGHTS, stored, -1, spec.weights_tensor},
      {DNNL_ARG_DST, Plain(spec.dst, spec.dst_type), 0}};
  args[1].packed = spec.packed_weights;
  const memory::desc packed(spec.weights, DnnlType::s8, Tag::any);
  const memory::desc bias = Plain({1, spec.dst.back()});
  const dnnl::primitive_attr attr = spec.Attr(/*output_mask=*/1 << 1);
  const std::vector<float> scaled_bias = spec.ScaledBias();
  dnnl::matmul::primitive_desc pd =
      spec.bias != nullptr
          ? dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(args[0].desc, packed, bias, args[2].desc), attr, Engine())
          : dnnl::matmul::primitive_desc(dnnl::matmul::desc(args[0].desc, packed, args[2].desc),
                                         attr, Engine());
  if (spec.bias != nullptr) args.push_back({DNNL_ARG_BIAS, bias, -1, scaled_bias.data()});
  args.push_back(ScratchpadArg(pd.scratchpad_desc()));
  PackConstants(args, [&](int arg) {
    return arg == DNNL_ARG_BIAS ? pd.bias_desc() : pd.weights_desc();
  });
  const double flops = 2.0 * spec.dst[0] * spec.dst[1] * spec.src[1];
  return std::make_unique<PrimitiveCall>("int8 matmul", dnnl::matmul(pd), std::move(args), flops);
}

// The int32 sums src[M, K] (s8) times weights [K, N] (constant s8, stored
// [N, K]) into dst[M, N] (s32): buffers[1] the src, buffers[0] the dst.
std::unique_ptr<LibraryCall> CreateInt32Matmul(const memory::dims& src,
                                               const memory::dims& weights,
                                               const memory::dims& dst,
                                               const void* weights_tensor,
                                               const PackedWeights* packed_weights) {
  const memory::desc stored(weights, DnnlType::s8, memory::dims{1, weights[0]});
  std::vector<PrimitiveArg> args{{DNNL_ARG_SRC, Plain(src, DnnlType::s8), 1},
                                 {DNNL_ARG_WEIGHTS, stored, -1, weights_tensor},
                                 {DNNL_ARG_DST, Plain(dst, DnnlType::s32), 0}};
  args[1].packed = packed_weights;
  const memory::desc packed(weights, DnnlType::s8, Tag::any);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(args[0].desc, packed, args[2].desc),
                                  Activation(dnnl::algorithm::undef), Engine());
  args.push_back(ScratchpadArg(pd.scratchpad_desc()));
  PackConstants(args, [&](int) { return pd.weights_desc(); });
  const double flops = 2.0 * dst[0] * dst[1] * src[1];
  return std::make_unique<PrimitiveCall>("int8 matmul", dnnl::matmul(pd), std::move(args), flops);
}

// graft::dynamic_quantized_linear: each f32 row quantized to s8 by its own
// largest magnitude, here, with the interpreter's arithmetic; the int32
// sums by oneDNN; the scaling here again.
class DynamicInt8Call : public LibraryCall {
 public:
  DynamicInt8Call(std::unique_ptr<LibraryCall> sums, int64_t m, int64_t k, int64_t n,
                  int src_operand, std::vector<float> scales, std::vector<float> bias)
      : sums_(std::move(sums)), m_(m), k_(k), n_(n), src_operand_(src_operand),
        scales_(std::move(scales)), bias_(std::move(bias)) {}

  std::optional<PackedWeights> packed_weights() const override {
    return sums_->packed_weights();
  }

  absl::Status Run(void* const* buffers) const override {
    const float* x = static_cast<const float*>(buffers[1 + src_operand_]);
    float* y = static_cast<float*>(buffers[0]);
    std::vector<int8_t> q(static_cast<size_t>(m_ * k_));
    std::vector<float> row_scale(static_cast<size_t>(m_));
    std::vector<int32_t> sums(static_cast<size_t>(m_ * n_));
    for (int64_t r = 0; r < m_; ++r) {
      const float* row = x + r * k_;
      float largest = 0;
      for (int64_t i = 0; i < k_; ++i) {
        if (std::isfinite(row[i])) largest = std::max(largest, std::fabs(row[i]));
      }
      const float s = largest > 0 ? largest / 127.0f : 1.0f;
      row_scale[r] = s;
      for (int64_t i = 0; i < k_; ++i) {
        const float v = std::nearbyint(row[i] / s);
        q[r * k_ + i] = std::isnan(v) ? 0 : static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
    }
    void* inner[2] = {sums.data(), q.data()};
    RETURN_IF_ERROR(sums_->Run(inner));
    for (int64_t r = 0; r < m_; ++r) {
      for (int64_t o = 0; o < n_; ++o) {
        float v = row_scale[r] * scales_[o] * static_cast<float>(sums[r * n_ + o]);
        if (!bias_.empty()) v += bias_[o];
        y[r * n_ + o] = v;
      }
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<LibraryCall> sums_;
  int64_t m_, k_, n_;
  int src_operand_;
  std::vector<float> scales_, bias_;
};

// out[N, O, OH, OW] = conv2d on int8 values, scaled as QuantizedMatmulSpec;
// NCHW or NHWC activations, weights [O, C/g, KH, KW].
struct QuantizedConvSpec : Int8Params {
  memory::dims src, weights, dst, stride, padding, dilation;
  bool src_channels_last = false, dst_channels_last = false;
  int64_t groups = 1;
};

// oneDNN's form of a convolution's weights ([G, O/G, C/G, KH, KW] when
// grouped) and dilation (it counts the gaps).
memory::dims GroupedWeights(memory::dims weights, int64_t groups) {
  if (groups > 1) {
    weights[0] /= groups;
    weights.insert(weights.begin(), groups);
  }
  return weights;
}
memory::dims GapDilation(memory::dims dilation) {
  for (auto& d : dilation) d -= 1;
  return dilation;
}
memory::desc ActivationLayout(const memory::dims& dims, DnnlType type, bool channels_last) {
  return channels_last ? memory::desc(dims, type, Tag::nhwc) : Plain(dims, type);
}

std::unique_ptr<LibraryCall> CreateQuantizedConv(const QuantizedConvSpec& spec) {
  const memory::dims weights = GroupedWeights(spec.weights, spec.groups);
  std::vector<PrimitiveArg> args{
      {DNNL_ARG_SRC, ActivationLayout(spec.src, spec.src_type, spec.src_channels_last),
       1 + spec.src_operand},
      {DNNL_ARG_WEIGHTS, Plain(weights, DnnlType::s8), -1, spec.weights_tensor},
      {DNNL_ARG_DST, ActivationLayout(spec.dst, spec.dst_type, spec.dst_channels_last), 0}};
  args[1].packed = spec.packed_weights;
  const memory::desc packed(weights, DnnlType::s8, Tag::any);
  const memory::desc bias = Plain({spec.dst[1]});
  const std::vector<float> scaled_bias = spec.ScaledBias();
  const memory::dims dilation = GapDilation(spec.dilation);
  auto desc = spec.bias != nullptr
                  ? dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                        args[0].desc, packed, bias, args[2].desc, spec.stride, dilation,
                        spec.padding, spec.padding)
                  : dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                        args[0].desc, packed, args[2].desc, spec.stride, dilation, spec.padding,
                        spec.padding);
  dnnl::convolution_forward::primitive_desc pd(desc, spec.Attr(/*output_mask=*/1 << 1),
                                               Engine());
  if (spec.bias != nullptr) args.push_back({DNNL_ARG_BIAS, bias, -1, scaled_bias.data()});
  args.push_back(ScratchpadArg(pd.scratchpad_desc()));
  PackConstants(args, [&](int arg) {
    return arg == DNNL_ARG_BIAS ? pd.bias_desc() : pd.weights_desc();
  });
  double flops = 2.0 * spec.weights[1] * spec.weights[2] * spec.weights[3];
  for (int64_t d : spec.dst) flops *= d;
  return std::make_unique<PrimitiveCall>("int8 convolution", dnnl::convolution_forward(pd),
                                         std::move(args), flops);
}

// out[N, O, OH, OW] = activation(conv2d(x[N, C, H, W], w[O, C/g, KH, KW]) +
// bias), NCHW; the weights reordered once into oneDNN's layout.
struct ConvSpec {
  memory::dims src, weights, dst, stride, padding, dilation;
  bool src_channels_last = false, dst_channels_last = false;  // NHWC.
  int64_t groups = 1;
  int src_operand = 0, weights_operand = 0, bias_operand = -1;
  const void* constant_weights = nullptr;
  const PackedWeights* packed_weights = nullptr;
  dnnl::algorithm activation = dnnl::algorithm::undef;
};

// The call for a convolution primitive: bias and scratchpad arguments,
// weights packed.
std::unique_ptr<LibraryCall> FinishConv(
    const ConvSpec& spec, const dnnl::convolution_forward::primitive_desc& pd,
    std::vector<PrimitiveArg> args) {
  if (spec.bias_operand >= 0) {
    args.push_back({DNNL_ARG_BIAS, Plain({spec.dst[1]}), 1 + spec.bias_operand});
  }
  args.push_back(ScratchpadArg(pd.scratchpad_desc()));
  PackConstants(args, [&](int) { return pd.weights_desc(); });
  // Per output element: one multiply-add per input channel of its group
  // and kernel tap.
  double flops = 2.0 * spec.weights[1] * spec.weights[2] * spec.weights[3];
  for (int64_t d : spec.dst) flops *= d;
  return std::make_unique<PrimitiveCall>("convolution", dnnl::convolution_forward(pd),
                                         std::move(args), flops);
}

// 3x3 convolutions of stride 1 by Winograd's algorithm where oneDNN has it
// for this CPU (F(2x2, 3x3) or F(4x4, 3x3): 2.25 to 4 times fewer
// multiplications, 1.7 to 2.4 times faster than direct convolution on an
// AVX-512 core, errors about 1e-6 of the values). Its kernels read and write
// oneDNN's blocked layout, so the activations are reordered from and to
// NHWC around the call. Empty when it does not apply.
std::optional<dnnl::convolution_forward::primitive_desc> WinogradConv(
    const ConvSpec& spec, const memory::desc& packed, const memory::desc& bias,
    std::vector<PrimitiveArg>& args) {
  // Small ones lose more to the two reorders and the transforms than the
  // multiplications save.
  double flops = 2.0 * spec.weights[1] * 9;
  for (int64_t d : spec.dst) flops *= d;
  const bool shape = flops >= 2e7 && spec.groups == 1 && spec.weights[2] == 3 &&
                     spec.weights[3] == 3 &&
                     spec.stride == memory::dims{1, 1} &&
                     spec.dilation == memory::dims{1, 1} && spec.src_channels_last &&
                     spec.dst_channels_last &&
                     (spec.constant_weights != nullptr || spec.packed_weights != nullptr);
  if (!shape) return std::nullopt;
  const memory::desc src(spec.src, DnnlType::f32, Tag::any);
  const memory::desc dst(spec.dst, DnnlType::f32, Tag::any);
  const memory::dims no_dilation{0, 0};
  try {
    auto desc = spec.bias_operand >= 0
                    ? dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference,
                          dnnl::algorithm::convolution_winograd, src, packed, bias, dst,
                          spec.stride, no_dilation, spec.padding, spec.padding)
                    : dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference,
                          dnnl::algorithm::convolution_winograd, src, packed, dst,
                          spec.stride, no_dilation, spec.padding, spec.padding);
    dnnl::convolution_forward::primitive_desc pd(desc, Activation(spec.activation),
                                                 Engine());
    args[0].converted = pd.src_desc();
    args[0].convert = std::make_shared<dnnl::reorder>(
        dnnl::reorder::primitive_desc(Engine(), args[0].desc, Engine(), pd.src_desc()));
    args[2].converted = pd.dst_desc();
    args[2].convert_after = true;
    args[2].convert = std::make_shared<dnnl::reorder>(
        dnnl::reorder::primitive_desc(Engine(), pd.dst_desc(), Engine(), args[2].desc));
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;  // No Winograd kernel for this CPU or shape.
  }
}

std::unique_ptr<LibraryCall> CreateConv(const ConvSpec& spec) {
  const memory::dims weights = GroupedWeights(spec.weights, spec.groups);
  const memory::dims dilation = GapDilation(spec.dilation);
  std::vector<PrimitiveArg> args{
      {DNNL_ARG_SRC, ActivationLayout(spec.src, DnnlType::f32, spec.src_channels_last),
       1 + spec.src_operand},
      {DNNL_ARG_WEIGHTS, Plain(weights), 1 + spec.weights_operand,
       spec.constant_weights},
      {DNNL_ARG_DST, ActivationLayout(spec.dst, DnnlType::f32, spec.dst_channels_last), 0}};
  const bool constant = spec.constant_weights != nullptr || spec.packed_weights != nullptr;
  args[1].packed = spec.packed_weights;
  if (constant) args[1].buffer = -1;
  const memory::desc packed =
      constant ? memory::desc(weights, DnnlType::f32, Tag::any) : args[1].desc;
  const memory::desc bias = Plain({spec.dst[1]});
  const bool has_bias = spec.bias_operand >= 0;
  if (std::optional<dnnl::convolution_forward::primitive_desc> wino =
          WinogradConv(spec, packed, bias, args)) {
    return FinishConv(spec, *wino, std::move(args));
  }
  auto desc = has_bias
                  ? dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference,
                        dnnl::algorithm::convolution_direct, args[0].desc, packed,
                        bias, args[2].desc, spec.stride, dilation, spec.padding,
                        spec.padding)
                  : dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference,
                        dnnl::algorithm::convolution_direct, args[0].desc, packed,
                        args[2].desc, spec.stride, dilation, spec.padding,
                        spec.padding);
  dnnl::convolution_forward::primitive_desc pd(desc, Activation(spec.activation),
                                               Engine());
  return FinishConv(spec, pd, std::move(args));
}

// A product with nothing to add up or nothing to write (a dim of size 0):
// oneDNN cannot make a primitive for it (its matmul divides by the zero
// dim), so the result is written here: nothing, or (no terms to sum) the
// bias alone through the activation.
class EmptyProductCall : public LibraryCall {
 public:
  // Element i of the result gets bias[(i / repeat) % period].
  EmptyProductCall(int64_t elements, int bias_buffer, int64_t period,
                   int64_t repeat, std::string activation)
      : elements_(elements), bias_buffer_(bias_buffer), period_(period),
        repeat_(repeat), activation_(std::move(activation)) {}

  absl::Status Run(void* const* buffers) const override {
    float* dst = static_cast<float*>(buffers[0]);
    const float* bias = bias_buffer_ >= 0
                            ? static_cast<const float*>(buffers[bias_buffer_])
                            : nullptr;
    for (int64_t i = 0; i < elements_; ++i) {
      const double v = bias != nullptr ? bias[(i / repeat_) % period_] : 0.0;
      double y = v;
      if (activation_ == "relu") y = v > 0 ? v : 0.0;
      if (activation_ == "gelu") y = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      if (activation_ == "gelu_tanh") {
        y = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      }
      dst[i] = static_cast<float>(y);
    }
    return absl::OkStatus();
  }

 private:
  int64_t elements_;
  int bias_buffer_;
  int64_t period_, repeat_;
  std::string activation_;
};

int64_t Volume(const memory::dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}


dnnl::algorithm ActivationAlgorithm(const std::string& name) {
  if (name == "relu") return dnnl::algorithm::eltwise_relu;
  if (name == "gelu") return dnnl::algorithm::eltwise_gelu_erf;
  if (name == "gelu_tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  return dnnl::algorithm::undef;
}

memory::dims Dims(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// The constant in state slot `slot`, which must hold `bytes`.
absl::StatusOr<const void*> Constant(absl::Span<const ConstantBuffer> state, int slot,
                                     int64_t bytes, absl::string_view what) {
  if (slot < 0 || static_cast<size_t>(slot) >= state.size()) {
    return absl::DataLossError(absl::StrCat("the ", what, " refers to state slot ", slot,
                                            " of ", state.size()));
  }
  if (state[slot].data == nullptr || state[slot].bytes != static_cast<size_t>(bytes)) {
    return absl::DataLossError(absl::StrCat("the ", what, " (state slot ", slot, ") holds ",
                                            state[slot].bytes, " bytes, not ", bytes));
  }
  return state[slot].data;
}

// The prepacked weights of `s`, if any, checked to be of this library
// build and of the size their layout implies.
absl::StatusOr<const PackedWeights*> PackedOf(const LibraryCallSpec& s,
                                              absl::Span<const PackedWeights> packed) {
  if (s.packed_index < 0) return nullptr;
  if (static_cast<size_t>(s.packed_index) >= packed.size()) {
    return absl::DataLossError(absl::StrCat("packed weights ", s.packed_index, " of ",
                                            packed.size()));
  }
  const PackedWeights& w = packed[s.packed_index];
  if (!PackedLayout(w).has_value()) {
    return absl::DataLossError(
        "the packed weights' layout is not one oneDNN can use: compile the model again");
  }
  return &w;
}

// What f32 matrix products and convolutions (MatmulSpec, ConvSpec) take
// alike from a spec: dims, operands, constant or packed weights, activation.
template <typename ProductSpec>
absl::Status FillFloatProduct(const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
                              absl::Span<const PackedWeights> packed, ProductSpec& spec) {
  spec.src = Dims(s.src);
  spec.weights = Dims(s.weights);
  spec.dst = Dims(s.dst);
  spec.src_operand = s.src_operand;
  spec.weights_operand = s.weights_operand;
  spec.bias_operand = s.bias_operand;
  if (s.weights_state >= 0) {
    ASSIGN_OR_RETURN(spec.constant_weights,
                     Constant(state, s.weights_state, Volume(spec.weights) * 4, "weights"));
  }
  ASSIGN_OR_RETURN(spec.packed_weights, PackedOf(s, packed));
  spec.activation = ActivationAlgorithm(s.activation);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LibraryCall>> CreateMatmulCall(
    const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  MatmulSpec spec;
  RETURN_IF_ERROR(FillFloatProduct(s, state, packed, spec));
  spec.weights_transposed = s.weights_transposed;
  spec.bf16 = s.bf16;
  return CreateMatmul(spec);
}

// A convolution's window and layouts (ConvSpec, QuantizedConvSpec).
template <typename ConvolutionSpec>
void FillWindow(const LibraryCallSpec& s, ConvolutionSpec& spec) {
  spec.stride = Dims(s.stride);
  spec.padding = Dims(s.padding);
  spec.dilation = Dims(s.dilation);
  spec.groups = s.groups;
  spec.src_channels_last = s.src_channels_last;
  spec.dst_channels_last = s.dst_channels_last;
}

// The Int8Params of a spec whose weights have `weight_elements` values and
// whose result `outputs` channels.
absl::Status FillInt8Params(const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
                            absl::Span<const PackedWeights> packed, int64_t weight_elements,
                            int64_t outputs, Int8Params& p) {
  p.src_type = s.src_dtype == DType::kU8 ? DnnlType::u8 : DnnlType::s8;
  p.src_operand = s.src_operand;
  ASSIGN_OR_RETURN(p.packed_weights, PackedOf(s, packed));
  if (p.packed_weights == nullptr || s.weights_state >= 0) {
    ASSIGN_OR_RETURN(p.weights_tensor,
                     Constant(state, s.weights_state, weight_elements, "int8 weights"));
  }
  if (s.bias_state >= 0) {
    ASSIGN_OR_RETURN(const void* bias, Constant(state, s.bias_state, outputs * 4, "bias"));
    p.bias = static_cast<const float*>(bias);
  }
  if (static_cast<int64_t>(s.scales.size()) != outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.label, ": ", s.scales.size(), " scales for ", outputs, " outputs"));
  }
  p.scales = s.scales;
  p.src_zero_point = s.src_zero_point;
  if (s.dst_dtype != DType::kF32) {
    p.dst_type = s.dst_dtype == DType::kU8 ? DnnlType::u8 : DnnlType::s8;
    p.dst_scale = s.dst_scale;
    p.dst_zero_point = s.dst_zero_point;
  }
  p.activation = ActivationAlgorithm(s.activation);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LibraryCall>> CreateQuantizedMatmulCall(
    const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  QuantizedMatmulSpec spec;
  spec.src = Dims(s.src);
  spec.weights = Dims(s.weights);
  spec.dst = Dims(s.dst);
  RETURN_IF_ERROR(
      FillInt8Params(s, state, packed, Volume(spec.weights), spec.dst.back(), spec));
  return CreateQuantizedMatmul(spec);
}

absl::StatusOr<std::unique_ptr<LibraryCall>> CreateDynamicQuantizedMatmulCall(
    const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  const memory::dims src = Dims(s.src), weights = Dims(s.weights), dst = Dims(s.dst);
  ASSIGN_OR_RETURN(const PackedWeights* packed_weights, PackedOf(s, packed));
  const void* weights_tensor = nullptr;
  if (packed_weights == nullptr || s.weights_state >= 0) {
    ASSIGN_OR_RETURN(weights_tensor,
                     Constant(state, s.weights_state, Volume(weights), "int8 weights"));
  }
  std::vector<float> bias;
  if (s.bias_state >= 0) {
    ASSIGN_OR_RETURN(const void* b, Constant(state, s.bias_state, dst[1] * 4, "bias"));
    bias.assign(static_cast<const float*>(b), static_cast<const float*>(b) + dst[1]);
  }
  return std::make_unique<DynamicInt8Call>(
      CreateInt32Matmul(src, weights, dst, weights_tensor, packed_weights), src[0], src[1],
      dst[1], s.src_operand, s.scales, std::move(bias));
}

absl::StatusOr<std::unique_ptr<LibraryCall>> CreateQuantizedConvCall(
    const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  QuantizedConvSpec spec;
  spec.src = Dims(s.src);
  spec.weights = Dims(s.weights);
  spec.dst = Dims(s.dst);
  FillWindow(s, spec);
  RETURN_IF_ERROR(FillInt8Params(s, state, packed, Volume(spec.weights), spec.dst[1], spec));
  return CreateQuantizedConv(spec);
}

absl::StatusOr<std::unique_ptr<LibraryCall>> CreateConvCall(
    const LibraryCallSpec& s, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  ConvSpec spec;
  RETURN_IF_ERROR(FillFloatProduct(s, state, packed, spec));
  FillWindow(s, spec);
  return CreateConv(spec);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const LibraryCallSpec& spec, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  try {
    switch (spec.kind) {
      case LibraryCallKind::kEmptyProduct:
        return std::make_unique<EmptyProductCall>(spec.elements, spec.bias_buffer, spec.period,
                                                  spec.repeat, spec.activation);
      case LibraryCallKind::kMatmul:
        return CreateMatmulCall(spec, state, packed);
      case LibraryCallKind::kQuantizedMatmul:
        return CreateQuantizedMatmulCall(spec, state, packed);
      case LibraryCallKind::kConv:
        return CreateConvCall(spec, state, packed);
      case LibraryCallKind::kQuantizedConv:
        return CreateQuantizedConvCall(spec, state, packed);
      case LibraryCallKind::kDynamicQuantizedMatmul:
        return CreateDynamicQuantizedMatmulCall(spec, state, packed);
    }
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN: ", e.what()));
  }
  return absl::InvalidArgumentError("unknown library call kind");
}

std::string PackingIdentity() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (layout ",
                      sizeof(dnnl_memory_desc_t), " bytes)");
}

#else  // GRAFT_RUNTIME_WITH_DNNL

std::string PackingIdentity() { return "none"; }

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const LibraryCallSpec& spec, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed) {
  return absl::UnimplementedError(
      "matrix products and convolutions need oneDNN, which this graft was built without");
}

#endif  // GRAFT_RUNTIME_WITH_DNNL

}  // namespace graft::runtime
