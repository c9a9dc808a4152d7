#include "cli/load_module.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/parser.h"

namespace graft::cli {
namespace {

// One reader per extension; new formats (.gpb, .json, .onnx) add a row.
struct ModelFormat {
  absl::string_view extension;
  absl::StatusOr<Module> (*load)(absl::string_view path);
};

absl::StatusOr<Module> LoadText(absl::string_view path) {
  return LoadTextModule(path);
}

constexpr std::array<ModelFormat, 1> kFormats = {{
    {".graft", &LoadText},
}};

}  // namespace

std::string KnownModelExtensions() {
  return absl::StrJoin(kFormats, ", ",
                       [](std::string* out, const ModelFormat& f) {
                         out->append(f.extension.data(), f.extension.size());
                       });
}

absl::StatusOr<Module> LoadModule(absl::string_view path) {
  for (const ModelFormat& format : kFormats) {
    if (absl::EndsWith(path, format.extension)) return format.load(path);
  }
  size_t slash = path.find_last_of('/');
  absl::string_view base =
      slash == absl::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == absl::string_view::npos || dot == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot tell the format of '", path,
        "': it has no extension (known: ", KnownModelExtensions(), ")"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot read '", path, "': unknown model format '", base.substr(dot),
      "' (known: ", KnownModelExtensions(), ")"));
}

}  // namespace graft::cli
