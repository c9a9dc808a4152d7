#include "onnx/onnx_attributes.h"

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

using AP = onnx::AttributeProto;

std::string TypeName(int type) {
  if (AP::AttributeType_IsValid(type) && type != AP::UNDEFINED) {
    return AP::AttributeType_Name(static_cast<AP::AttributeType>(type));
  }
  return "an attribute of unknown type";
}

// Models written by old exporters leave `type` unset; the field that holds
// a value tells it then.
int EffectiveType(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.floats_size() > 0) return AP::FLOATS;
  if (a.ints_size() > 0) return AP::INTS;
  if (a.strings_size() > 0) return AP::STRINGS;
  return AP::UNDEFINED;
}

}  // namespace

const AP* NodeAttributes::Find(absl::string_view name) {
  for (const AP& a : node_.attribute()) {
    if (a.name() == name) {
      read_.insert(std::string(name));
      return &a;
    }
  }
  return nullptr;
}

bool NodeAttributes::Has(absl::string_view name) const {
  for (const AP& a : node_.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

absl::StatusOr<const AP*> NodeAttributes::Typed(absl::string_view name,
                                                AP::AttributeType type) {
  const AP* a = Find(name);
  if (a == nullptr) return nullptr;
  if (!a->ref_attr_name().empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "attribute '", name, "' refers to the function attribute '",
        a->ref_attr_name(), "', which is not supported"));
  }
  if (EffectiveType(*a) != type) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' must be ", TypeName(type),
                     ", got ", TypeName(EffectiveType(*a))));
  }
  return a;
}

absl::StatusOr<int64_t> NodeAttributes::Int(absl::string_view name,
                                            int64_t default_value) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::INT));
  return a == nullptr ? default_value : a->i();
}

absl::StatusOr<std::optional<int64_t>> NodeAttributes::OptionalInt(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::INT));
  if (a == nullptr) return std::optional<int64_t>();
  return std::optional<int64_t>(a->i());
}

absl::StatusOr<float> NodeAttributes::Float(absl::string_view name,
                                            float default_value) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::FLOAT));
  return a == nullptr ? default_value : a->f();
}

absl::StatusOr<std::optional<float>> NodeAttributes::OptionalFloat(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::FLOAT));
  if (a == nullptr) return std::optional<float>();
  return std::optional<float>(a->f());
}

absl::StatusOr<std::optional<std::vector<std::string>>> NodeAttributes::Strings(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::STRINGS));
  if (a == nullptr) return std::optional<std::vector<std::string>>();
  return std::optional<std::vector<std::string>>(
      std::vector<std::string>(a->strings().begin(), a->strings().end()));
}

absl::StatusOr<std::string> NodeAttributes::String(
    absl::string_view name, absl::string_view default_value) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::STRING));
  return a == nullptr ? std::string(default_value) : a->s();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> NodeAttributes::Ints(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::INTS));
  if (a == nullptr) return std::optional<std::vector<int64_t>>();
  return std::optional<std::vector<int64_t>>(
      std::vector<int64_t>(a->ints().begin(), a->ints().end()));
}

absl::StatusOr<std::optional<std::vector<float>>> NodeAttributes::Floats(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::FLOATS));
  if (a == nullptr) return std::optional<std::vector<float>>();
  return std::optional<std::vector<float>>(
      std::vector<float>(a->floats().begin(), a->floats().end()));
}

absl::StatusOr<const onnx::TensorProto*> NodeAttributes::Tensor(
    absl::string_view name) {
  ASSIGN_OR_RETURN(const AP* a, Typed(name, AP::TENSOR));
  return a == nullptr ? nullptr : &a->t();
}

std::vector<std::string> NodeAttributes::Unread() const {
  std::vector<std::string> out;
  for (const AP& a : node_.attribute()) {
    if (!read_.contains(a.name())) out.push_back(a.name());
  }
  return out;
}

}  // namespace graft::onnx_import
