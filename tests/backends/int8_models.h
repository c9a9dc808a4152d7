#ifndef GRAFT_TESTS_BACKENDS_INT8_MODELS_H_
#define GRAFT_TESTS_BACKENDS_INT8_MODELS_H_

// Models quantized and lowered as `graft quantize --lower` does, for the
// compiled backends' tests of int8 products (link graft_quantize).

#include <cstdint>
#include <random>
#include <vector>

#include "graph/module.h"
#include "gtest/gtest.h"
#include "passes/quantize/lower.h"
#include "quantize/quantize_model.h"
#include "support/status_matchers.h"

namespace graft::backend_test {

// `model` quantized (u8 after ReLUs, s8 elsewhere; or affine u8
// everywhere), calibrated on four random samples of batch 3, and lowered.
inline Module Int8Lowered(const Module& model, bool affine = false) {
  quantize::QuantizeOptions options;
  if (affine) {
    options.config.activation_dtype = DType::kU8;
    options.config.symmetric_activations = false;
  }
  absl::StatusOr<std::vector<quantize::Sample>> samples =
      quantize::RandomSamples(model, 4, std::random_device{}(), {{"batch", 3}});
  EXPECT_OK(samples.status());
  options.calibration = *samples;
  absl::StatusOr<quantize::QuantizeResult> r = quantize::QuantizeModel(model, options);
  EXPECT_OK(r.status());
  Module lowered = r->module.Clone();
  absl::StatusOr<passes::quantize::LowerReport> audit = passes::quantize::Lower(lowered);
  EXPECT_OK(audit.status());
  EXPECT_FALSE(audit->lowered.empty());
  return lowered;
}

// `model` as `graft quantize --dtype fp8` makes it: activations and
// weights as f8e4m3, the products float (nothing lowers them), calibrated
// on four random samples of batch 3 drawn from `seed`.
inline Module Float8Quantized(const Module& model, uint64_t seed) {
  quantize::QuantizeOptions options;
  options.config.activation_dtype = DType::kF8E4M3;
  options.config.weight_dtype = DType::kF8E4M3;
  absl::StatusOr<std::vector<quantize::Sample>> samples =
      quantize::RandomSamples(model, 4, seed, {{"batch", 3}});
  EXPECT_OK(samples.status());
  options.calibration = *samples;
  absl::StatusOr<quantize::QuantizeResult> r = quantize::QuantizeModel(model, options);
  EXPECT_OK(r.status());
  return r.ok() ? std::move(r->module) : Module();
}

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_INT8_MODELS_H_
