#include "cli/input_binding.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/random_tensor.h"
#include "graph/type_rules.h"
#include "serialize/npy.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

// "input 'x' (in.npy)", the way messages name a given input.
std::string Describe(const GivenInput& input) {
  return absl::StrCat("input '", input.name, "' (", input.source, ")");
}

std::string PlaceholderNames(absl::Span<const ValueSignature> placeholders) {
  if (placeholders.empty()) return "the model has none";
  return absl::StrCat(
      "the model has ",
      absl::StrJoin(placeholders, ", ",
                    [](std::string* out, const ValueSignature& s) {
                      absl::StrAppend(out, s.name);
                    }));
}

// NumPy has no bfloat16, so bf16 tensors travel as f32 files (see
// serialize/npy.h). Such a file fits a bf16 placeholder when every value
// survives the conversion; anything else is a real dtype mismatch.
std::optional<Tensor> ExactBFloat16(const Tensor& f32) {
  Tensor bf16(DType::kBF16, f32.dims());
  for (int64_t i = 0; i < f32.NumElements(); ++i) {
    const double v = f32.GetAsDouble(i);
    bf16.SetFromDouble(i, v);
    const double back = bf16.GetAsDouble(i);
    if (back != v && !(std::isnan(v) && std::isnan(back))) return std::nullopt;
  }
  return bf16;
}

// Checks dtype, rank and constant dims of a given tensor against the
// placeholder's type; converts an exact f32 file for a bf16 placeholder.
absl::StatusOr<Tensor> CheckGiven(const GivenInput& input,
                                  const TensorType& type) {
  Tensor tensor = input.tensor;
  auto mismatch = [&](const std::string& detail) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(input), " is ", tensor.TypeString(), ", but placeholder ",
        input.name, " is ", type.ToString(), ": ", detail));
  };
  if (tensor.dtype() != type.dtype) {
    std::optional<Tensor> converted;
    if (type.dtype == DType::kBF16 && tensor.dtype() == DType::kF32) {
      converted = ExactBFloat16(tensor);
    }
    if (!converted.has_value()) {
      return mismatch(absl::StrCat("dtype ", DTypeName(tensor.dtype()),
                                   ", expected ", DTypeName(type.dtype)));
    }
    tensor = *std::move(converted);
  }
  if (tensor.rank() != type.rank()) {
    return mismatch(
        absl::StrCat("rank ", tensor.rank(), ", expected ", type.rank()));
  }
  for (size_t d = 0; d < type.shape.size(); ++d) {
    const Dim dim = type.shape[d];
    if (dim.is_constant() && dim.value() != tensor.dims()[d]) {
      return mismatch(absl::StrCat("dim ", d, " is ", tensor.dims()[d],
                                   ", expected ", dim.value()));
    }
  }
  return tensor;
}

// Binds the symbolic dims of the given inputs and checks that each symbol
// gets one size. Plain symbols ("batch") bind first; derived ones
// ("128*batch") are then checked against the product they stand for, or
// bound by name when it mentions a symbol no input binds.
class SymbolBinder {
 public:
  // A size fixed on the command line (--dim), before any input binds.
  void Preset(const std::string& symbol, int64_t size) {
    bindings_[symbol] = size;
    bound_by_[symbol] = absl::StrCat("--dim ", symbol, "=", size);
  }

  absl::Status Bind(const GivenInput& input, const Tensor& tensor,
                    const TensorType& type, bool derived) {
    for (size_t d = 0; d < type.shape.size(); ++d) {
      if (type.shape[d].is_constant()) continue;
      std::string symbol(type.shape[d].symbol());
      if ((symbol.find('*') != std::string::npos) != derived) continue;
      const int64_t size = tensor.dims()[d];
      if (derived) {
        std::optional<int64_t> value =
            rules::EvaluateDim(type.shape[d], bindings_);
        if (value.has_value()) {
          if (*value == size) continue;
          return absl::InvalidArgumentError(
              absl::StrCat(Describe(input), ": dim ", d, " (", symbol, ") is ",
                           size, ", but the sizes the other inputs bind make ",
                           symbol, " ", *value));
        }
      }
      auto [it, inserted] = bindings_.emplace(symbol, size);
      if (inserted) {
        bound_by_[symbol] = Describe(input);
      } else if (it->second != size) {
        return absl::InvalidArgumentError(absl::StrCat(
            Describe(input), ": dim ", d, " (", symbol, ") is ", size, ", but ",
            bound_by_[symbol], " binds ", symbol, " to ", it->second));
      }
    }
    return absl::OkStatus();
  }

  // The size of `dim` under the bindings so far, if they determine it.
  std::optional<int64_t> Evaluate(Dim dim) const {
    if (dim.is_constant()) return dim.value();
    auto it = bindings_.find(std::string(dim.symbol()));
    if (it != bindings_.end()) return it->second;
    return rules::EvaluateDim(dim, bindings_);
  }

 private:
  absl::flat_hash_map<std::string, int64_t> bindings_;
  absl::flat_hash_map<std::string, std::string> bound_by_;
};

absl::StatusOr<Tensor> MakeRandom(const ValueSignature& placeholder,
                                  const SymbolBinder& binder, uint64_t seed) {
  const std::string use_input = absl::StrCat("give it a tensor with --input ",
                                             placeholder.name, "=FILE.npy");
  if (!placeholder.type.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placeholder ", placeholder.name,
        " has no type, so a random input cannot be made for it; ", use_input));
  }
  const TensorType& type = *placeholder.type;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < type.shape.size(); ++d) {
    std::optional<int64_t> size = binder.Evaluate(type.shape[d]);
    if (!size.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "placeholder ", placeholder.name, " is ", type.ToString(), ": dim ",
          d, " is symbolic (", type.shape[d].symbol(),
          ") and no given input fixes its size, so a random input cannot be "
          "made for it; give its size with --dim ",
          type.shape[d].symbol(), "=SIZE, or ", use_input));
    }
    dims.push_back(*size);
  }
  // Refused before allocating: a typo in --dim should not exhaust memory.
  constexpr int64_t kMaxRandomBytes = int64_t{1} << 40;
  int64_t bytes = static_cast<int64_t>(DTypeSize(type.dtype));
  for (int64_t d : dims) {
    if (d != 0 && bytes > kMaxRandomBytes / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "placeholder ", placeholder.name, " would be ", DTypeName(type.dtype),
          "[", absl::StrJoin(dims, ","), "]", ": over 1 TiB of random input"));
    }
    bytes *= d;
  }
  return RandomTensor(type.dtype, std::move(dims), seed);
}

}  // namespace

absl::StatusOr<SymbolBindings> ParseDims(absl::Span<const std::string> specs) {
  SymbolBindings dims;
  for (const std::string& text : specs) {
    const size_t eq = text.find('=');
    int64_t size = -1;
    if (eq == std::string::npos || eq == 0 ||
        !absl::SimpleAtoi(absl::string_view(text).substr(eq + 1), &size) ||
        size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim '", text, "' is not of the form SYMBOL=SIZE with SIZE >= 0"));
    }
    if (!dims.emplace(text.substr(0, eq), size).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dim ", text.substr(0, eq), " is given twice"));
    }
  }
  return dims;
}

absl::StatusOr<InputSpec> ParseInputSpec(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--input '", text, "' is not of the form NAME=FILE.npy"));
  }
  return InputSpec{std::string(text.substr(0, eq)),
                   std::string(text.substr(eq + 1))};
}

absl::StatusOr<std::vector<GivenInput>> ReadGivenInputs(
    absl::Span<const std::string> specs) {
  std::vector<GivenInput> inputs;
  absl::flat_hash_map<std::string, std::string> seen;  // Name -> file.
  for (const std::string& text : specs) {
    ASSIGN_OR_RETURN(InputSpec spec, ParseInputSpec(text));
    auto [it, inserted] = seen.emplace(spec.name, spec.path);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", spec.name, "' is given twice (", it->second,
                       " and ", spec.path, ")"));
    }
    absl::StatusOr<Tensor> tensor = ReadNpy(spec.path);
    if (!tensor.ok()) {
      return absl::Status(
          tensor.status().code(),
          absl::StrCat("input '", spec.name, "': ", tensor.status().message()));
    }
    inputs.push_back({spec.name, spec.path, *std::move(tensor)});
  }
  return inputs;
}

absl::StatusOr<BoundInputs> BindInputs(
    absl::Span<const ValueSignature> placeholders,
    absl::Span<const GivenInput> given, std::optional<uint64_t> random_seed,
    const SymbolBindings& dims) {
  absl::flat_hash_map<std::string, size_t> index;  // Placeholder -> position.
  for (size_t i = 0; i < placeholders.size(); ++i) {
    index.emplace(placeholders[i].name, i);
  }
  // Per placeholder: the given input, if any.
  std::vector<const GivenInput*> by_placeholder(placeholders.size(), nullptr);
  for (const GivenInput& input : given) {
    auto it = index.find(input.name);
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", input.name, "' (", input.source,
          ") matches no placeholder; ", PlaceholderNames(placeholders)));
    }
    if (by_placeholder[it->second] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", input.name, "' is given twice"));
    }
    by_placeholder[it->second] = &input;
  }

  BoundInputs bound;
  bound.tensors.resize(placeholders.size());
  bound.sources.resize(placeholders.size());
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const GivenInput* input = by_placeholder[i];
    if (input == nullptr) continue;
    bound.sources[i] = input->source;
    if (!placeholders[i].type.has_value()) {
      bound.tensors[i] = input->tensor;
      continue;
    }
    ASSIGN_OR_RETURN(Tensor tensor, CheckGiven(*input, *placeholders[i].type));
    bound.tensors[i] = std::move(tensor);
  }
  SymbolBinder binder;
  if (!dims.empty()) {
    absl::flat_hash_set<std::string> symbols;
    for (const ValueSignature& p : placeholders) {
      if (!p.type.has_value()) continue;
      for (const Dim& d : p.type->shape) {
        if (d.is_symbolic()) symbols.insert(std::string(d.symbol()));
      }
    }
    for (const auto& [symbol, size] : dims) {
      if (!symbols.contains(symbol)) {
        std::vector<std::string> known(symbols.begin(), symbols.end());
        std::sort(known.begin(), known.end());
        return absl::InvalidArgumentError(absl::StrCat(
            "--dim ", symbol, "=", size, ": no input has a dim named ", symbol,
            known.empty() ? "; the inputs have no symbolic dims"
                          : absl::StrCat("; symbolic dims: ",
                                         absl::StrJoin(known, ", "))));
      }
      binder.Preset(symbol, size);
    }
  }
  for (bool derived : {false, true}) {
    for (size_t i = 0; i < placeholders.size(); ++i) {
      if (by_placeholder[i] == nullptr || !placeholders[i].type.has_value()) {
        continue;
      }
      RETURN_IF_ERROR(binder.Bind(*by_placeholder[i], bound.tensors[i],
                                  *placeholders[i].type, derived));
    }
  }

  std::vector<std::string> missing;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    if (by_placeholder[i] != nullptr) continue;
    if (!random_seed.has_value()) {
      missing.push_back(placeholders[i].name);
      continue;
    }
    const uint64_t seed = *random_seed + i;
    ASSIGN_OR_RETURN(Tensor tensor, MakeRandom(placeholders[i], binder, seed));
    bound.tensors[i] = std::move(tensor);
    bound.sources[i] = absl::StrCat("random(seed=", seed, ")");
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no input for placeholder", missing.size() == 1 ? " " : "s ",
        absl::StrJoin(missing, ", "),
        ": give --input NAME=FILE.npy for each, or --random-inputs"));
  }
  return bound;
}

}  // namespace graft::cli
