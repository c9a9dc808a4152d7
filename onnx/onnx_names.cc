#include "onnx/onnx_names.h"

#include "absl/strings/ascii.h"

namespace graft::onnx_import {

std::string SanitizeName(absl::string_view name, absl::string_view fallback) {
  std::string out;
  bool pending_sep = false;
  for (char c : name) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                    c == '.' || c == '_';
    if (!ok || c == '_') {
      pending_sep = true;
      continue;
    }
    if (pending_sep && !out.empty()) out.push_back('_');
    pending_sep = false;
    out.push_back(c);
  }
  // A name that is only dots is no identifier either.
  if (out.empty() || out.find_first_not_of('.') == std::string::npos) {
    return std::string(fallback);
  }
  if (out[0] == '.' ||
      absl::ascii_isdigit(static_cast<unsigned char>(out[0]))) {
    out.insert(out.begin(), '_');
  }
  return out;
}

}  // namespace graft::onnx_import
