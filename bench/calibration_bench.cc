// Post-training quantization of the benchmark MLP (1024 -> 4096 -> 4096 ->
// 1024, batch 32) on the interpreter: what one calibration pass costs
// beside one float pass over the same samples (the target: at most 3x),
// and the model's output SQNR on held-out inputs for each calibrator, all
// chosen from that one pass. Prints one table.
//
//   build/bench/calibration [--samples 16] [--held-out 4]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/interp/interpreter.h"
#include "passes/quantize/convert.h"
#include "passes/quantize/prepare.h"
#include "passes/shape_prop.h"
#include "quantize/accuracy.h"
#include "quantize/calibration.h"
#include "workloads/benchmark_mlp.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "calibration: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  namespace pq = graft::passes::quantize;
  int samples = 16, held_out = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--samples") samples = std::atoi(argv[i + 1]);
    if (flag == "--held-out") held_out = std::atoi(argv[i + 1]);
  }
  graft::Module model = graft::BuildBenchmarkMlp(32, 1);
  if (absl::Status s = graft::passes::PropagateShapes(model).status(); !s.ok()) return Fail(s);
  absl::StatusOr<std::vector<graft::quantize::Sample>> calibration =
      graft::quantize::RandomSamples(model, samples, 1);
  absl::StatusOr<std::vector<graft::quantize::Sample>> evaluation =
      graft::quantize::RandomSamples(model, held_out, 1000003);
  if (!calibration.ok()) return Fail(calibration.status());
  if (!evaluation.ok()) return Fail(evaluation.status());

  graft::interp::Interpreter plain(model);
  const double t0 = Now();
  for (const auto& sample : *calibration) {
    if (absl::Status s = plain.Run(sample).status(); !s.ok()) return Fail(s);
  }
  const double float_s = Now() - t0;

  graft::Module prepared = model.Clone();
  absl::StatusOr<pq::PrepareReport> report = pq::Prepare(prepared, {});
  if (!report.ok()) return Fail(report.status());
  const double t1 = Now();
  absl::StatusOr<graft::quantize::CalibrationStats> stats =
      graft::quantize::Calibrate(prepared, *calibration);
  if (!stats.ok()) return Fail(stats.status());
  const double calibrate_s = Now() - t1;
  std::printf("%d samples of f32[32,1024]: float pass %.3f s, calibration pass %.3f s "
              "(%.2fx), %d observers\n\n",
              samples, float_s, calibrate_s, calibrate_s / float_s, report->observers);

  // Each calibrator from the one pass, with int8 and with fp8 (e4m3)
  // activations and weights.
  std::string rows =
      "| calibrator | int8 model output SQNR (dB) | fp8 e4m3 model output SQNR (dB) |\n"
      "|---|---|---|\n";
  for (pq::Calibrator c : {pq::Calibrator::kMinMax, pq::Calibrator::kPercentile,
                           pq::Calibrator::kEntropy, pq::Calibrator::kMse}) {
    rows += "| " + std::string(pq::CalibratorName(c)) + " |";
    for (graft::DType dtype : {graft::DType::kI8, graft::DType::kF8E4M3}) {
      pq::QuantConfig config;
      config.calibrator = c;
      config.activation_dtype = dtype;
      config.weight_dtype = dtype;
      graft::Module calibrated = prepared.Clone();
      if (absl::Status s = graft::quantize::ApplyCalibration(calibrated, *stats, config);
          !s.ok()) {
        return Fail(s);
      }
      if (absl::Status s = pq::Convert(calibrated, config).status(); !s.ok()) return Fail(s);
      absl::StatusOr<graft::quantize::AccuracyReport> accuracy =
          graft::quantize::MeasureAccuracy(model, calibrated, *evaluation, config);
      if (!accuracy.ok()) return Fail(accuracy.status());
      std::printf("%s %s:\n%s\n", std::string(pq::CalibratorName(c)).c_str(),
                  std::string(graft::DTypeName(dtype)).c_str(), accuracy->ToString().c_str());
      rows += " " + std::to_string(accuracy->model_sqnr).substr(0, 5) + " |";
    }
    rows += "\n";
  }
  std::printf("on %d held-out samples:\n%s", held_out, rows.c_str());
  return 0;
}
