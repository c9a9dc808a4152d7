// Compiled only when graft is built with Graphviz (viz/CMakeLists.txt).

#include "viz/gvc_renderer.h"

#include <graphviz/gvc.h>

#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace graft::internal {
namespace {

// Graphviz keeps global state (the parser, the error handler, plugin
// tables) and is not thread-safe: every call goes through this mutex.
std::mutex& GraphvizMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}

// Graphviz's messages for the call in progress; guarded by GraphvizMutex().
std::string& Messages() {
  static auto* messages = new std::string();
  return *messages;
}

int CollectMessage(char* text) {
  Messages().append(text);
  return 0;
}

// One context for the life of the process: creating one loads the plugin
// configuration, which is slow, and a context may be reused for any number
// of layouts. Called with the mutex held.
GVC_t* Context() {
  static GVC_t* gvc = [] {
    agseterrf(&CollectMessage);
    return gvContext();
  }();
  return gvc;
}

// Starts a call: no messages, no errors recorded.
void ResetMessages() {
  Messages().clear();
  agreseterrors();
}

// True if Graphviz reported an error since ResetMessages(), e.g. an HTML
// label it could not read (the layout still succeeds then, with the label
// shown as raw text, so the return codes alone do not tell).
bool HadErrors() { return agerrors() >= AGERR; }

std::string TakeMessages() {
  std::string text = std::move(Messages());
  Messages().clear();
  absl::StripAsciiWhitespace(&text);
  return text.empty() ? std::string("no message from Graphviz") : text;
}

// Owns a graph read by agmemread, and its layout once one is made.
class GraphHandle {
 public:
  explicit GraphHandle(Agraph_t* graph) : graph_(graph) {}
  GraphHandle(const GraphHandle&) = delete;
  GraphHandle& operator=(const GraphHandle&) = delete;
  ~GraphHandle() {
    if (laid_out_) gvFreeLayout(Context(), graph_);
    if (graph_ != nullptr) agclose(graph_);
  }
  Agraph_t* get() const { return graph_; }
  void set_laid_out() { laid_out_ = true; }

 private:
  Agraph_t* graph_;
  bool laid_out_ = false;
};

// agmemread wants a NUL-terminated string.
Agraph_t* Read(absl::string_view dot) {
  std::string text(dot);
  return agmemread(text.c_str());
}

}  // namespace

absl::StatusOr<std::string> RenderWithGvc(absl::string_view dot,
                                          absl::string_view format) {
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  GVC_t* gvc = Context();
  if (gvc == nullptr)
    return absl::InternalError("Graphviz: cannot create a context");
  ResetMessages();
  GraphHandle graph(Read(dot));
  if (graph.get() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Graphviz cannot read the DOT text: ", TakeMessages()));
  }
  bool laid_out = gvLayout(gvc, graph.get(), "dot") == 0;
  if (laid_out) graph.set_laid_out();
  if (!laid_out || HadErrors()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Graphviz layout failed: ", TakeMessages()));
  }
  std::string gv_format(format);
  char* data = nullptr;
  unsigned int length = 0;
  if (gvRenderData(gvc, graph.get(), gv_format.c_str(), &data, &length) != 0 ||
      data == nullptr || HadErrors()) {
    if (data != nullptr) gvFreeRenderData(data);
    return absl::InternalError(
        absl::StrCat("Graphviz cannot render ", format, ": ", TakeMessages()));
  }
  std::string bytes(data, length);
  gvFreeRenderData(data);
  Messages().clear();
  return bytes;
}

absl::StatusOr<DotGraphSummary> ParseWithCgraph(absl::string_view dot) {
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  if (Context() == nullptr)
    return absl::InternalError("Graphviz: cannot create a context");
  ResetMessages();
  GraphHandle graph(Read(dot));
  if (graph.get() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Graphviz cannot read the DOT text: ", TakeMessages()));
  }
  Messages().clear();
  return DotGraphSummary{agnnodes(graph.get()), agnedges(graph.get())};
}

}  // namespace graft::internal
