#ifndef GRAFT_VIZ_GVC_RENDERER_H_
#define GRAFT_VIZ_GVC_RENDERER_H_

// The part of graphviz_render that calls libgvc. gvc_renderer.cc is
// compiled only when graft is built with Graphviz (GRAFT_HAVE_GRAPHVIZ);
// use graphviz_render.h, which works either way.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "viz/graphviz_render.h"

namespace graft::internal {

// Lays out `dot` with the "dot" engine and renders it with Graphviz output
// format `format` ("svg", "png").
absl::StatusOr<std::string> RenderWithGvc(absl::string_view dot,
                                          absl::string_view format);
absl::StatusOr<DotGraphSummary> ParseWithCgraph(absl::string_view dot);

}  // namespace graft::internal

#endif  // GRAFT_VIZ_GVC_RENDERER_H_
