#include "passes/pass.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace graft::passes {

const std::string* PassOptions::Find(absl::string_view key) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return nullptr;
  used_[it->first] = true;
  return &it->second;
}

absl::StatusOr<int64_t> PassOptions::GetInt(absl::string_view key,
                                            int64_t default_value) const {
  const std::string* v = Find(key);
  if (v == nullptr) return default_value;
  int64_t out;
  if (!absl::SimpleAtoi(*v, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("option ", key, "=", *v, ": expected an integer"));
  }
  return out;
}

absl::StatusOr<double> PassOptions::GetDouble(absl::string_view key,
                                              double default_value) const {
  const std::string* v = Find(key);
  if (v == nullptr) return default_value;
  double out;
  if (!absl::SimpleAtod(*v, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("option ", key, "=", *v, ": expected a number"));
  }
  return out;
}

absl::StatusOr<bool> PassOptions::GetBool(absl::string_view key,
                                          bool default_value) const {
  const std::string* v = Find(key);
  if (v == nullptr) return default_value;
  bool out;
  if (!absl::SimpleAtob(*v, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("option ", key, "=", *v, ": expected true or false"));
  }
  return out;
}

std::string PassOptions::GetString(absl::string_view key,
                                   absl::string_view default_value) const {
  const std::string* v = Find(key);
  return v == nullptr ? std::string(default_value) : *v;
}

absl::Status PassOptions::CheckAllUsed(absl::string_view pass_name) const {
  for (const auto& [key, value] : values_) {
    if (!used_.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pass '", pass_name, "' has no option '", key, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace graft::passes
