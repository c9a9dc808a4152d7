// graft compile MODEL --backend orc -o MODEL.gcx: compiles a model ahead of
// time into one file that graft::runtime (and `graft run`) loads and runs
// with no compiler present.

#include <cstdio>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/backend.h"
#include "backends/interp/constant_evaluator.h"
#include "cli/command.h"
#include "cli/input_binding.h"
#include "cli/load_module.h"
#include "cli/output.h"
#include "cli/timing.h"
#include "graph/file_io.h"
#include "graph/verifier.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "passes/plugin_loader.h"
#include "runtime/compiled_model.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

struct CompileArgs {
  std::string model;
  std::string backend = "orc";
  std::string pipeline;
  std::vector<std::string> plugins;
  std::vector<std::string> dims;  // "SYMBOL=SIZE".
  int threads = -1;
  std::string matmul_precision;
  std::string target_cpu;
  std::string output;
};

// The input types the file is compiled for: the placeholders' own, with
// every symbolic dim sized by --dim.
absl::StatusOr<std::vector<TensorType>> FixedInputTypes(const Module& module,
                                                        const std::vector<std::string>& dims) {
  ASSIGN_OR_RETURN(SymbolBindings sizes, ParseDims(dims));
  const std::vector<ValueSignature> placeholders = PlaceholderSignature(module.graph());
  // Random inputs bind each placeholder to a concrete type, with the errors
  // `graft run` gives for a symbol left unsized.
  ASSIGN_OR_RETURN(BoundInputs bound, BindInputs(placeholders, {}, uint64_t{0}, sizes));
  std::vector<TensorType> types;
  for (const Tensor& t : bound.tensors) types.push_back(t.type());
  return types;
}

// The metadata of a compiled model file, without loading its code.
absl::StatusOr<runtime::ArtifactMetadata> ReadMetadata(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  ASSIGN_OR_RETURN(runtime::ArtifactView view, runtime::ParseArtifact(bytes));
  return view.metadata;
}

absl::Status RunPipeline(const CompileArgs& args, Module& module) {
  if (args.pipeline.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(passes::Pipeline pipeline, passes::Pipeline::FromString(args.pipeline));
  passes::PassContext ctx;
  ctx.constant_evaluator = interp::EvaluateNode;  // For fold-constants.
  absl::StatusOr<bool> changed = pipeline.Run(module, ctx);
  for (const std::string& note : ctx.notes()) {
    std::fprintf(stderr, "graft: warning: %s\n", note.c_str());
  }
  return changed.status();
}

std::string Signature(const std::vector<runtime::ValueSpec>& values) {
  std::vector<std::string> parts;
  for (const runtime::ValueSpec& v : values) {
    parts.push_back(absl::StrCat(v.name, ": ", DTypeName(v.dtype), "[",
                                 absl::StrJoin(v.dims, ","), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

absl::Status RunCompile(const CompileArgs& args) {
  if (!absl::EndsWith(args.output, ".gcx")) {
    return absl::InvalidArgumentError(
        absl::StrCat("-o ", args.output, ": a compiled model file ends in .gcx"));
  }
  for (const std::string& path : args.plugins) RETURN_IF_ERROR(passes::LoadPassPlugin(path));
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(args.backend));
  ASSIGN_OR_RETURN(Module module, LoadModule(args.model));
  if (absl::Status s = Verify(module); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(args.model, " is not a valid model: ", s.message()));
  }
  RETURN_IF_ERROR(RunPipeline(args, module));
  CompileOptions options;
  ASSIGN_OR_RETURN(options.input_types, FixedInputTypes(module, args.dims));
  if (args.threads >= 0) options.options["threads"] = absl::StrCat(args.threads);
  if (!args.matmul_precision.empty()) {
    options.options["matmul_precision"] = args.matmul_precision;
  }
  if (!args.target_cpu.empty()) options.options["target_cpu"] = args.target_cpu;
  Stopwatch watch;
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable, backend->Compile(module, options));
  if (absl::Status s = backend->WriteCompiledModel(*executable, args.output); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(args.output, ": ", s.message()));
  }
  const double compile_seconds = watch.Seconds();
  // What graft::runtime makes of the file, as a check and a summary.
  Stopwatch load_watch;
  // Code for another CPU is checked as that CPU would load it.
  runtime::LoadOptions check;
  std::set<std::string> target_features;
  absl::StatusOr<std::unique_ptr<runtime::CompiledModel>> loaded;
  if (!args.target_cpu.empty() && args.target_cpu != "native") {
    absl::StatusOr<runtime::ArtifactMetadata> written = ReadMetadata(args.output);
    if (written.ok()) {
      target_features.insert(written->cpu_features.begin(), written->cpu_features.end());
      check.host_features = &target_features;
    } else {
      loaded = written.status();
    }
  }
  if (check.host_features != nullptr || args.target_cpu.empty() ||
      args.target_cpu == "native") {
    loaded = runtime::CompiledModel::Load(args.output, check);
  }
  if (!loaded.ok()) {
    // A file this graft cannot load is no use to anyone: not left behind.
    std::remove(args.output.c_str());
    return absl::InternalError(absl::StrCat("the written file does not load back (removed): ",
                                            loaded.status().message()));
  }
  std::unique_ptr<runtime::CompiledModel> model = *std::move(loaded);
  const double load_seconds = load_watch.Seconds();
  return WriteStdout(absl::StrCat(
      "wrote ", args.output, " (", model->file_bytes(), " bytes) in ",
      FormatDuration(compile_seconds), "; it loads in ", FormatDuration(load_seconds),
      "\n  inputs: ", Signature(model->inputs()), "\n  outputs: ", Signature(model->outputs()),
      "\n  for: ", model->metadata().target_arch, " with ",
      model->metadata().cpu_features.size(), " CPU features checked at load\n"));
}

}  // namespace

Command AddCompileCommand(CLI::App& graft) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* app = graft.add_subcommand(
      "compile",
      "Compile a model ahead of time into a .gcx file that graft::runtime (and graft run) "
      "loads and runs without a compiler");
  app->add_option("model", args->model,
                  "Model file (formats by extension: " + KnownModelExtensions() + ")")
      ->required();
  app->add_option("-o,--output", args->output, "The compiled model file, OUT.gcx")->required();
  app->add_option("--backend", args->backend, "Backend whose code the file holds (orc)")
      ->capture_default_str();
  app->add_option("-p,--pipeline", args->pipeline,
                  "Passes to run first, e.g. fold-constants,cse,dce (graft passes lists them)");
  app->add_option("--load-pass-plugin", args->plugins, "A pass plugin library (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--dim", args->dims,
                  "SYMBOL=SIZE: the size of a symbolic dim; the file is compiled for fixed "
                  "shapes (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--threads", args->threads,
                  "Threads of the large kernels when the file runs (default: all cores of "
                  "the machine that runs it)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--matmul-precision", args->matmul_precision,
                  "f32, or bf16 (on CPUs with AVX512_BF16), as for graft run")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app->add_option("--target-cpu", args->target_cpu,
                  "The CPU the code is for, by LLVM's name (x86-64-v3, skylake-avx512, znver4, "
                  "...): a file that runs on every CPU with that one's features; default "
                  "native, this machine's (the fastest code, for this kind of CPU only)");
  return Command{app, [args] { return RunCompile(*args); }};
}

}  // namespace graft::cli
