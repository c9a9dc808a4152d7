#include "viz/graphviz_render.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/file_io.h"
#include "support/status_macros.h"
#include "viz/gvc_renderer.h"

namespace graft {

absl::StatusOr<PictureFormat> PictureFormatForPath(absl::string_view path) {
  size_t dot = path.rfind('.');
  size_t slash = path.rfind('/');
  absl::string_view ext;
  if (dot != absl::string_view::npos &&
      (slash == absl::string_view::npos || dot > slash)) {
    ext = path.substr(dot);
  }
  std::string lower = absl::AsciiStrToLower(ext);
  if (lower == ".dot" || lower == ".gv") return PictureFormat::kDot;
  if (lower == ".svg") return PictureFormat::kSvg;
  if (lower == ".png") return PictureFormat::kPng;
  return absl::InvalidArgumentError(
      absl::StrCat("cannot tell the picture format of '", path,
                   "': name the output .dot (Graphviz text), .svg or .png"));
}

bool HaveGraphviz() {
#ifdef GRAFT_HAVE_GRAPHVIZ
  return true;
#else
  return false;
#endif
}

std::string GraphvizMissingMessage() {
  return "graft was built without Graphviz: install libgraphviz-dev "
         "(scripts/install-deps.sh) and rebuild to render SVG/PNG; .dot output "
         "needs nothing";
}

absl::StatusOr<std::string> RenderDot(absl::string_view dot,
                                      PictureFormat format) {
  if (format == PictureFormat::kDot) return std::string(dot);
#ifdef GRAFT_HAVE_GRAPHVIZ
  return internal::RenderWithGvc(dot,
                                 format == PictureFormat::kSvg ? "svg" : "png");
#else
  return absl::FailedPreconditionError(GraphvizMissingMessage());
#endif
}

absl::StatusOr<DotGraphSummary> ParseDot(absl::string_view dot) {
#ifdef GRAFT_HAVE_GRAPHVIZ
  return internal::ParseWithCgraph(dot);
#else
  return absl::FailedPreconditionError(GraphvizMissingMessage());
#endif
}

absl::Status WritePicture(const std::string& path, absl::string_view dot) {
  ASSIGN_OR_RETURN(PictureFormat format, PictureFormatForPath(path));
  if (format == PictureFormat::kDot) return WriteFileAtomically(path, dot);
  absl::StatusOr<std::string> bytes = RenderDot(dot, format);
  if (!bytes.ok()) {
    return absl::Status(
        bytes.status().code(),
        absl::StrCat("cannot render ", path, ": ", bytes.status().message()));
  }
  return WriteFileAtomically(path, *bytes);
}

}  // namespace graft
