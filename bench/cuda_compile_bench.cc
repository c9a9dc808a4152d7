// What a cold compile of the CUDA backend spends on the host, without a
// GPU: building the step program, generating the kernels, and NVRTC
// compiling them for Hopper (sm_90, 132 multiprocessors as on an H100).
// NVRTC is most of a cold compile (docs/benchmarks.md); the rest (module
// load, cuBLASLt's heuristic) needs the GPU and is in gpu_run's compile_ms.
//
//   build/bench/cuda_compile [mlp|stack|MODEL] [--precision f32|tf32|bf16] [--rounds 3]
//       [--layers 12] [--gemm auto|graft|cublaslt] [--describe]
//
// `stack`: --layers transformer-sized feed-forward layers at batch 8
// (768 -> 3072, GELU, 3072 -> 768, residual add), every layer the same
// shapes as in a real model: a repeated layer's kernels compile once.
//
// --describe prints the step program to stderr first.
// Prints one line per round: program, generation and NVRTC milliseconds
// (the units compiled side by side on every core), the kernel launches,
// the translation units and the size of the generated source.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "graph/graph.h"
#include "graph/random_tensor.h"
#include "passes/shape_prop.h"
#include "serialize/model_io.h"
#include "workloads/benchmark_mlp.h"

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "cuda_compile: %s\n", what.c_str());
  return 1;
}

graft::Module FeedForwardStack(int layers) {
  graft::Module module;
  graft::Graph& g = module.graph();
  graft::Node* h = g.Placeholder("x", graft::TensorType{graft::DType::kF32, {8, 768}});
  auto weight = [&](const std::string& name, std::vector<int64_t> dims,
                    uint64_t seed) -> graft::Node* {
    graft::Tensor t = graft::RandomTensor(graft::DType::kF32, dims, seed);
    const graft::TensorType type = t.type();
    module.SetTensor(name, std::move(t));
    return g.GetAttr(name, type);
  };
  for (int l = 0; l < layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + "_";
    graft::Node* w1 = weight(p + "w1", {3072, 768}, 4 * l);
    graft::Node* b1 = weight(p + "b1", {3072}, 4 * l + 1);
    graft::Node* w2 = weight(p + "w2", {768, 3072}, 4 * l + 2);
    graft::Node* b2 = weight(p + "b2", {768}, 4 * l + 3);
    graft::Node* up = g.CallFunction("linear", {h, w1, b1});
    graft::Node* down = g.CallFunction("linear", {g.CallFunction("gelu", {up}), w2, b2});
    h = g.CallFunction("add", {h, down});
  }
  g.Output(h);
  (void)graft::passes::PropagateShapes(module);
  return module;
}

}  // namespace

int main(int argc, char** argv) {
  std::string workload = argc > 1 && argv[1][0] != '-' ? argv[1] : "mlp";
  std::string precision = "bf16", gemm = "auto";
  int rounds = 3, layers = 12;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--precision") precision = argv[i + 1];
    if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
    if (flag == "--layers") layers = std::atoi(argv[i + 1]);
    if (flag == "--gemm") gemm = argv[i + 1];
  }
  bool describe = false;
  for (int i = 1; i < argc; ++i) describe |= std::string(argv[i]) == "--describe";
  graft::Module module;
  if (workload == "mlp") {
    module = graft::BuildBenchmarkMlp(32, 1);
  } else if (workload == "stack") {
    module = FeedForwardStack(layers);
  } else {
    absl::StatusOr<graft::Module> loaded = graft::LoadModel(workload);
    if (!loaded.ok()) return Fail(loaded.status().ToString());
    module = *std::move(loaded);
  }
  std::vector<graft::TensorType> types;
  for (const graft::ValueSignature& s : graft::PlaceholderSignature(module.graph())) {
    if (!s.type.has_value()) return Fail("an input has no type");
    for (graft::Dim d : s.type->shape) {
      if (d.is_symbolic()) return Fail("the model's inputs have symbolic dims");
    }
    types.push_back(*s.type);
  }
  graft::cuda::CudaOptions options;
  options.precision = precision;
  options.gemm = gemm;
  for (int round = 0; round < rounds; ++round) {
    const double t0 = NowMs();
    absl::StatusOr<graft::StepProgram> program =
        graft::cuda::BuildCudaProgram(module, types, options);
    if (!program.ok()) return Fail(program.status().ToString());
    if (describe && round == 0) std::fprintf(stderr, "%s", program->Describe().c_str());
    const double t1 = NowMs();
    absl::StatusOr<graft::cuda::KernelSource> source =
        graft::cuda::GenerateKernels(*program, options, 132, 90);
    if (!source.ok()) return Fail(source.status().ToString());
    const double t2 = NowMs();
    absl::StatusOr<std::vector<std::string>> cubins =
        graft::cuda::CompileUnitsToCubins(source->units, "sm_90");
    if (!cubins.ok()) return Fail(cubins.status().ToString());
    const double t3 = NowMs();
    size_t launches = 0, bytes = 0;
    for (const auto& step : source->launches) launches += step.size();
    for (const std::string& unit : source->units) bytes += unit.size();
    std::printf(
        "{\"workload\": \"%s\", \"precision\": \"%s\", \"program_ms\": %.2f, "
        "\"generate_ms\": %.2f, \"nvrtc_ms\": %.1f, \"threads\": %u, \"launches\": %zu, "
        "\"units\": %zu, \"source_bytes\": %zu}\n",
        workload.c_str(), precision.c_str(), t1 - t0, t2 - t1, t3 - t2,
        std::thread::hardware_concurrency(), launches, source->units.size(), bytes);
  }
  return 0;
}
