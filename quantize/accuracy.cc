#include "quantize/accuracy.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/interp/interpreter.h"
#include "passes/node_util.h"
#include "passes/quantize/convert.h"
#include "support/status_macros.h"

namespace graft::quantize {
namespace {

// Sums of squares of a reference and of its error, over many tensors.
struct NoiseSums {
  double signal = 0, noise = 0;

  void Add(const Tensor& reference, const Tensor& test) {
    const std::vector<double> r = reference.ToDoubles(), t = test.ToDoubles();
    for (size_t i = 0; i < r.size() && i < t.size(); ++i) {
      signal += r[i] * r[i];
      noise += (r[i] - t[i]) * (r[i] - t[i]);
    }
  }
  double Db() const {
    if (noise == 0) return std::numeric_limits<double>::infinity();
    if (signal == 0) return -std::numeric_limits<double>::infinity();
    return 10 * std::log10(signal / noise);
  }
};

// The float model's value of every call, by name.
struct FloatValue {
  std::string target;
  Tensor value;
};
using FloatValues = absl::flat_hash_map<std::string, FloatValue>;

class RecordingInterpreter : public interp::Interpreter {
 public:
  RecordingInterpreter(const Module& module, FloatValues& values)
      : Interpreter(module), values_(values) {}

 protected:
  absl::StatusOr<interp::Value> CallFunction(const Node& node) override {
    ASSIGN_OR_RETURN(interp::Value value, Interpreter::CallFunction(node));
    if (value.is_tensor()) values_[node.name()] = {node.target(), value.tensor()};
    return value;
  }

 private:
  FloatValues& values_;
};

// Runs the quantized module with every call taking the float model's value
// except what convert added (quantize, dequantize), so that each quantized
// call reads float inputs, quantized as it quantizes them. A quantized
// call is computed and recorded, and then passes on the float value too:
// errors do not add up even along a chain of quantized calls.
class ForcedInterpreter : public interp::Interpreter {
 public:
  ForcedInterpreter(const Module& module, const FloatValues& float_values,
                    const absl::flat_hash_set<std::string>& watched)
      : Interpreter(module), float_values_(float_values), watched_(watched) {}

  // The quantized calls' own results.
  const absl::flat_hash_map<std::string, Tensor>& seen() const { return seen_; }

 protected:
  absl::StatusOr<interp::Value> CallFunction(const Node& node) override {
    auto forced = float_values_.find(node.name());
    const bool known = forced != float_values_.end() && forced->second.target == node.target();
    if (watched_.contains(node.name())) {
      ASSIGN_OR_RETURN(interp::Value value, Interpreter::CallFunction(node));
      if (value.is_tensor()) seen_[node.name()] = value.tensor();
      if (!known) return value;
    }
    if (known) return interp::Value(forced->second.value);
    return Interpreter::CallFunction(node);
  }

 private:
  const FloatValues& float_values_;
  const absl::flat_hash_set<std::string>& watched_;
  absl::flat_hash_map<std::string, Tensor> seen_;
};

bool ReadsDequantized(const Node& n) {
  for (const Node* input : n.inputs()) {
    if (input->is_call("dequantize")) return true;
  }
  return false;
}

}  // namespace

double Sqnr(const Tensor& reference, const Tensor& test) {
  NoiseSums sums;
  sums.Add(reference, test);
  return sums.Db();
}

std::string AccuracyReport::ToString() const {
  std::string text = absl::StrFormat("%-32s %-26s %12s %12s\n", "quantized call", "op",
                                     "weight SQNR", "output SQNR");
  for (const NodeAccuracy& n : nodes) {
    absl::StrAppend(&text, absl::StrFormat("%-32s %-26s %9.1f dB %9.1f dB\n", n.name, n.op,
                                           n.weight_sqnr, n.output_sqnr));
  }
  absl::StrAppend(&text, absl::StrFormat("model output SQNR: %.1f dB\n", model_sqnr));
  for (size_t i = 0; i < kept_float.size(); ++i) {
    absl::StrAppend(&text, "kept float: ", kept_float[i], " (", kept_float_reasons[i], ")\n");
  }
  return text;
}

absl::StatusOr<AccuracyReport> MeasureAccuracy(const Module& original, const Module& quantized,
                                               absl::Span<const Sample> samples,
                                               const passes::quantize::QuantConfig& config) {
  // The quantized calls, and the node that holds each one's result.
  std::vector<const Node*> calls;
  absl::flat_hash_set<std::string> watched;
  for (const Node* n : quantized.graph().nodes()) {
    if (!config.Quantizes(*n) || !ReadsDequantized(*n)) continue;
    calls.push_back(n);
    watched.insert(n->name());
  }
  NoiseSums model;
  absl::flat_hash_map<std::string, NoiseSums> per_call;
  interp::Interpreter plain(quantized);
  for (const Sample& sample : samples) {
    FloatValues float_values;
    RecordingInterpreter reference(original, float_values);
    ASSIGN_OR_RETURN(std::vector<Tensor> want, reference.Run(sample));
    ASSIGN_OR_RETURN(std::vector<Tensor> got, plain.Run(sample));
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) model.Add(want[i], got[i]);
    ForcedInterpreter forced(quantized, float_values, watched);
    RETURN_IF_ERROR(forced.Run(sample).status());
    for (const auto& [call, value] : forced.seen()) {
      auto reference_value = float_values.find(call);
      if (reference_value != float_values.end()) {
        per_call[call].Add(reference_value->second.value, value);
      }
    }
  }
  AccuracyReport report;
  report.model_sqnr = model.Db();
  for (const Node* n : calls) {
    NodeAccuracy a{n->name(), n->target(), std::numeric_limits<double>::infinity(), 0};
    const Node* original_call = original.graph().FindNode(n->name());
    const Node* weight = original_call == nullptr ? nullptr
                                                  : passes::quantize::WeightNode(*original_call);
    const Tensor* w = passes::AttrTensor(original, weight);
    if (w != nullptr && IsFloatingPoint(w->dtype())) {
      const int64_t axis =
          config.per_channel_weights ? passes::quantize::WeightAxis(*original_call) : -1;
      a.weight_sqnr = Sqnr(*w, passes::quantize::DequantizeWeight(passes::quantize::QuantizeWeight(
                                   *w, axis, config.weight_dtype)));
    }
    a.output_sqnr = per_call[n->name()].Db();
    report.nodes.push_back(a);
  }
  return report;
}

}  // namespace graft::quantize
