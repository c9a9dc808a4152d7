// The benchmark MLP (1024 -> 4096 -> 4096 -> 1024, batch 32), and any model
// files given, on the orc backend in f32 and quantized to int8 (graft
// quantize's flow, then quantize-lower: oneDNN's int8 matmul and
// convolution, VNNI where the CPU has it), at one thread and at all cores,
// in one run. Prints one table of per-run medians per model.
//
//   build/bench/int8 [--runs 200] [--model FILE]...
//
// The GPT-2-small block (d=768, 12 heads, batch 1, sequence 128):
//   /usr/bin/python3 bench/models/export_gpt2_block.py /tmp/gpt2_b1s128.onnx 1 128
//   build/bench/int8 --model /tmp/gpt2_b1s128.onnx

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "passes/quantize/lower.h"
#include "quantize/accuracy.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"
#include "workloads/benchmark_mlp.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "int8: %s\n", status.ToString().c_str());
  return 1;
}

// Median microseconds of `runs` runs, after ten to warm up.
absl::StatusOr<double> Time(graft::Executable& e, const std::vector<graft::Tensor>& inputs,
                            int runs) {
  for (int i = 0; i < 10; ++i) {
    if (absl::Status s = e.Run(inputs).status(); !s.ok()) return s;
  }
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const double t = Now();
    (void)e.Run(inputs);
    us.push_back((Now() - t) * 1e6);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// f32 against int8 on orc for one model, as one table.
absl::Status Compare(const std::string& name, const graft::Module& model, int runs) {
  std::printf("## %s\n\n", name.c_str());
  graft::quantize::QuantizeOptions options;
  ASSIGN_OR_RETURN(options.calibration, graft::quantize::RandomSamples(model, 8, 1));
  ASSIGN_OR_RETURN(std::vector<graft::quantize::Sample> evaluation,
                   graft::quantize::RandomSamples(model, 2, 2));
  ASSIGN_OR_RETURN(graft::quantize::QuantizeResult q,
                   graft::quantize::QuantizeModel(model, options));
  graft::Module int8 = q.module.Clone();
  ASSIGN_OR_RETURN(graft::passes::quantize::LowerReport audit,
                   graft::passes::quantize::Lower(int8));
  std::printf("%s", audit.ToString().c_str());
  ASSIGN_OR_RETURN(graft::quantize::AccuracyReport accuracy,
                   graft::quantize::MeasureAccuracy(model, q.module, evaluation, options.config));
  std::printf("int8 output SQNR (2 held-out samples): %.1f dB\n\n", accuracy.model_sqnr);
  ASSIGN_OR_RETURN(std::unique_ptr<graft::Backend> orc, graft::CreateBackend("orc"));
  const std::vector<graft::Tensor>& inputs = evaluation[0];
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("| threads | f32 us | int8 us | int8 speed-up |\n|---|---|---|---|\n");
  for (int threads : {1, cores}) {
    graft::CompileOptions compile;
    compile.options["threads"] = std::to_string(threads);
    double us[2];
    int k = 0;
    for (const graft::Module* m : std::vector<const graft::Module*>{&model, &int8}) {
      ASSIGN_OR_RETURN(std::unique_ptr<graft::Executable> e, orc->Compile(*m, compile));
      ASSIGN_OR_RETURN(us[k], Time(*e, inputs, runs));
      ++k;
    }
    std::printf("| %d | %.1f | %.1f | %.2fx |\n", threads, us[0], us[1], us[0] / us[1]);
    if (threads == cores) break;
  }
  std::printf("\n");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 200;
  std::vector<std::string> files;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--model") files.push_back(argv[i + 1]);
  }
  if (absl::Status s = Compare("benchmark MLP, batch 32", graft::BuildBenchmarkMlp(32, 1), runs);
      !s.ok()) {
    return Fail(s);
  }
  for (const std::string& file : files) {
    absl::StatusOr<graft::Module> model = graft::LoadModel(file);
    if (!model.ok()) return Fail(model.status());
    if (absl::Status s = Compare(file, *model, runs); !s.ok()) return Fail(s);
  }
  return 0;
}
