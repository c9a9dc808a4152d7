#include "quantize/calibration.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backends/interp/interpreter.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "graph/random_tensor.h"
#include "serialize/npy.h"
#include "support/status_macros.h"

namespace graft::quantize {
namespace fs = std::filesystem;
namespace {

// The interpreter with every graft::observe's value recorded.
class ObservingInterpreter : public interp::Interpreter {
 public:
  ObservingInterpreter(const Module& module, CalibrationStats& stats)
      : Interpreter(module), stats_(stats) {}

 protected:
  absl::StatusOr<interp::Value> CallFunction(const Node& node) override {
    ASSIGN_OR_RETURN(interp::Value value, Interpreter::CallFunction(node));
    if (node.is_call(kObserveOp) && value.is_tensor()) {
      stats_.observers[node.name()].Add(value.tensor());
    }
    return value;
  }

 private:
  CalibrationStats& stats_;
};

// The seed of input `i` of sample `s`, mixed: models made with small
// seeds (RandomTensor(..., 1) for a weight) must not see their own
// weights again as calibration inputs.
// Each (sample, input) hashes to its own stream: neighbouring seeds of one
// splitmix stream would give shifted copies of one another.
uint64_t SampleSeed(uint64_t seed, int s, size_t i) {
  SplitMix64 mix(seed ^ 0x6a09e667f3bcc909ull);
  SplitMix64 by_sample(mix.Next() ^ (static_cast<uint64_t>(s) * 0xbf58476d1ce4e5b9ull));
  SplitMix64 by_input(by_sample.Next() ^ (static_cast<uint64_t>(i) * 0x94d049bb133111ebull));
  return by_input.Next();
}

// The folder's entries in name order, hidden ones (".ipynb_checkpoints")
// left out.
absl::StatusOr<std::vector<fs::path>> SortedEntries(const fs::path& dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind('.', 0) != 0) entries.push_back(it->path());
  }
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read calibration folder ", dir.string(), ": ", ec.message()));
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

absl::StatusOr<Tensor> ReadSampleFile(const fs::path& path) {
  absl::StatusOr<Tensor> t = ReadNpy(path.string());
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat("calibration sample ", path.string(), ": ", t.status().message()));
  }
  return t;
}

}  // namespace

absl::StatusOr<std::vector<Sample>> RandomSamples(const Module& module, int count, uint64_t seed,
                                                  const SymbolBindings& dims) {
  const std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  std::vector<Sample> samples;
  for (int s = 0; s < count; ++s) {
    Sample sample;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].type.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", inputs[i].name, " has no type to draw random values of"));
      }
      std::vector<int64_t> shape;
      for (const Dim& d : inputs[i].type->shape) {
        if (d.is_constant()) {
          shape.push_back(d.value());
          continue;
        }
        auto bound = dims.find(std::string(d.symbol()));
        if (bound == dims.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "input ", inputs[i].name, " ", inputs[i].type->ToString(), ": give the size of '",
              d.symbol(), "' (--dim ", d.symbol(), "=SIZE)"));
        }
        shape.push_back(bound->second);
      }
      sample.push_back(RandomTensor(inputs[i].type->dtype, shape, SampleSeed(seed, s, i)));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

absl::StatusOr<std::vector<Sample>> LoadSamples(const std::string& dir, const Module& module) {
  const std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("calibration folder ", dir, " does not exist"));
  }
  std::vector<Sample> samples;
  ASSIGN_OR_RETURN(std::vector<fs::path> entries, SortedEntries(dir));
  for (const fs::path& entry : entries) {
    Sample sample;
    if (fs::is_directory(entry, ec)) {
      for (const ValueSignature& input : inputs) {
        const fs::path file = entry / (input.name + ".npy");
        if (!fs::exists(file, ec)) {
          return absl::NotFoundError(absl::StrCat("calibration sample ", entry.string(),
                                                  " has no ", input.name, ".npy"));
        }
        ASSIGN_OR_RETURN(Tensor t, ReadSampleFile(file));
        sample.push_back(std::move(t));
      }
    } else if (entry.extension() == ".npy") {
      if (inputs.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calibration folder ", dir, " holds .npy files, but the model has ", inputs.size(),
            " inputs: give one subfolder per sample with NAME.npy for each input"));
      }
      ASSIGN_OR_RETURN(Tensor t, ReadSampleFile(entry));
      sample.push_back(std::move(t));
    } else {
      continue;
    }
    absl::Status fits = CheckInputs(inputs, sample).status();
    if (!fits.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration sample ", entry.string(), ": ", fits.message()));
    }
    samples.push_back(std::move(sample));
  }
  if (samples.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("calibration folder ", dir,
                                                   " holds no samples (.npy files or folders)"));
  }
  return samples;
}

absl::StatusOr<CalibrationStats> Calibrate(const Module& prepared,
                                           absl::Span<const Sample> samples,
                                           const Progress& progress) {
  CalibrationStats stats;
  ObservingInterpreter interpreter(prepared, stats);
  for (size_t s = 0; s < samples.size(); ++s) {
    absl::Status run = interpreter.Run(samples[s]).status();
    if (!run.ok()) {
      return absl::Status(run.code(),
                          absl::StrCat("calibration sample ", s, ": ", run.message()));
    }
    ++stats.samples;
    if (progress) progress(static_cast<int>(s + 1), static_cast<int>(samples.size()));
  }
  return stats;
}

absl::Status ApplyCalibration(Module& prepared, const CalibrationStats& stats,
                              const passes::quantize::QuantConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  absl::flat_hash_set<const passes::quantize::ActivationOverride*> used;
  for (Node* n : prepared.graph().nodes()) {
    if (!n->is_call(kObserveOp)) continue;
    auto it = stats.observers.find(n->name());
    if (it == stats.observers.end() || it->second.count() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(n->Ref(), " saw no values in calibration"));
    }
    // The value's own settings, where an override names it.
    ASSIGN_OR_RETURN(OpCall observe, OpCall::Bind(*n));
    const Node* value = observe.TensorNode("input");
    const passes::quantize::ActivationOverride* o =
        value == nullptr ? nullptr : config.OverrideFor(value->name());
    if (o != nullptr) used.insert(o);
    const passes::quantize::Calibrator calibrator =
        o != nullptr && o->calibrator.has_value() ? *o->calibrator : config.calibrator;
    const bool own_dtype = o != nullptr && o->dtype.has_value();
    const DType dtype = own_dtype ? *o->dtype : config.activation_dtype;
    const bool symmetric = own_dtype ? dtype == DType::kI8 : config.symmetric_activations;
    const passes::quantize::RangeObserver& observer = it->second;
    passes::quantize::QuantParams p = observer.Params(calibrator, dtype, symmetric);
    if (!own_dtype && config.unsigned_when_nonnegative && dtype == DType::kI8 &&
        observer.min() >= 0) {
      const auto range = observer.Range(calibrator, DType::kU8, /*symmetric=*/false);
      p = passes::quantize::ParamsForRange(0, range.second, DType::kU8, /*symmetric=*/false);
    }
    n->SetKwarg("scale", Argument(p.scale));
    n->SetKwarg("zero_point", Argument(p.zero_point));
    n->SetKwarg("dtype", Argument(p.dtype));
  }
  for (const passes::quantize::ActivationOverride& o : config.overrides) {
    if (!used.contains(&o)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "override '", o.glob, "' matches no quantized activation (a value a quantized call "
          "reads or writes, named by the node that makes it)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace graft::quantize
