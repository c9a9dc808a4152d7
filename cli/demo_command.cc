// graft demo: the benchmark MLP end to end, as a sequence of steps (trace,
// optimize, run, look at the output) with timings. It is the first thing a
// new user runs, so it stays short and fast. New features add a step to
// DemoSteps() and, if they measure something, a line to the summary.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/backend.h"
#include "backends/compile_cache.h"
#include "backends/interp/constant_evaluator.h"
#include "cli/command.h"
#include "cli/flop_count.h"
#include "cli/input_binding.h"
#include "cli/output.h"
#include "cli/tensor_summary.h"
#include "cli/timing.h"
#include "graph/printer.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"
#include "viz/dot_writer.h"
#include "viz/graphviz_render.h"
#include "workloads/benchmark_mlp.h"

namespace graft::cli {
namespace {

constexpr int64_t kBatch = 32;
constexpr uint64_t kWeightSeed = 0;
constexpr uint64_t kInputSeed = 1000;
constexpr absl::string_view kPipeline =
    "shape-prop,cse,dce,fuse-linear-activation,canonicalize";
constexpr absl::string_view kBackend = "interp";

// What the steps share: the module as it goes through them, what they
// measured, and the summary the last lines print.
struct DemoContext {
  // Where the demo writes its files (pictures).
  std::string output_dir;
  Module module;
  // The module as traced, before the passes, for the before/after pictures.
  std::optional<Module> traced;
  std::vector<Tensor> outputs;
  std::vector<std::string> output_names;
  // Summary entries in step order: "trace 41 ms".
  std::vector<std::string> summary;
  double interp_seconds = 0;  // The interpreter's run, for comparisons.

  // Writes the lines of a step, indented under its heading (empty lines
  // stay empty).
  absl::Status Say(absl::string_view text) {
    std::string indented;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      absl::StrAppend(&indented, line.empty() ? "" : "      ", line, "\n");
    }
    return WriteStdout(indented);
  }
};

// One step of the demo: a heading and the work under it.
struct DemoStep {
  std::string heading;
  std::function<absl::Status(DemoContext&)> run;
};

std::string Megabytes(int64_t bytes) {
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

// "1.2 kB" below a megabyte, else as Megabytes.
std::string FileSize(uintmax_t bytes) {
  if (bytes < 1'000'000) {
    return absl::StrFormat("%.1f kB", static_cast<double>(bytes) / 1e3);
  }
  return Megabytes(static_cast<int64_t>(bytes));
}

// "3 x linear, 2 x relu": how many nodes call each op, by op name.
std::string OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node* node : graph.nodes()) {
    if (node->op() == OpCode::kCallFunction) ++counts[node->target()];
  }
  return absl::StrJoin(counts, ", ", [](std::string* out, const auto& entry) {
    absl::StrAppend(out, entry.second, " x ", entry.first);
  });
}

absl::Status Trace(DemoContext& ctx) {
  Stopwatch watch;
  absl::StatusOr<Module> module = TraceBenchmarkMlp(kBatch, kWeightSeed);
  if (!module.ok()) return module.status();
  const double seconds = watch.Seconds();
  ctx.module = *std::move(module);
  int64_t values = 0;
  int64_t bytes = 0;
  for (const auto& [name, tensor] : ctx.module.tensors()) {
    values += tensor.value.NumElements();
    bytes += static_cast<int64_t>(tensor.value.NumBytes());
  }
  ctx.summary.push_back(absl::StrCat("trace ", FormatDuration(seconds)));
  return ctx.Say(absl::StrCat(
      ctx.module.graph().num_nodes(), " nodes, ", ctx.module.tensors().size(),
      " parameter tensors (", absl::StrFormat("%.1fM", values / 1e6),
      " values, ", Megabytes(bytes), ", random, seed ", kWeightSeed, ") in ",
      FormatDuration(seconds), "\n\n",
      // The graph already ends in a newline.
      absl::StripSuffix(PrintGraph(ctx.module.graph()), "\n")));
}

absl::Status Optimize(DemoContext& ctx) {
  ASSIGN_OR_RETURN(passes::Pipeline pipeline,
                   passes::Pipeline::FromString(kPipeline));
  const size_t before = ctx.module.graph().num_nodes();
  ctx.traced = ctx.module.Clone();
  passes::PassContext pass_ctx;
  pass_ctx.constant_evaluator = interp::EvaluateNode;
  Stopwatch watch;
  RETURN_IF_ERROR(pipeline.Run(ctx.module, pass_ctx).status());
  const double seconds = watch.Seconds();
  ctx.summary.push_back(absl::StrCat("passes ", FormatDuration(seconds)));
  return ctx.Say(absl::StrCat(before, " -> ", ctx.module.graph().num_nodes(),
                              " nodes in ", FormatDuration(seconds), ": ",
                              OpCounts(ctx.module.graph())));
}

// SVG when Graphviz is in the build, DOT text otherwise.
std::string PictureExtension() { return HaveGraphviz() ? ".svg" : ".dot"; }

// Pictures of the model before and after the passes; the "after" one
// highlights what the passes created and shows what they removed as ghosts.
absl::Status Draw(DemoContext& ctx) {
  std::error_code error;
  std::filesystem::create_directories(ctx.output_dir, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot create the directory '", ctx.output_dir, "': ", error.message()));
  }
  const std::string before_path =
      (std::filesystem::path(ctx.output_dir) / ("mlp_before" + PictureExtension()))
          .string();
  const std::string after_path =
      (std::filesystem::path(ctx.output_dir) / ("mlp_after" + PictureExtension()))
          .string();
  Stopwatch watch;
  DotOptions before_options;
  before_options.title = "benchmark MLP as traced";
  if (absl::Status s =
          WriteModulePicture(*ctx.traced, before_path, before_options);
      !s.ok()) {
    return s;
  }
  DotOptions after_options;
  after_options.title = absl::StrCat("after ", kPipeline);
  AddPassDiff(*ctx.traced, ctx.module, "", &after_options);
  RETURN_IF_ERROR(WriteModulePicture(ctx.module, after_path, after_options));
  ctx.summary.push_back(absl::StrCat("pictures ", FormatDuration(watch.Seconds())));
  std::string text = absl::StrCat("before passes: ", before_path,
                                  "\nafter passes:  ", after_path,
                                  " (new nodes highlighted, removed ones dashed)");
  if (!HaveGraphviz()) {
    absl::StrAppend(&text, "\nDOT text: this graft was built without Graphviz; ",
                    "`dot -Tsvg FILE.dot` draws it, or see docs/visualization.md");
  }
  return ctx.Say(text);
}

// Saves the optimized model as .gpb (weights in the mapped side file) and
// runs what loads back, so the rest of the demo works on the file's module.
absl::Status SaveAndLoad(DemoContext& ctx) {
  const std::string path =
      (std::filesystem::path(ctx.output_dir) / "mlp.gpb").string();
  Stopwatch save_watch;
  RETURN_IF_ERROR(SaveModel(ctx.module, path));
  const double save_seconds = save_watch.Seconds();
  Stopwatch load_watch;
  ASSIGN_OR_RETURN(Module loaded, LoadModel(path));
  const double load_seconds = load_watch.Seconds();
  std::error_code error;
  const uintmax_t model_bytes = std::filesystem::file_size(path, error);
  const uintmax_t data_bytes = std::filesystem::file_size(path + ".data", error);
  ctx.module = std::move(loaded);
  ctx.summary.push_back(absl::StrCat("save ", FormatDuration(save_seconds),
                                     ", load ", FormatDuration(load_seconds)));
  return ctx.Say(absl::StrCat(
      path, " (", FileSize(model_bytes), ") and ", path, ".data (",
      FileSize(data_bytes), ") in ",
      FormatDuration(save_seconds), "\nloaded back in ",
      FormatDuration(load_seconds),
      ": the weights are mapped from the file, not copied"));
}

absl::Status Run(DemoContext& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(kBackend));
  const std::vector<ValueSignature> placeholders =
      PlaceholderSignature(ctx.module.graph());
  ASSIGN_OR_RETURN(BoundInputs inputs,
                   BindInputs(placeholders, {}, kInputSeed));
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable,
                   backend->Compile(ctx.module, CompileOptions()));
  Stopwatch watch;
  absl::StatusOr<std::vector<Tensor>> outputs = executable->Run(inputs.tensors);
  if (!outputs.ok()) return outputs.status();
  const double seconds = watch.Seconds();
  ctx.interp_seconds = seconds;
  ctx.outputs = *std::move(outputs);
  for (const ValueSignature& s : executable->output_signature()) {
    ctx.output_names.push_back(s.name);
  }
  const double gflop = CountMatmulFlops(ctx.module.graph()) / 1e9;
  const std::string rate =
      absl::StrFormat("%.2f GFLOP/s", seconds > 0 ? gflop / seconds : 0.0);
  ctx.summary.push_back(
      absl::StrCat("run ", FormatDuration(seconds), " (", rate, ")"));
  std::string text;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    absl::StrAppend(&text, "input ", placeholders[i].name, ": ",
                    inputs.tensors[i].TypeString(), " = ", inputs.sources[i],
                    "\n");
  }
  absl::StrAppend(&text, absl::StrFormat("%.2f", gflop), " GFLOP in ",
                  FormatDuration(seconds), ": ", rate);
  return ctx.Say(text);
}

// The same model compiled by a compiled backend: the cold compile, the
// compile cache's hit on the second request, the median of timed runs,
// and how its output compares with the interpreter's.
absl::Status CompileAndRun(DemoContext& ctx, absl::string_view name) {
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(name));
  const std::vector<ValueSignature> placeholders =
      PlaceholderSignature(ctx.module.graph());
  ASSIGN_OR_RETURN(BoundInputs inputs, BindInputs(placeholders, {}, kInputSeed));
  CompileCache cache;
  Stopwatch cold;
  ASSIGN_OR_RETURN(std::shared_ptr<Executable> executable,
                   cache.GetOrCompile(*backend, ctx.module, CompileOptions()));
  const double cold_seconds = cold.Seconds();
  Stopwatch hit;
  ASSIGN_OR_RETURN(std::shared_ptr<Executable> again,
                   cache.GetOrCompile(*backend, ctx.module, CompileOptions()));
  const double hit_seconds = hit.Seconds();
  ASSIGN_OR_RETURN(std::vector<Tensor> outputs, executable->Run(inputs.tensors));
  std::vector<double> runs;
  for (int i = 0; i < 10; ++i) {
    Stopwatch watch;
    RETURN_IF_ERROR(executable->Run(inputs.tensors).status());
    runs.push_back(watch.Seconds());
  }
  std::sort(runs.begin(), runs.end());
  const double seconds = runs[runs.size() / 2];
  const double gflop = CountMatmulFlops(ctx.module.graph()) / 1e9;
  double max_error = 0, max_ref = 0;
  for (size_t i = 0; i < outputs.size() && i < ctx.outputs.size(); ++i) {
    for (int64_t k = 0; k < outputs[i].NumElements(); ++k) {
      const double ref = ctx.outputs[i].GetAsDouble(k);
      max_error = std::max(max_error, std::abs(outputs[i].GetAsDouble(k) - ref));
      max_ref = std::max(max_ref, std::abs(ref));
    }
  }
  ctx.summary.push_back(absl::StrFormat("%s %s (%.2f GFLOP/s)", name,
                                        FormatDuration(seconds), gflop / seconds));
  return ctx.Say(absl::StrCat(
      "cold compile ", FormatDuration(cold_seconds), ", second compile ",
      FormatDuration(hit_seconds), " (compile cache hit: ",
      cache.stats().memory_hits, ")\n",
      absl::StrFormat("%.2f GFLOP in %s (median of 10 runs): %.2f GFLOP/s\n"
                      "%.0fx the interpreter's speed",
                      gflop, FormatDuration(seconds), gflop / seconds,
                      ctx.interp_seconds / seconds),
      absl::StrFormat("\nlargest difference from the interpreter's output: "
                      "%.2g (relative to its largest value: %.2g)",
                      max_error, max_error / std::max(max_ref, 1e-30))));
}

absl::Status ShowOutput(DemoContext& ctx) {
  std::string text;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const std::string name = i < ctx.output_names.size()
                                 ? ctx.output_names[i]
                                 : absl::StrCat("output_", i);
    if (i > 0) text += "\n";
    absl::StrAppend(&text, name, ": ", ctx.outputs[i].TypeString(), " = ",
                    FormatValues(ctx.outputs[i], 6), "\n",
                    FormatStats(ctx.outputs[i]));
  }
  return ctx.Say(text);
}

// The demo, in order. Later features (JIT backends) add their step here.
std::vector<DemoStep> DemoSteps() {
  std::vector<DemoStep> steps = {
      {"Trace the MLP with the C++ tracer (workloads/benchmark_mlp.cc)",
       &Trace},
      {absl::StrCat("Optimize: ", kPipeline), &Optimize},
      {"Draw the graph before and after the passes", &Draw},
      {"Save the model as .gpb and load it back", &SaveAndLoad},
      {absl::StrCat("Run on the ", kBackend, " backend"), &Run},
  };
  // The compiled backends this graft was built with (docs/building.md)
  // that this machine can run (the cuda backend needs a GPU).
  for (const std::string& name : BackendRegistry::Global().Names()) {
    if (name == kBackend) continue;
    absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(name);
    if (!backend.ok() || !(*backend)->Available({}).ok()) continue;
    steps.push_back({absl::StrCat("Compile and run on the ", name, " backend"),
                     [name](DemoContext& ctx) { return CompileAndRun(ctx, name); }});
  }
  steps.push_back({"Output", &ShowOutput});
  return steps;
}

absl::Status RunDemo(const std::string& output_dir) {
  const std::vector<DemoStep> steps = DemoSteps();
  RETURN_IF_ERROR(WriteStdout(absl::StrCat(
      "graft demo: benchmark MLP 1024-4096-4096-1024 (ReLU), batch ", kBatch,
      ", f32\n")));
  DemoContext ctx;
  ctx.output_dir = output_dir;
  Stopwatch total;
  for (size_t i = 0; i < steps.size(); ++i) {
    RETURN_IF_ERROR(WriteStdout(absl::StrCat("\n[", i + 1, "/", steps.size(),
                                             "] ", steps[i].heading, "\n")));
    if (absl::Status s = steps[i].run(ctx); !s.ok()) {
      return absl::Status(
          s.code(),
          absl::StrCat("demo step '", steps[i].heading, "': ", s.message()));
    }
  }
  return WriteStdout(
      absl::StrCat("\nSummary: ", absl::StrJoin(ctx.summary, ", "), "; total ",
                   FormatDuration(total.Seconds()),
                   "\nMore: graft --help; docs/cli.md "
                   "runs each command on a small model\n"));
}

}  // namespace

Command AddDemoCommand(CLI::App& graft) {
  CLI::App* app = graft.add_subcommand(
      "demo",
      "Trace, optimize and run the benchmark MLP end to end, with timings");
  auto output_dir = std::make_shared<std::string>("graft-demo");
  app->add_option("--output-dir", *output_dir,
                  "Directory for the demo's files (pictures, the .gpb model)")
      ->capture_default_str();
  return Command{app, [output_dir] { return RunDemo(*output_dir); }};
}

}  // namespace graft::cli
