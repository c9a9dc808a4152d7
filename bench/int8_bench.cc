// The benchmark MLP (1024 -> 4096 -> 4096 -> 1024, batch 32) on the orc
// backend in f32 and quantized to int8 (graft quantize's flow, then
// quantize-lower: oneDNN's int8 matmul, VNNI where the CPU has it), at one
// thread and at all cores, in one run. Prints one table of per-run medians.
//
//   build/bench/int8 [--runs 200]

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

}  // namespace

int main(int argc, char** argv) {
  int runs = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
  }
  const graft::Module model = graft::BuildBenchmarkMlp(32, 1);
  graft::quantize::QuantizeOptions options;
  absl::StatusOr<std::vector<graft::quantize::Sample>> calibration =
      graft::quantize::RandomSamples(model, 8, 1);
  absl::StatusOr<std::vector<graft::quantize::Sample>> evaluation =
      graft::quantize::RandomSamples(model, 2, 2);
  if (!calibration.ok()) return Fail(calibration.status());
  if (!evaluation.ok()) return Fail(evaluation.status());
  options.calibration = *calibration;
  absl::StatusOr<graft::quantize::QuantizeResult> q = graft::quantize::QuantizeModel(model, options);
  if (!q.ok()) return Fail(q.status());
  graft::Module int8 = q->module.Clone();
  absl::StatusOr<graft::passes::quantize::LowerReport> audit = graft::passes::quantize::Lower(int8);
  if (!audit.ok()) return Fail(audit.status());
  std::printf("%s", audit->ToString().c_str());
  absl::StatusOr<graft::quantize::AccuracyReport> accuracy =
      graft::quantize::MeasureAccuracy(model, q->module, *evaluation, options.config);
  if (!accuracy.ok()) return Fail(accuracy.status());
  std::printf("int8 output SQNR (2 held-out samples): %.1f dB\n\n", accuracy->model_sqnr);

  absl::StatusOr<std::unique_ptr<graft::Backend>> orc = graft::CreateBackend("orc");
  if (!orc.ok()) return Fail(orc.status());
  const std::vector<graft::Tensor> inputs = (*evaluation)[0];
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("| threads | f32 us | int8 us | int8 speed-up |\n|---|---|---|---|\n");
  for (int threads : {1, cores}) {
    graft::CompileOptions compile;
    compile.options["threads"] = std::to_string(threads);
    double us[2];
    int k = 0;
    for (const graft::Module* m : std::vector<const graft::Module*>{&model, &int8}) {
      absl::StatusOr<std::unique_ptr<graft::Executable>> e = (*orc)->Compile(*m, compile);
      if (!e.ok()) return Fail(e.status());
      absl::StatusOr<double> t = Time(**e, inputs, runs);
      if (!t.ok()) return Fail(t.status());
      us[k++] = *t;
    }
    std::printf("| %d | %.1f | %.1f | %.2fx |\n", threads, us[0], us[1], us[0] / us[1]);
    if (threads == cores) break;
  }
  return 0;
}
