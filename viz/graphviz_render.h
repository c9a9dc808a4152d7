#ifndef GRAFT_VIZ_GRAPHVIZ_RENDER_H_
#define GRAFT_VIZ_GRAPHVIZ_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

// What a picture file holds, chosen by its extension.
enum class PictureFormat { kDot, kSvg, kPng };

// ".dot" (or ".gv"), ".svg", ".png", in any letter case; anything else is
// an error that lists them.
absl::StatusOr<PictureFormat> PictureFormatForPath(absl::string_view path);

// True if this build renders SVG and PNG (it was built with libgvc).
bool HaveGraphviz();

// The error text for rendering without Graphviz: what to install and that
// .dot output needs nothing.
std::string GraphvizMissingMessage();

// Lays out a DOT graph with Graphviz's "dot" layout and renders it to SVG
// or PNG bytes, in-process through libgvc. Graphviz is not thread-safe:
// calls are serialized behind one mutex. For kDot, returns `dot` unchanged.
// Errors carry Graphviz's own message.
absl::StatusOr<std::string> RenderDot(absl::string_view dot,
                                      PictureFormat format);

// Counts of a DOT graph as libcgraph reads it (subgraphs and clusters
// included in the node and edge counts of the root graph).
struct DotGraphSummary {
  int nodes = 0;
  int edges = 0;
};
// Parses DOT text with libcgraph (agmemread) without laying it out: checks
// that Graphviz accepts it. Fails without Graphviz.
absl::StatusOr<DotGraphSummary> ParseDot(absl::string_view dot);

// Writes a DOT graph to `path` in the format its extension names (DOT
// text, or SVG/PNG rendered by RenderDot), through a temporary file and a
// rename, so a failed write leaves no half file.
absl::Status WritePicture(const std::string& path, absl::string_view dot);

}  // namespace graft

#endif  // GRAFT_VIZ_GRAPHVIZ_RENDER_H_
