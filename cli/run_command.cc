// graft run MODEL: runs a model on a backend with inputs from .npy files or
// random ones, prints a summary of the outputs and optionally writes them
// as .npy files or times repeated runs.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "backends/backend.h"
#include "backends/compile_cache.h"
#include "backends/disk_cache.h"
#include "backends/fallback_executable.h"
#include "backends/sharded_executable.h"
#include "backends/step_program.h"
#include "cli/command.h"
#include "cli/input_binding.h"
#include "cli/load_module.h"
#include "cli/output.h"
#include "cli/output_check.h"
#include "cli/output_files.h"
#include "cli/tensor_summary.h"
#include "graph/quant_ops.h"
#include "cli/timing.h"
#include "runtime/compiled_model.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

// The command line of `graft run`.
struct RunArgs {
  std::string model;
  std::string backend = "interp";
  std::vector<std::string> inputs;  // "NAME=FILE.npy".
  bool random_inputs = false;
  uint64_t seed = 0;
  std::string output_dir;
  int64_t bench = 0;              // Timed runs; 0: none.
  std::vector<std::string> dims;  // "SYMBOL=SIZE".
  bool stats = false;
  bool explain = false;
  std::string check;  // A backend to compare the outputs with.
  int threads = -1;   // -1: the backend's default.
  std::string matmul_precision;  // Empty: the backend's default.
  std::string precision;         // cuda: f32, tf32, bf16, f16; empty: default.
  bool autotune = false;
  std::string gemm;  // cuda: auto, graft or cublaslt.
  int gpus = 0;  // > 0: sharded over that many ranks.
  std::string shard_by = "tensor";
};

// Whether `module` quantizes values (quantize steps or int8 products).
bool Quantized(const Module& module) {
  for (const Node* n : module.graph().nodes()) {
    if (IsQuantizeOp(*n) || n->is_call(kQuantizedLinearOp) || n->is_call(kQuantizedConv2dOp) ||
        n->is_call(kDynamicQuantizedLinearOp)) {
      return true;
    }
  }
  return false;
}

// The names of a run's outputs: the signature's when it has one per output
// (it may not when a tuple's types are unknown), else "output_<i>".
std::vector<std::string> OutputNames(const Executable& executable,
                                     size_t count) {
  const std::vector<ValueSignature>& signature = executable.output_signature();
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    names.push_back(signature.size() == count ? signature[i].name
                                              : absl::StrCat("output_", i));
  }
  return names;
}

std::string DescribeInputs(absl::Span<const ValueSignature> placeholders,
                           const BoundInputs& inputs) {
  std::string out;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    absl::StrAppend(&out, "input ", placeholders[i].name, ": ",
                    inputs.tensors[i].TypeString(), " from ", inputs.sources[i],
                    "\n");
  }
  return out;
}

std::string DescribeOutputs(absl::Span<const std::string> names,
                            absl::Span<const Tensor> outputs) {
  std::string out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::StrAppend(&out, "output ", names[i], ": ", outputs[i].TypeString(),
                    " = ", FormatValues(outputs[i]), "\n  ",
                    FormatStats(outputs[i]), "\n");
  }
  return out;
}

// Runs `executable` `runs` more times on `inputs` and reports the median and
// fastest time.
absl::StatusOr<std::string> Bench(Executable& executable,
                                  absl::Span<const Tensor> inputs,
                                  int64_t runs) {
  std::vector<double> seconds;
  seconds.reserve(runs);
  // Long benchmarks show progress on a terminal, a few times a second.
  const bool progress = ::isatty(::fileno(stderr)) == 1;
  Stopwatch total;
  double last_report = 0;
  for (int64_t i = 0; i < runs; ++i) {
    Stopwatch watch;
    absl::StatusOr<std::vector<Tensor>> outputs = executable.Run(inputs);
    seconds.push_back(watch.Seconds());
    if (!outputs.ok()) return outputs.status();
    if (progress && total.Seconds() - last_report > 0.25) {
      last_report = total.Seconds();
      std::fprintf(stderr, "\rbench: %lld/%lld runs",
                   static_cast<long long>(i + 1), static_cast<long long>(runs));
    }
  }
  if (last_report > 0) std::fprintf(stderr, "\r\033[K");  // Clears the line.
  return absl::StrCat(
      "bench: ", runs, runs == 1 ? " run" : " runs",
      " after 1 warm-up run: median ", FormatDuration(Median(seconds)),
      ", min ",
      FormatDuration(*std::min_element(seconds.begin(), seconds.end())), "\n");
}

// The types the module is compiled for: each placeholder's declared type
// (symbolic dims stay symbolic, so other sizes reuse the executable), or the
// input's own type where the placeholder has none.
std::vector<TensorType> CompileTypes(
    absl::Span<const ValueSignature> placeholders,
    absl::Span<const Tensor> inputs) {
  std::vector<TensorType> types;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    types.push_back(placeholders[i].type.value_or(inputs[i].type()));
  }
  return types;
}

// `graft run --explain`: the graph breaks and partitions, as
// torch._dynamo.explain lists them.
std::string Explain(absl::string_view backend, const CompileReport& report) {
  const int fallback = report.partitions - report.backend_partitions;
  std::string text = absl::StrCat(
      "explain: backend ", backend, ", ", report.breaks.size(), " graph break",
      report.breaks.size() == 1 ? "" : "s", ", ", report.partitions,
      " partition", report.partitions == 1 ? "" : "s", " (",
      report.backend_partitions, " on ", backend);
  if (fallback > 0) absl::StrAppend(&text, ", ", fallback, " on interp");
  absl::StrAppend(&text, ")\n");
  for (const GraphBreak& b : report.breaks) {
    absl::StrAppend(&text, "  graph break: ", b.node, " (", b.op,
                    "): ", b.reason, "\n");
  }
  return text;
}

std::string Stats(const CompileCacheStats& stats, const ExecutableInfo& info,
                  const DiskCache& disk, bool backend_uses_disk) {
  std::string text = absl::StrCat(
      "stats: traces ", stats.traces, ", compiles ", stats.compiles,
      ", memory hits ", stats.memory_hits, ", disk hits ", stats.disk_hits,
      ", damaged disk entries ", stats.disk_damaged, ", compile time ",
      FormatDuration(stats.compile_seconds), "\n");
  absl::StrAppend(
      &text, "stats: disk cache ", disk.dir(),
      backend_uses_disk ? "" : " (unused: the backend keeps nothing)", "\n");
  if (info.intermediate_bytes > 0) {
    absl::StrAppend(&text, "stats: memory plan ", info.arena_bytes,
                    " bytes of arena for ", info.intermediate_bytes,
                    " bytes of intermediates\n");
  }
  return text;
}

// A compiled model file (runtime/compiled_model.h) as an Executable, so
// that `graft run` times and reports it as it does a compiled module.
class CompiledModelExecutable : public Executable {
 public:
  explicit CompiledModelExecutable(std::unique_ptr<runtime::CompiledModel> model)
      : model_(std::move(model)) {
    inputs_ = Signature(model_->inputs());
    outputs_ = Signature(model_->outputs());
  }
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) override {
    return model_->Run(inputs);
  }
  const std::vector<ValueSignature>& input_signature() const override { return inputs_; }
  const std::vector<ValueSignature>& output_signature() const override { return outputs_; }

 private:
  static std::vector<ValueSignature> Signature(const std::vector<runtime::ValueSpec>& values) {
    std::vector<ValueSignature> signature;
    for (const runtime::ValueSpec& v : values) {
      TensorType type;
      type.dtype = v.dtype;
      for (int64_t d : v.dims) type.shape.push_back(Dim(d));
      signature.push_back({v.name, type});
    }
    return signature;
  }

  std::unique_ptr<runtime::CompiledModel> model_;
  std::vector<ValueSignature> inputs_, outputs_;
};

// The options of `graft run` that need a module or a compiler.
absl::Status CheckCompiledModelArgs(const RunArgs& args) {
  std::vector<std::string> bad;
  if (args.backend != "interp" && args.backend != "orc") bad.push_back("--backend");
  if (!args.check.empty()) bad.push_back("--check");
  if (args.explain) bad.push_back("--explain");
  if (args.stats) bad.push_back("--stats");
  if (args.gpus > 0) bad.push_back("--gpus");
  if (args.autotune) bad.push_back("--autotune");
  if (!args.gemm.empty()) bad.push_back("--gemm");
  if (!args.precision.empty()) bad.push_back("--precision");
  if (!args.matmul_precision.empty()) bad.push_back("--matmul-precision");
  if (bad.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      absl::StrJoin(bad, ", "), ": not for a compiled model file, which holds code already "
      "compiled (for orc); compile the model again to change how"));
}

// `graft run MODEL.gcx`: loads the file with graft::runtime and runs it.
absl::Status RunCompiledModel(const RunArgs& args) {
  RETURN_IF_ERROR(CheckCompiledModelArgs(args));
  runtime::LoadOptions load;
  load.threads = args.threads;
  Stopwatch load_watch;
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::CompiledModel> model,
                   runtime::CompiledModel::Load(args.model, load));
  const double load_seconds = load_watch.Seconds();
  CompiledModelExecutable executable(std::move(model));
  ASSIGN_OR_RETURN(std::vector<GivenInput> given, ReadGivenInputs(args.inputs));
  ASSIGN_OR_RETURN(SymbolBindings dims, ParseDims(args.dims));
  ASSIGN_OR_RETURN(
      BoundInputs inputs,
      BindInputs(executable.input_signature(), given,
                 args.random_inputs ? std::optional<uint64_t>(args.seed) : std::nullopt, dims));
  Stopwatch run_watch;
  ASSIGN_OR_RETURN(std::vector<Tensor> outputs, executable.Run(inputs.tensors));
  const double run_seconds = run_watch.Seconds();
  const std::vector<std::string> names = OutputNames(executable, outputs.size());
  std::string text = DescribeInputs(executable.input_signature(), inputs);
  absl::StrAppend(&text, DescribeOutputs(names, outputs));
  absl::StrAppend(&text, "compiled model: load ", FormatDuration(load_seconds), ", run ",
                  FormatDuration(run_seconds), "\n");
  if (!args.output_dir.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> written,
                     WriteOutputFiles(args.output_dir, OutputFileNames(names), outputs));
    for (const std::string& path : written) absl::StrAppend(&text, "wrote ", path, "\n");
  }
  RETURN_IF_ERROR(WriteStdout(text));
  if (args.bench > 0) {
    ASSIGN_OR_RETURN(std::string bench, Bench(executable, inputs.tensors, args.bench));
    return WriteStdout(bench);
  }
  return absl::OkStatus();
}

// An importer's message in the words of graft run's command line.
absl::Status InCommandLineWords(const absl::Status& status) {
  constexpr absl::string_view kHow = "--input NAME=FILE.npy or --dim SYMBOL=SIZE";
  std::string text = absl::StrReplaceAll(
      status.message(), {{"OnnxImportOptions::input_shapes or dim_values", kHow},
                         {"OnnxImportOptions::input_shapes", "--input"}});
  if (absl::EndsWith(text, "give the inputs static shapes")) {
    absl::StrAppend(&text, " (", kHow, ")");
  }
  return absl::Status(status.code(), text);
}

// The model. When its file leaves sizes open that graft cannot keep
// symbolic (an ONNX export with dynamic axes whose reshapes need them),
// it is read again with the sizes of --dim (given inputs are then checked
// against them as usual), else of the given --input files. `dims` is
// emptied when its sizes went into the model itself.
absl::StatusOr<Module> LoadWithInputSizes(const std::string& path,
                                          const std::vector<GivenInput>& given,
                                          SymbolBindings& dims) {
  absl::StatusOr<Module> module = LoadModule(path);
  // Whatever failed may have been for want of sizes (the importer's
  // reasons vary: a reshape, a Range, an Expand over symbolic dims); with
  // sizes at hand, the model is read again, and the later error counts.
  auto needs_sizes = [&] { return !module.ok(); };
  if (!needs_sizes()) return module;
  InputShapeHints shapes;
  for (const auto& [symbol, size] : dims) shapes.dim_values[symbol] = size;
  if (!dims.empty()) module = LoadModule(path, shapes);
  if (needs_sizes() && !given.empty()) {
    for (const GivenInput& g : given) shapes.input_shapes[g.name] = g.tensor.dims();
    module = LoadModule(path, shapes);
  }
  if (!module.ok()) return InCommandLineWords(module.status());
  dims.clear();  // Read with them: the inputs have no symbolic dims left.
  return module;
}

absl::Status RunRun(const RunArgs& args) {
  if (absl::EndsWith(args.model, ".gcx")) return RunCompiledModel(args);
  ASSIGN_OR_RETURN(std::vector<GivenInput> given, ReadGivenInputs(args.inputs));
  ASSIGN_OR_RETURN(SymbolBindings dims, ParseDims(args.dims));
  ASSIGN_OR_RETURN(Module module, LoadWithInputSizes(args.model, given, dims));
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                   CreateBackend(args.backend));

  const std::vector<ValueSignature> placeholders =
      PlaceholderSignature(module.graph());
  ASSIGN_OR_RETURN(
      BoundInputs inputs,
      BindInputs(placeholders, given,
                 args.random_inputs ? std::optional<uint64_t>(args.seed)
                                    : std::nullopt,
                 dims));

  CompileOptions options;
  options.input_types = CompileTypes(placeholders, inputs.tensors);
  if (args.threads >= 0) {
    options.options["threads"] = absl::StrCat(args.threads);
  }
  if (!args.matmul_precision.empty()) {
    options.options["matmul_precision"] = args.matmul_precision;
  }
  if (!args.precision.empty()) options.options["precision"] = args.precision;
  if (args.autotune) options.options["autotune"] = "1";
  if (!args.gemm.empty()) options.options["gemm"] = args.gemm;
  auto disk = std::make_shared<DiskCache>(DiskCache::DefaultDir(),
                                          DiskCache::DefaultMaxBytes());
  CompileCache cache(disk);
  CompileReport report;
  ShardedCompileReport sharded;
  Stopwatch compile_watch;
  std::shared_ptr<Executable> executable;
  if (args.gpus > 0) {
    // Each rank's executable binds its communicator: nothing to cache.
    ASSIGN_OR_RETURN(passes::ShardStrategy strategy, passes::ParseShardStrategy(args.shard_by));
    // Compiled for these inputs' sizes, so that a symbolic batch can split.
    options.input_types.clear();
    for (const Tensor& t : inputs.tensors) options.input_types.push_back(t.type());
    ASSIGN_OR_RETURN(executable, CompileSharded(*backend, module, args.gpus, options, &sharded,
                                                strategy));
    report = sharded.rank0;
  } else {
    ASSIGN_OR_RETURN(executable, cache.GetOrCompile(*backend, module, options, &report));
  }
  const double compile_seconds = compile_watch.Seconds();

  Stopwatch run_watch;
  ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                   executable->Run(inputs.tensors));
  const double run_seconds = run_watch.Seconds();

  const std::vector<std::string> names =
      OutputNames(*executable, outputs.size());
  std::string text = DescribeInputs(placeholders, inputs);
  absl::StrAppend(&text, DescribeOutputs(names, outputs));
  absl::StrAppend(&text, "backend ", args.backend, ": compile ",
                  FormatDuration(compile_seconds), ", run ",
                  FormatDuration(run_seconds), "\n");
  if (args.gpus > 0) {
    absl::StrAppend(&text, "sharded over ", args.gpus, " ranks: ", sharded.shard.Summary(), "\n");
  }
  if (args.explain) absl::StrAppend(&text, Explain(args.backend, report));
  if (!args.check.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<Backend> reference,
                     CreateBackend(args.check));
    CompileOptions reference_options;
    reference_options.input_types = options.input_types;
    ASSIGN_OR_RETURN(std::unique_ptr<Executable> checker,
                     CompileWithFallback(*reference, module, reference_options));
    ASSIGN_OR_RETURN(std::vector<Tensor> expected,
                     checker->Run(inputs.tensors));
    // DESIGN's tolerances: f32 1e-4 for reductions and matrix products
    // (the loosest), tf32 1e-3, bf16 and f16 1e-2; the narrow ones of an
    // output's norm.
    const bool half = args.matmul_precision == "bf16" || args.precision == "bf16" ||
                      args.precision == "f16";
    const bool narrow = half || args.precision == "tf32";
    const double tolerance = half ? 1e-2 : args.precision == "tf32" ? 1e-3 : 1e-4;
    absl::StatusOr<std::string> compared = CompareOutputs(args.check, names, outputs, expected,
                                                          tolerance, narrow, Quantized(module));
    if (!compared.ok()) {
      RETURN_IF_ERROR(WriteStdout(text));
      return compared.status();
    }
    absl::StrAppend(&text, *compared);
  }
  if (args.stats) {
    absl::StrAppend(&text, Stats(cache.stats(), executable->info(), *disk,
                                 !backend->CacheIdentity(options).empty()));
  }
  if (!args.output_dir.empty()) {
    ASSIGN_OR_RETURN(
        std::vector<std::string> written,
        WriteOutputFiles(args.output_dir, OutputFileNames(names), outputs));
    for (const std::string& path : written) {
      absl::StrAppend(&text, "wrote ", path, "\n");
    }
  }
  // Print what is known before a long benchmark starts.
  RETURN_IF_ERROR(WriteStdout(text));
  if (args.bench > 0) {
    ASSIGN_OR_RETURN(std::string bench,
                     Bench(*executable, inputs.tensors, args.bench));
    return WriteStdout(bench);
  }
  return absl::OkStatus();
}

}  // namespace

Command AddRunCommand(CLI::App& graft) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* app = graft.add_subcommand(
      "run",
      "Run a model on a backend with inputs from .npy files or random ones");
  app->add_option(
         "model", args->model,
         "Model file (formats by extension: " + KnownModelExtensions() +
             "), or a compiled model file (.gcx, graft compile)")
      ->required();
  app->add_option("--backend", args->backend,
                  "Backend to run on (" +
                      absl::StrJoin(BackendRegistry::Global().Names(), ", ") +
                      ")")
      ->capture_default_str();
  app->add_option("--input", args->inputs,
                  "NAME=FILE.npy: the value of placeholder NAME (repeatable)")
      ->allow_extra_args(false);
  CLI::Option* random = app->add_flag(
      "--random-inputs", args->random_inputs,
      "Fill placeholders without --input with random values (uniform in "
      "[-1, 1) for floats), reproducible from --seed");
  app->add_option("--seed", args->seed,
                  "Seed of the random inputs; placeholder i uses seed + i")
      ->needs(random)
      ->capture_default_str();
  app->add_option("--dim", args->dims,
                  "SYMBOL=SIZE: the size of a symbolic dim for --random-inputs "
                  "(repeatable)")
      ->allow_extra_args(false);
  app->add_flag("--explain", args->explain,
                "List the nodes the backend cannot run (graph breaks, run by "
                "the interpreter instead) and the partitions");
  app->add_flag("--stats", args->stats,
                "Print the compile cache's counters (traces, compiles, memory "
                "and disk hits, compile time) and the memory plan");
  app->add_option("--check", args->check,
                  "Also run on BACKEND (e.g. interp) and report the largest "
                  "error of each output; fails beyond 1e-4 relative");
  app->add_option("--threads", args->threads,
                  "Threads of the backend's large kernels (orc; default: all "
                  "cores)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--matmul-precision", args->matmul_precision,
                  "f32, or bf16: matrix products by constant weights multiply in "
                  "bf16 (orc, on CPUs with AVX512_BF16), as "
                  "torch.set_float32_matmul_precision('medium')")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app->add_option("--precision", args->precision,
                  "cuda: f32, tf32 (f32 products on the tensor cores, as "
                  "torch.set_float32_matmul_precision('high')), bf16 or f16 (the "
                  "float model cast to it; inputs and outputs stay f32)")
      ->check(CLI::IsMember({"f32", "tf32", "bf16", "f16"}));
  app->add_option("--gpus", args->gpus,
                  "Tensor parallel over N ranks (the shard pass, docs/multi-gpu.md): "
                  "rank r on GPU r with NCCL on the cuda backend; N ranks in this "
                  "process on the host backends")
      ->check(CLI::Range(1, 1024));
  app->add_option("--shard-by", args->shard_by,
                  "With --gpus: tensor (split the linear layers' weights, Megatron style) "
                  "or batch (each rank runs the whole model on its rows of the batch)")
      ->check(CLI::IsMember({"tensor", "batch"}))
      ->capture_default_str();
  app->add_flag("--autotune", args->autotune,
                "cuda: time cuBLASLt's candidate algorithms for each matrix "
                "product at compile time and keep the fastest (cached on disk)");
  app->add_option("--gemm", args->gemm,
                  "cuda: which code runs the matrix products: auto (graft's own kernels for "
                  "linear layers of at most 64 rows and bf16/f16 convolutions where they "
                  "are faster, cuBLASLt for the rest), graft (graft's kernels wherever they "
                  "can run) or cublaslt")
      ->check(CLI::IsMember({"auto", "graft", "cublaslt"}));
  app->add_option("--output-dir", args->output_dir,
                  "Write each output to DIR/<output name>.npy (DIR/output.npy "
                  "for a single output)");
  app->add_option("--bench", args->bench,
                  "After the first run, time N more runs and print the "
                  "median and fastest")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            int64_t runs = 0;
            if (absl::SimpleAtoi(value, &runs) && runs >= 1) return "";
            return "the number of runs must be at least 1, got '" + value + "'";
          },
          "N>=1"));
  return Command{app, [args] { return RunRun(*args); }};
}

}  // namespace graft::cli
