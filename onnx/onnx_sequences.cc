#include "onnx/onnx_sequences.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

// SplitToSequence makes at most this many pieces (one Slice each).
constexpr int64_t kMaxPieces = int64_t{1} << 16;

bool IsDefault(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

// The whole number in one-element `name`, which must be known at import
// (`what` names it in errors).
absl::StatusOr<int64_t> KnownInteger(const Sequences::KnownValue& known, const std::string& name,
                                     const std::string& what) {
  std::optional<Tensor> t = known(name);
  if (!t.has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        what, " '", name, "' is computed at run time: graft imports sequences only where every length and "
                          "position is known at import"));
  }
  if (t->NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' has ", t->NumElements(), " elements, not one"));
  }
  const double v = t->GetAsDouble(0);
  if (v != std::floor(v) || std::fabs(v) > 9e15) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' is ", v, ", not a whole number"));
  }
  return static_cast<int64_t>(v);
}

// A position in a sequence of `length`, from the back when negative: in
// [-length, length - 1], or up to `length` for an insertion.
absl::StatusOr<size_t> Position(int64_t p, size_t length, bool insertion, const std::string& what) {
  const int64_t n = static_cast<int64_t>(length);
  const int64_t last = insertion ? n : n - 1;
  if (p < -n || p > last) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", p, " is outside [", -n, ", ", last, "] for a sequence of ", n));
  }
  return static_cast<size_t>(p < 0 ? p + n : p);
}

}  // namespace

bool Sequences::Handles(const onnx::NodeProto& node) const {
  if (!IsDefault(node)) return false;
  const std::string& op = node.op_type();
  if (op == "Identity") return node.input_size() == 1 && IsSequence(node.input(0));
  return op == "SequenceEmpty" || op == "SequenceConstruct" || op == "SequenceInsert" || op == "SequenceAt" ||
         op == "SequenceErase" || op == "SequenceLength" || op == "SplitToSequence" || op == "ConcatFromSequence";
}

absl::StatusOr<const std::vector<std::string>*> Sequences::Find(const std::string& name) const {
  auto it = sequences_.find(name);
  if (it == sequences_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("input '", name, "' is not a sequence"));
  }
  return &it->second;
}

absl::StatusOr<std::vector<onnx::NodeProto>> Sequences::Expand(const onnx::NodeProto& node, int64_t opset,
                                                               const ValueTypeLookup& types,
                                                               const KnownValue& known) {
  NodeExpansion e(node);
  const std::string& op = node.op_type();
  if (e.Out(0).empty()) return e.Take();  // Nothing reads it.
  std::vector<std::string> made;          // The sequence the node makes, if it makes one.
  bool makes_sequence = true;
  if (op == "SequenceEmpty") {
    // An empty list (its `dtype` matters only to what is inserted).
  } else if (op == "SequenceConstruct") {
    for (int i = 0; i < node.input_size(); ++i) made.push_back(e.In(i));
  } else if (op == "Identity") {
    ASSIGN_OR_RETURN(const std::vector<std::string>* s, Find(e.In(0)));
    made = *s;
  } else if (op == "SequenceInsert" || op == "SequenceErase") {
    ASSIGN_OR_RETURN(const std::vector<std::string>* s, Find(e.In(0)));
    made = *s;
    const bool insert = op == "SequenceInsert";
    const std::string position_input = e.In(insert ? 2 : 1);
    int64_t p = insert ? static_cast<int64_t>(made.size()) : -1;  // The end; the last.
    if (!position_input.empty()) {
      ASSIGN_OR_RETURN(p, KnownInteger(known, position_input, "the position"));
    }
    if (!insert && made.empty()) return absl::InvalidArgumentError("erases from an empty sequence");
    ASSIGN_OR_RETURN(const size_t at, Position(p, made.size(), insert, "the position"));
    if (insert) {
      if (!e.Has(1)) return absl::InvalidArgumentError("needs a tensor to insert");
      made.insert(made.begin() + static_cast<std::ptrdiff_t>(at), e.In(1));
    } else {
      made.erase(made.begin() + static_cast<std::ptrdiff_t>(at));
    }
  } else if (op == "SequenceAt") {
    makes_sequence = false;
    ASSIGN_OR_RETURN(const std::vector<std::string>* s, Find(e.In(0)));
    ASSIGN_OR_RETURN(const int64_t p, KnownInteger(known, e.In(1), "the position"));
    ASSIGN_OR_RETURN(const size_t at, Position(p, s->size(), false, "the position"));
    e.Add("Identity", {(*s)[at]}, e.Out(0));
  } else if (op == "SequenceLength") {
    makes_sequence = false;
    ASSIGN_OR_RETURN(const std::vector<std::string>* s, Find(e.In(0)));
    onnx::AttributeProto* a = e.Add("Constant", {}, e.Out(0)).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_int64_data(static_cast<int64_t>(s->size()));
  } else if (op == "ConcatFromSequence") {
    makes_sequence = false;
    ASSIGN_OR_RETURN(const std::vector<std::string>* s, Find(e.In(0)));
    if (e.Typed("axis", onnx::AttributeProto::INT) == nullptr) {
      RETURN_IF_ERROR(e.status());
      return absl::InvalidArgumentError("needs the attribute 'axis'");
    }
    const int64_t axis = e.IntAttribute("axis", 0);
    const bool new_axis = e.IntAttribute("new_axis", 0) != 0;
    if (s->empty()) {
      return absl::UnimplementedError("concatenates an empty sequence, whose result's shape is unknown");
    }
    std::vector<std::string> parts = *s;
    if (new_axis) {
      for (size_t i = 0; i < parts.size(); ++i) {
        parts[i] = e.Unsqueeze(parts[i], {axis}, opset, absl::StrCat("element", i));
      }
    }
    NodeExpansion::SetInt(e.Add("Concat", parts, e.Out(0)), "axis", axis);
  } else if (op == "SplitToSequence") {
    const int64_t axis = e.IntAttribute("axis", 0);
    const bool keepdims = e.IntAttribute("keepdims", 1) != 0;
    ASSIGN_OR_RETURN(const int64_t length, StaticDimOf(types, e.In(0), axis, "the input"));
    std::vector<int64_t> sizes;
    const auto too_many = [&](int64_t pieces) {
      return absl::ResourceExhaustedError(
          absl::StrCat("splits dim ", axis, " into ", pieces, " pieces, more than ", kMaxPieces));
    };
    if (!e.Has(1)) {
      if (length > kMaxPieces) return too_many(length);
      sizes.assign(static_cast<size_t>(length), 1);
    } else {
      std::optional<Tensor> split = known(e.In(1));
      if (!split.has_value()) {
        return absl::UnimplementedError(absl::StrCat("the split '", e.In(1), "' is computed at run time"));
      }
      if (split->rank() == 0) {
        const int64_t chunk = static_cast<int64_t>(split->GetAsDouble(0));
        if (chunk <= 0) return absl::InvalidArgumentError(absl::StrCat("the split ", chunk, " is not positive"));
        if ((length + chunk - 1) / chunk > kMaxPieces) return too_many((length + chunk - 1) / chunk);
        for (int64_t at = 0; at < length; at += chunk) sizes.push_back(std::min(chunk, length - at));
      } else {
        if (split->NumElements() > kMaxPieces) return too_many(split->NumElements());
        int64_t sum = 0;
        for (int64_t i = 0; i < split->NumElements(); ++i) {
          sizes.push_back(static_cast<int64_t>(split->GetAsDouble(i)));
          if (sizes.back() < 0) return absl::InvalidArgumentError("the split has a negative size");
          sum += sizes.back();
        }
        if (sum != length) {
          return absl::InvalidArgumentError(
              absl::StrCat("the split's sizes add up to ", sum, ", but the input's dim ", axis, " is ", length));
        }
      }
    }
    // Pieces of one keep the dim only with keepdims (ignored with a split).
    const bool squeeze = !e.Has(1) && !keepdims;
    int64_t from = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::string piece = e.SliceOf(e.In(0), axis, from, from + sizes[i], absl::StrCat("piece", i));
      if (squeeze) piece = e.Squeeze(piece, {axis}, opset, absl::StrCat("piece", i, "_squeezed"));
      made.push_back(piece);
      from += sizes[i];
    }
  }
  RETURN_IF_ERROR(e.status());
  if (makes_sequence) sequences_[e.Out(0)] = std::move(made);
  return e.Take();
}

}  // namespace graft::onnx_import
