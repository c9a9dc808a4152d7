// Times a workload on the CUDA backend the way bench/cuda_vs_torch.py times
// PyTorch: inputs already on the device, outputs left there, a loop of runs
// between two clock reads, the last followed by a wait for the GPU (runs
// that keep their outputs on the device return once queued, as PyTorch's
// calls do), the median of five rounds. Prints one JSON line; latency_us
// waits after every run instead (one run's latency).
//
//   build/bench/gpu_run mlp|one-node|attention|resnet18|MODEL [--precision f32|tf32|bf16|f16|int8]
//       [--autotune 0|1] [--gemm auto|cublaslt] [--batch 32] [--runs 200] [--gpus N] [--shard-by tensor|batch]
//       [--cache-dir DIR]
//
// --gpus N: tensor parallel over GPUs 0..N-1 (CompileSharded), each rank's
// input already on its own GPU.
//
// MODEL is a model file (.gpb, .graft) with fixed input shapes, e.g. the
// GPT-2 block of bench/models/export_gpt2_block.py converted to .gpb.
//
// --precision int8: the workload quantized as `graft quantize` does (8
// random calibration samples, int8 activations, per-channel weights) and
// lowered (quantize-lower), then compiled with precision f32; the JSON
// line adds the share of multiply-accumulates the lowering put in int8.
//
// host_io_us is the same run with the input on the host and the output
// copied back: what `Executable::Run` costs end to end. init_ms is the
// CUDA context's start, before the compile (compile_ms).
//
// --io-dtype bf16|f16: the model's f32 inputs declared in that dtype, so
// that a run takes and returns half-precision tensors, as a PyTorch model
// moved to bf16 does (with --precision bf16 or f16; the default keeps f32
// inputs, cast where they enter, and f32 outputs).
//
// --cache-dir DIR: times only the compile, through the compile cache on
// disk in DIR (a compile, then a disk hit in each process after).
//
// --write-model PATH: writes the workload (mlp, ...; with --precision
// int8 quantized and lowered, with --io-dtype cast) to a model file and
// exits; `gpu_run PATH --cache-dir DIR` then compiles it as `graft run`
// does, its weights' hashes remembered for the file (FileHashMemo).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/compile_cache.h"
#include "backends/disk_cache.h"
#include "backends/sharded_executable.h"
#include "graph/graph.h"
#include "graph/random_tensor.h"
#include "passes/cast_float.h"
#include "passes/quantize/lower.h"
#include "passes/shape_prop.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "workloads/benchmark_mlp.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "gpu_run: %s\n", what.c_str());
  return 1;
}

graft::Module OneNode() {
  graft::Module module;
  graft::Graph& g = module.graph();
  graft::Node* x = g.Placeholder("x", graft::TensorType{graft::DType::kF32, {1024}});
  g.Output(g.CallFunction("relu", {x}));
  (void)graft::passes::PropagateShapes(module);
  return module;
}

// GPT-2's causal attention alone, as its export writes it out, over q, k
// and v split from one [8, 256, 3 x 768] product: 12 heads of 64, the
// causal mask a module tensor. The bf16 CUDA program runs it as one kernel
// (graft::attention), which PyTorch's scaled_dot_product_attention is
// timed beside in bench/cuda_vs_torch.py.
graft::Module Attention() {
  using graft::Argument;
  constexpr int64_t kBatch = 8, kSeq = 256, kHeads = 12, kDim = 64, kWidth = kHeads * kDim;
  graft::Module module;
  graft::Tensor causal(graft::DType::kBool, {1, 1, kSeq, kSeq});
  for (int64_t i = 0; i < kSeq; ++i) {
    for (int64_t j = 0; j < kSeq; ++j) causal.data<bool>()[i * kSeq + j] = j > i;
  }
  module.SetTensor("causal", causal);
  graft::Graph& g = module.graph();
  graft::Node* x =
      g.Placeholder("qkv", graft::TensorType{graft::DType::kF32, {kBatch, kSeq, 3 * kWidth}});
  graft::Node* parts = g.CallFunction("split", {x, Argument::IntList({kWidth, kWidth, kWidth}),
                                                int64_t{2}});
  std::vector<graft::Node*> heads;
  for (int64_t i = 0; i < 3; ++i) {
    heads.push_back(g.CallFunction(
        "reshape", {g.CallFunction("getitem", {parts, i}),
                    Argument::IntList({kBatch, kSeq, kHeads, kDim})}));
  }
  graft::Node* q = g.CallFunction("permute", {heads[0], Argument::IntList({0, 2, 1, 3})});
  graft::Node* kt = g.CallFunction("permute", {heads[1], Argument::IntList({0, 2, 3, 1})});
  graft::Node* v = g.CallFunction("permute", {heads[2], Argument::IntList({0, 2, 1, 3})});
  graft::Node* s = g.CallFunction("mul", {g.CallFunction("matmul", {q, kt}), 0.125});
  s = g.CallFunction("where", {g.GetAttr("causal"), -std::numeric_limits<double>::infinity(), s});
  g.Output(g.CallFunction("matmul", {g.CallFunction("softmax", {s, int64_t{-1}}), v}));
  (void)graft::passes::PropagateShapes(module);
  return module;
}

// ResNet-18 (torchvision's layers, batch norms folded into the
// convolutions' biases as an eval-mode export has them) on [batch, 3, 224,
// 224], random weights scaled as He initialization scales them so that the
// activations stay of order one. bench/cuda_vs_torch.py builds the same
// layers in PyTorch.
graft::Module ResNet18(int64_t batch) {
  using graft::Argument;
  graft::Module module;
  graft::Graph& g = module.graph();
  uint64_t seed = 100;
  auto parameter = [&](const std::string& name, std::vector<int64_t> dims, double bound) {
    graft::Tensor t = graft::RandomTensor(graft::DType::kF32, std::move(dims), seed++);
    float* v = t.data<float>();
    for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = static_cast<float>(v[i] * bound);
    module.SetTensor(name, t);
    return g.GetAttr(name);
  };
  int layer = 0;
  auto conv = [&](graft::Node* x, int64_t in, int64_t out, int64_t k, int64_t stride) {
    const std::string name = "conv" + std::to_string(layer++);
    graft::Node* w = parameter(name + ".weight", {out, in, k, k}, std::sqrt(6.0 / (in * k * k)));
    graft::Node* b = parameter(name + ".bias", {out}, 0.1);
    return g.CallFunction("conv2d", {x, w, b, Argument::IntList({stride, stride}),
                                     Argument::IntList({k / 2, k / 2})});
  };
  auto relu = [&](graft::Node* x) { return g.CallFunction("relu", {x}); };
  graft::Node* x =
      g.Placeholder("x", graft::TensorType{graft::DType::kF32, {batch, 3, 224, 224}});
  graft::Node* h = relu(conv(x, 3, 64, 7, 2));
  h = g.CallFunction("max_pool2d", {h, Argument::IntList({3, 3}), Argument::IntList({2, 2}),
                                    Argument::IntList({1, 1})});
  int64_t channels = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    for (int block = 0; block < 2; ++block) {
      const int64_t stride = block == 0 && width != 64 ? 2 : 1;
      graft::Node* identity = h;
      graft::Node* y = relu(conv(h, channels, width, 3, stride));
      y = conv(y, width, width, 3, 1);
      if (stride != 1 || channels != width) identity = conv(h, channels, width, 1, stride);
      h = relu(g.CallFunction("add", {y, identity}));
      channels = width;
    }
  }
  h = g.CallFunction("adaptive_avg_pool2d", {h, Argument::IntList({1, 1})});
  h = g.CallFunction("flatten", {h, int64_t{1}});
  graft::Node* fc_w = parameter("fc.weight", {1000, 512}, std::sqrt(6.0 / 512));
  graft::Node* fc_b = parameter("fc.bias", {1000}, 0.1);
  g.Output(g.CallFunction("linear", {h, fc_w, fc_b}));
  (void)graft::passes::PropagateShapes(module);
  return module;
}

// Waits until the GPU has computed `outputs`.
void WaitFor(const std::vector<graft::Tensor>& outputs) {
  for (const graft::Tensor& t : outputs) {
    if (!t.on_host()) (void)t.storage()->allocator()->Synchronize();
  }
}

// Median microseconds per run over five rounds of `runs`. `run` returns
// its outputs: a run that keeps them on the device returns once queued,
// as PyTorch's calls do, so each round ends by waiting for the last.
template <typename F>
double TimeRuns(int runs, F&& run) {
  for (int i = 0; i < 20; ++i) WaitFor(run());
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const double start = Now();
    std::vector<graft::Tensor> last;
    for (int i = 0; i < runs; ++i) last = run();
    WaitFor(last);
    rounds.push_back((Now() - start) / runs * 1e6);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

// --gpus: every rank's input on its own GPU, outputs left there (split by
// batch, each rank's rows of them on its GPU).
int RunSharded(graft::Backend& backend, const graft::Module& module,
               graft::CompileOptions options, int gpus, graft::passes::ShardStrategy strategy,
               int runs, const std::string& workload) {
  const double t0 = Now();
  absl::StatusOr<std::unique_ptr<graft::ShardedExecutable>> exe =
      graft::CompileSharded(backend, module, gpus, options, nullptr, strategy);
  if (!exe.ok()) return Fail(exe.status().ToString());
  const double compile_ms = (Now() - t0) * 1e3;
  std::vector<int64_t> dims;
  for (graft::Dim d : (*exe)->input_signature()[0].type->shape) dims.push_back(d.value());
  const graft::Tensor host = graft::RandomTensor(graft::DType::kF32, dims, 7);
  std::vector<std::vector<graft::Tensor>> inputs;
  for (int r = 0; r < gpus; ++r) {
    options.device_index = r;
    absl::StatusOr<graft::Tensor> device = graft::CopyToDevice(host, backend.allocator(options));
    if (!device.ok()) return Fail(device.status().ToString());
    inputs.push_back({*device});
  }
  const double t1 = Now();
  absl::StatusOr<std::vector<std::vector<graft::Tensor>>> first = (*exe)->RunEachRank(inputs);
  if (!first.ok()) return Fail(first.status().ToString());
  const double first_ms = (Now() - t1) * 1e3;
  // Every rank's outputs, so that a round waits for every GPU (split by
  // batch, each rank keeps its rows).
  auto run = [&] {
    std::vector<graft::Tensor> all;
    for (auto& rank : (*exe)->RunEachRank(inputs).value_or(std::vector<std::vector<graft::Tensor>>{})) {
      all.insert(all.end(), rank.begin(), rank.end());
    }
    return all;
  };
  const double device_us = TimeRuns(runs, run);
  // One run at a time: its latency, and the host's part of it (the call
  // alone, which returns once every rank has queued its work).
  std::vector<double> host_us;
  const double latency_us = TimeRuns(runs, [&] {
    const double start = Now();
    std::vector<graft::Tensor> out = run();
    host_us.push_back((Now() - start) * 1e6);
    WaitFor(out);
    return out;
  });
  std::sort(host_us.begin(), host_us.end());
  std::printf(
      "{\"workload\": \"%s\", \"precision\": \"%s\", \"gpus\": %d, \"shard_by\": \"%s\", "
      "\"compile_ms\": %.1f, \"first_ms\": %.2f, \"median_us\": %.2f, \"latency_us\": %.2f, "
      "\"host_us\": %.2f}\n",
      workload.c_str(), options.Get("precision").c_str(), gpus,
      std::string(graft::passes::ShardStrategyName(strategy)).c_str(), compile_ms, first_ms,
      device_us, latency_us, host_us[host_us.size() / 2]);
  return 0;
}

// Quantizes and lowers `module` in place; returns the share of its
// multiply-accumulates that run in int8.
absl::StatusOr<double> QuantizeAndLower(graft::Module& module) {
  graft::quantize::QuantizeOptions options;
  absl::StatusOr<std::vector<graft::quantize::Sample>> samples =
      graft::quantize::RandomSamples(module, 8, 1);
  if (!samples.ok()) return samples.status();
  options.calibration = *std::move(samples);
  absl::StatusOr<graft::quantize::QuantizeResult> q =
      graft::quantize::QuantizeModel(module, options);
  if (!q.ok()) return q.status();
  module = std::move(q->module);
  absl::StatusOr<graft::passes::quantize::LowerReport> audit =
      graft::passes::quantize::Lower(module);
  if (!audit.ok()) return audit.status();
  return audit->total_macs == 0 ? 0.0
                                : static_cast<double>(audit->int8_macs) / audit->total_macs;
}

// --cache-dir DIR: only the compile, through a compile cache on disk in
// DIR, as `graft run` compiles: a compile the first time, a disk hit in
// the processes after.
int CompileThroughCache(graft::Backend& backend, const graft::Module& module,
                        const graft::CompileOptions& options, const std::string& dir,
                        double init_ms) {
  graft::CompileCache cache(std::make_shared<graft::DiskCache>(dir));
  const double t0 = Now();
  // The cache key alone (the module's fingerprint: every weight hashed
  // once), inside compile_ms as well.
  (void)graft::CompileCache::Key(backend, module, options);
  const double key_ms = (Now() - t0) * 1e3;
  absl::StatusOr<std::shared_ptr<graft::Executable>> exe =
      cache.GetOrCompile(backend, module, options);
  if (!exe.ok()) return Fail(exe.status().ToString());
  const double compile_ms = (Now() - t0) * 1e3;
  const graft::CompileCacheStats stats = cache.stats();
  std::printf(
      "{\"precision\": \"%s\", \"init_ms\": %.1f, \"compile_ms\": %.1f, \"key_ms\": %.1f, "
      "\"compiles\": %lld, \"disk_hits\": %lld}\n",
      options.Get("precision").c_str(), init_ms, compile_ms, key_ms,
      static_cast<long long>(stats.compiles), static_cast<long long>(stats.disk_hits));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: gpu_run mlp|one-node [--precision P] [--autotune 0|1]");
  const std::string workload = argv[1];
  std::string precision = "f32", autotune = "0", gemm = "auto", io_dtype;
  int64_t batch = 32;
  int runs = 200, gpus = 0;
  std::string cache_dir, write_model;
  std::string shard_by = "tensor";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--precision") precision = argv[i + 1];
    if (flag == "--autotune") autotune = argv[i + 1];
    if (flag == "--gemm") gemm = argv[i + 1];
    if (flag == "--batch") batch = std::atoll(argv[i + 1]);
    if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    if (flag == "--gpus") gpus = std::atoi(argv[i + 1]);
    if (flag == "--shard-by") shard_by = argv[i + 1];
    if (flag == "--cache-dir") cache_dir = argv[i + 1];
    if (flag == "--io-dtype") io_dtype = argv[i + 1];
    if (flag == "--write-model") write_model = argv[i + 1];
  }
  graft::Module module;
  if (workload == "mlp") {
    module = graft::BuildBenchmarkMlp(batch, 1);
  } else if (workload == "one-node") {
    module = OneNode();
  } else if (workload == "attention") {
    module = Attention();
  } else if (workload == "resnet18") {
    module = ResNet18(batch);
  } else {
    absl::StatusOr<graft::Module> loaded = graft::LoadModel(workload);
    if (!loaded.ok()) return Fail(loaded.status().ToString());
    module = *std::move(loaded);
  }
  graft::DType input_dtype = graft::DType::kF32;
  if (!io_dtype.empty()) {
    std::optional<graft::DType> parsed = graft::ParseDType(io_dtype);
    if (!parsed.has_value() || !graft::IsFloatingPoint(*parsed)) return Fail("bad --io-dtype");
    input_dtype = *parsed;
    // The model in that dtype (inputs cast where they enter), then each
    // input declared in it, its entry cast gone.
    absl::StatusOr<bool> cast = graft::passes::CastFloatModule(module, input_dtype);
    if (!cast.ok()) return Fail(cast.status().ToString());
    for (graft::Node* p : module.graph().placeholders()) {
      if (!p->type().has_value() || p->type()->dtype != graft::DType::kF32) continue;
      p->set_type(graft::TensorType{input_dtype, p->type()->shape});
      for (graft::Node* user : p->users()) {
        if (user->is_call("cast")) {
          user->ReplaceAllUsesWith(p);
          if (!module.graph().EraseNode(user).ok()) return Fail("an input's cast stays used");
        }
      }
    }
    // And each output left in it: no cast back to f32.
    graft::Node* output = module.graph().output();
    const std::vector<graft::Node*> results = output->inputs();
    for (graft::Node* cast_back : results) {
      if (cast_back->is_call("cast") && cast_back->num_uses() == 1) {
        cast_back->ReplaceAllUsesWith(cast_back->inputs()[0]);
        (void)module.graph().EraseNode(cast_back);
      }
    }
  }
  double int8_share = -1;
  if (precision == "int8") {
    absl::StatusOr<double> share = QuantizeAndLower(module);
    if (!share.ok()) return Fail(share.status().ToString());
    int8_share = *share;
  }
  if (!write_model.empty()) {
    const absl::Status saved = graft::SaveModel(module, write_model);
    return saved.ok() ? 0 : Fail(saved.ToString());
  }
  absl::StatusOr<std::unique_ptr<graft::Backend>> backend = graft::CreateBackend("cuda");
  if (!backend.ok()) return Fail(backend.status().ToString());
  graft::CompileOptions options;
  options.options = {{"precision", precision == "int8" ? "f32" : precision},
                     {"autotune", autotune},
                     {"gemm", gemm}};
  options.keep_outputs_on_device = true;
  if (gpus > 0) {
    absl::StatusOr<graft::passes::ShardStrategy> strategy =
        graft::passes::ParseShardStrategy(shard_by);
    if (!strategy.ok()) return Fail(strategy.status().ToString());
    return RunSharded(**backend, module, options, gpus, *strategy, runs, workload);
  }
  // The CUDA context starts apart from the compile (init_ms): a process
  // pays it once, whatever it compiles.
  const double t_init = Now();
  absl::StatusOr<graft::Tensor> probe =
      graft::CopyToDevice(graft::RandomTensor(graft::DType::kF32, {1}, 1),
                          (*backend)->allocator(options));
  if (!probe.ok()) return Fail(probe.status().ToString());
  const double init_ms = (Now() - t_init) * 1e3;
  if (!cache_dir.empty()) return CompileThroughCache(**backend, module, options, cache_dir, init_ms);
  const double t0 = Now();
  absl::StatusOr<std::unique_ptr<graft::Executable>> exe = (*backend)->Compile(module, options);
  if (!exe.ok()) return Fail(exe.status().ToString());
  const double compile_ms = (Now() - t0) * 1e3;
  std::vector<int64_t> dims;
  for (graft::Dim d : (*exe)->input_signature()[0].type->shape) {
    if (d.is_symbolic()) return Fail("the model's inputs have symbolic dims");
    dims.push_back(d.value());
  }
  const graft::Tensor host = graft::RandomTensor(input_dtype, dims, 7);
  absl::StatusOr<graft::Tensor> device =
      graft::CopyToDevice(host, (*backend)->allocator(options));
  if (!device.ok()) return Fail(device.status().ToString());
  const double t1 = Now();
  if (!(*exe)->Run({*device}).ok()) return Fail("the first run failed");
  const double first_ms = (Now() - t1) * 1e3;
  auto run = [&] { return (*exe)->Run({*device}).value_or(std::vector<graft::Tensor>{}); };
  const double device_us = TimeRuns(runs, run);
  // The same, waiting for each run's outputs before the next run starts:
  // one run's latency, not the rate of a stream of runs.
  const double latency_us = TimeRuns(runs, [&] {
    std::vector<graft::Tensor> out = run();
    WaitFor(out);
    return out;
  });
  options.keep_outputs_on_device = false;
  absl::StatusOr<std::unique_ptr<graft::Executable>> host_exe =
      (*backend)->Compile(module, options);
  if (!host_exe.ok()) return Fail(host_exe.status().ToString());
  const double host_io_us = TimeRuns(
      runs, [&] { return (*host_exe)->Run({host}).value_or(std::vector<graft::Tensor>{}); });
  std::printf(
      "{\"workload\": \"%s\", \"precision\": \"%s\", \"autotune\": %s, \"gemm\": \"%s\", "
      "\"batch\": %lld, "
      "\"init_ms\": %.1f, \"compile_ms\": %.1f, \"first_ms\": %.2f, \"median_us\": %.2f, "
      "\"latency_us\": %.2f, \"host_io_us\": %.2f%s}\n",
      workload.c_str(), precision.c_str(), autotune.c_str(), gemm.c_str(),
      static_cast<long long>(batch), init_ms, compile_ms, first_ms, device_us, latency_us,
      host_io_us,
      int8_share < 0 ? "" : (", \"int8_macs_share\": " + std::to_string(int8_share)).c_str());
  return 0;
}
