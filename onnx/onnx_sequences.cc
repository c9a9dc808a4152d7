#include "onnx/onnx_sequences.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/dtype.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

// SplitToSequence makes at most this many pieces (one Slice each).
constexpr int64_t kMaxPieces = int64_t{1} << 16;
// Insertions before the end and erasures copy a sequence: at most this
// many bytes of names copied in one import.
constexpr int64_t kMaxCopiedBytes = int64_t{1} << 28;

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

absl::StatusOr<const Sequences::Sequence*> Sequences::Find(const std::string& name) const {
  auto it = sequences_.find(name);
  if (it == sequences_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("input '", name, "' is not a sequence"));
  }
  return &it->second;
}

absl::StatusOr<Sequences::Sequence> Sequences::Copy(std::vector<std::string> names) {
  for (const std::string& name : names) copied_ += static_cast<int64_t>(name.size() + sizeof(std::string));
  if (copied_ > kMaxCopiedBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the model's sequence operations copy more than ",
                                                     kMaxCopiedBytes >> 20, " MB of element names"));
  }
  Sequence s;
  s.length = names.size();
  *s.items = std::move(names);
  return s;
}

absl::Status Sequences::RefuseSequenceInputs(const onnx::NodeProto& node) const {
  for (const std::string& in : node.input()) {
    if (IsSequence(in)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in, "' is a sequence, where a tensor is expected (SequenceAt or ConcatFromSequence reads one)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<onnx::NodeProto>> Sequences::Expand(const onnx::NodeProto& node, int64_t opset,
                                                               const ValueTypeLookup& types,
                                                               const KnownValue& known) {
  NodeExpansion e(node);
  const std::string& op = node.op_type();
  if (e.Out(0).empty()) return e.Take();  // Nothing reads it.
  std::optional<Sequence> made;  // The sequence the node makes, if it makes one.
  if (op == "SequenceEmpty") {
    // An empty list (its `dtype` matters only to what is inserted).
    made = Sequence();
  } else if (op == "SequenceConstruct") {
    std::vector<std::string> names;
    for (int i = 0; i < node.input_size(); ++i) {
      if (!e.Has(i) || IsSequence(e.In(i))) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a tensor"));
      }
      names.push_back(e.In(i));
    }
    ASSIGN_OR_RETURN(made, Copy(std::move(names)));
  } else if (op == "Identity") {
    ASSIGN_OR_RETURN(const Sequence* s, Find(e.In(0)));
    made = *s;
  } else if (op == "SequenceInsert" || op == "SequenceErase") {
    ASSIGN_OR_RETURN(const Sequence* s, Find(e.In(0)));
    const bool insert = op == "SequenceInsert";
    const std::string position_input = e.In(insert ? 2 : 1);
    int64_t p = insert ? static_cast<int64_t>(s->length) : -1;  // The end; the last.
    if (!position_input.empty()) {
      ASSIGN_OR_RETURN(p, KnownInteger(known, position_input, "the position"));
    }
    if (!insert && s->length == 0) return absl::InvalidArgumentError("erases from an empty sequence");
    ASSIGN_OR_RETURN(const size_t at, Position(p, s->length, insert, "the position"));
    if (insert && (!e.Has(1) || IsSequence(e.In(1)))) {
      return absl::InvalidArgumentError("needs a tensor to insert");
    }
    if (insert && at == s->length && s->items->size() == s->length) {
      made = *s;  // An append: the items grow in place.
      made->items->push_back(e.In(1));
      made->length = s->length + 1;
    } else {
      std::vector<std::string> names = s->Names();
      if (insert) {
        names.insert(names.begin() + static_cast<std::ptrdiff_t>(at), e.In(1));
      } else {
        names.erase(names.begin() + static_cast<std::ptrdiff_t>(at));
      }
      ASSIGN_OR_RETURN(made, Copy(std::move(names)));
    }
  } else if (op == "SequenceAt") {
    ASSIGN_OR_RETURN(const Sequence* s, Find(e.In(0)));
    ASSIGN_OR_RETURN(const int64_t p, KnownInteger(known, e.In(1), "the position"));
    ASSIGN_OR_RETURN(const size_t at, Position(p, s->length, false, "the position"));
    e.Add("Identity", {(*s->items)[at]}, e.Out(0));
  } else if (op == "SequenceLength") {
    ASSIGN_OR_RETURN(const Sequence* s, Find(e.In(0)));
    onnx::AttributeProto* a = e.Add("Constant", {}, e.Out(0)).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_int64_data(static_cast<int64_t>(s->length));
  } else if (op == "ConcatFromSequence") {
    ASSIGN_OR_RETURN(const Sequence* found, Find(e.In(0)));
    const std::vector<std::string> names = found->Names();
    const std::vector<std::string>* s = &names;
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
    if (IsSequence(e.In(0))) return absl::InvalidArgumentError("input 0 must be a tensor");
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
      if (!IsInteger(split->dtype())) {
        return absl::InvalidArgumentError(absl::StrCat("the split is ", DTypeName(split->dtype()), ", not integers"));
      }
      if (split->rank() == 0) {
        const double chunk = split->GetAsDouble(0);
        if (!(chunk >= 1)) return absl::InvalidArgumentError(absl::StrCat("the split ", chunk, " is not positive"));
        const int64_t pieces = chunk >= static_cast<double>(length) ? 1 : (length - 1) / static_cast<int64_t>(chunk) + 1;
        if (pieces > kMaxPieces) return too_many(pieces);
        const int64_t step = chunk >= static_cast<double>(length) ? length : static_cast<int64_t>(chunk);
        for (int64_t at = 0; at < length; at += step) sizes.push_back(std::min(step, length - at));
      } else {
        if (split->NumElements() > kMaxPieces) return too_many(split->NumElements());
        int64_t sum = 0;
        for (int64_t i = 0; i < split->NumElements(); ++i) {
          const double size = split->GetAsDouble(i);
          if (!(size >= 0) || size > static_cast<double>(length - sum)) {
            return absl::InvalidArgumentError(absl::StrCat("the split's sizes add up to more than the input's dim ",
                                                           axis, " (", length, ")"));
          }
          sizes.push_back(static_cast<int64_t>(size));
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
    std::vector<std::string> pieces;
    int64_t from = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::string piece = e.SliceOf(e.In(0), axis, from, from + sizes[i], absl::StrCat("piece", i));
      if (squeeze) piece = e.Squeeze(piece, {axis}, opset, absl::StrCat("piece", i, "_squeezed"));
      pieces.push_back(piece);
      from += sizes[i];
    }
    ASSIGN_OR_RETURN(made, Copy(std::move(pieces)));
  }
  RETURN_IF_ERROR(e.status());
  if (made.has_value()) sequences_[e.Out(0)] = *std::move(made);
  return e.Take();
}

}  // namespace graft::onnx_import
