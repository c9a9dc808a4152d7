#include "viz/dot_writer.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/collective_ops.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "graph/printer.h"
#include "support/status_macros.h"
#include "viz/graphviz_render.h"

namespace graft {
namespace {

// Submodules nested deeper than this are drawn collapsed, which bounds the
// recursion over the module tree (the node walk itself is a loop).
constexpr int kMaxClusterDepth = 32;
// Literal arguments shown in a box are cut to about this many bytes.
constexpr size_t kMaxArgsText = 64;
// A collapsed call_module box lists at most this many ops of its submodule.
constexpr size_t kMaxListedOps = 4;

constexpr absl::string_view kCreatedColor = "#d50000";
constexpr absl::string_view kGhostColor = "#9e9e9e";
constexpr absl::string_view kBorderColor = "#555555";

// absl::string_view is not std::string_view here: append by pointer.
void Append(std::string* out, absl::string_view text) {
  out->append(text.data(), text.size());
}

void AppendHexByte(std::string* out, unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out->append("\\x");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

// Length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t Utf8SequenceLength(absl::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = byte(0);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Cuts `text` to about `max` bytes without splitting a UTF-8 sequence.
absl::string_view Shorten(absl::string_view text, size_t max, bool* cut) {
  *cut = text.size() > max;
  if (!*cut) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;
  return text.substr(0, end);
}

void AppendType(std::string* out, const Node& node) {
  const NodeMeta& meta = node.meta();
  if (meta.type.has_value()) {
    AppendHtmlEscaped(out, PrintType(*meta.type));
  } else if (!meta.tuple_types.empty()) {
    std::string text = "(";
    for (size_t i = 0; i < meta.tuple_types.size(); ++i) {
      if (i > 0) text.append(", ");
      text.append(PrintType(meta.tuple_types[i]));
    }
    text.append(")");
    AppendHtmlEscaped(out, text);
  }
}

bool HasType(const Node& node) {
  return node.meta().type.has_value() || !node.meta().tuple_types.empty();
}

// "name=value, ..." for the arguments of a call that a box should show:
// literals always, node references only for quantization parameters
// (scales and zero points may be tensors), never the data inputs.
std::string ArgsText(const Node& node, bool with_node_refs) {
  const OpSchema* schema = node.schema();
  std::string text;
  auto add = [&](absl::string_view name, const Argument& value) {
    if (value.is_none()) return;
    if (value.HasNodes() && !with_node_refs) return;
    if (!text.empty()) text.append(", ");
    Append(&text, name);
    text.push_back('=');
    text.append(PrintArgument(value));
  };
  for (size_t i = 0; i < node.num_args(); ++i) {
    // The first argument is the data input of every op that has
    // quantization parameters: skip it even when it is shown by reference.
    if (i == 0 && with_node_refs && node.arg(0).is_node()) continue;
    if (schema != nullptr && i < schema->params.size()) {
      add(schema->params[i].name, node.arg(i));
    } else {
      add(absl::StrCat("arg", i), node.arg(i));
    }
  }
  for (const auto& [name, value] : node.kwargs()) add(name, value);
  return text;
}

// Walks a module and writes its DOT text: node boxes (and clusters) into
// one buffer, edges into another, joined at the end so that every node is
// declared inside the cluster that holds it.
class DotBuilder {
 public:
  DotBuilder(const DotOptions& options, bool expand, size_t top_limit)
      : options_(options), expand_(expand), top_limit_(top_limit) {
    for (const DotGhost& g : options.ghosts)
      ghosts_by_graph_[g.graph].push_back(&g);
  }

  // Writes the nodes and edges of `module`.
  void Build(const Module& module, size_t expected_boxes) {
    out_.reserve(expected_boxes * 240 + 1024);
    edges_.reserve(expected_boxes * 80);
    DrawGraph(module, nullptr, nullptr, 0);
  }

  std::string& nodes_text() { return out_; }
  std::string& edges_text() { return edges_; }
  size_t boxes() const { return boxes_; }
  size_t created() const { return created_; }
  size_t ghosts_drawn() const { return ghosts_drawn_; }

 private:
  // The boxes carrying a drawn graph's output: one, or one per element of
  // a returned list (read by getitem nodes); -1 for a literal.
  struct OutputBoxes {
    int single = -1;
    bool is_list = false;
    std::vector<int> elements;
  };
  // One drawn instance of a graph: which box carries each node's value.
  struct Instance {
    absl::flat_hash_map<const Node*, int> box;
    absl::flat_hash_map<const Node*, std::vector<int>> tuple_boxes;
    // Names of replaced nodes -> boxes of the nodes their provenance names.
    absl::flat_hash_map<std::string, std::vector<int>> replaced_by;
  };

  bool IsCreated(const Node& node) const {
    if (options_.created.contains(&node)) return true;
    if (!node.meta().provenance) return false;
    const Provenance& p = *node.meta().provenance;
    if (options_.created_by_any_pass) return true;
    return !options_.created_by_pass.empty() &&
           p.pass == options_.created_by_pass;
  }

  // The box that carries `input`'s value as `user` reads it; -1 if none.
  int SourceBox(const Instance& inst, const Node* input,
                const Node* user) const {
    auto tuple = inst.tuple_boxes.find(input);
    if (tuple != inst.tuple_boxes.end()) {
      const std::vector<int>& elements = tuple->second;
      if (user->is_call("getitem") && user->num_args() >= 2 &&
          user->arg(1).is_int()) {
        int64_t i = user->arg(1).int_value();
        if (i >= 0 && static_cast<size_t>(i) < elements.size())
          return elements[i];
      }
      return elements.empty() ? -1 : elements[0];
    }
    auto it = inst.box.find(input);
    return it == inst.box.end() ? -1 : it->second;
  }

  void AddEdge(int from, int to, const Node* value) {
    if (from < 0 || to < 0 || from == to) return;
    absl::StrAppend(&edges_, "  \"n", from, "\" -> \"n", to, "\"");
    if (options_.edge_labels && value != nullptr &&
        value->op() != OpCode::kGetAttr && value->type().has_value()) {
      edges_.append(" [label=<");
      AppendHtmlEscaped(&edges_, ShapeToString(value->type()->shape));
      edges_.append(">]");
    }
    edges_.append(";\n");
  }

  // Draws `module`'s graph. `inputs`: for a submodule in a cluster, the box
  // feeding each placeholder (-1: draw the placeholder); null at the top.
  OutputBoxes DrawGraph(const Module& module, const std::vector<int>* inputs,
                        Instance* parent, int depth);
  void DrawCluster(const Module& module, Instance& inst, const Node& call,
                   const Module& sub, int depth);
  int DrawNode(const Module& module, const Node& node, Instance& inst);
  void AppendLabel(const Module& module, const Node& node, bool created);
  void DrawGhosts(const Graph& graph, const Instance& inst);
  void Indent(int depth) {
    out_.append(static_cast<size_t>(2 * depth + 2), ' ');
  }

  const DotOptions& options_;
  bool expand_;
  size_t top_limit_;
  absl::flat_hash_map<const Graph*, std::vector<const DotGhost*>>
      ghosts_by_graph_;
  std::string out_;
  std::string edges_;
  int indent_ = 0;  // Nesting depth of the graph being drawn.
  int next_box_ = 0;
  int next_cluster_ = 0;
  int next_ghost_ = 0;
  size_t boxes_ = 0;
  size_t created_ = 0;
  size_t ghosts_drawn_ = 0;
};

DotBuilder::OutputBoxes DotBuilder::DrawGraph(const Module& module,
                                              const std::vector<int>* inputs,
                                              Instance* parent, int depth) {
  const Graph& graph = module.graph();
  const bool top = inputs == nullptr;
  indent_ = depth;
  Instance inst;
  inst.box.reserve(top && top_limit_ > 0
                       ? std::min(graph.num_nodes(), top_limit_)
                       : graph.num_nodes());
  OutputBoxes result;
  size_t placeholder_index = 0;
  size_t drawn = 0;
  for (const Node* node : graph.nodes()) {
    if (top && top_limit_ > 0 && drawn >= top_limit_) break;
    ++drawn;
    // Inside a cluster the submodule's placeholders and output are the
    // call's operands and result: draw edges straight through them.
    if (!top && node->op() == OpCode::kPlaceholder) {
      size_t i = placeholder_index++;
      if (i < inputs->size() && (*inputs)[i] >= 0) {
        inst.box[node] = (*inputs)[i];
        continue;
      }
    }
    if (!top && node->op() == OpCode::kOutput && node->num_args() == 1) {
      const Argument& value = node->arg(0);
      if (value.is_node()) {
        result.single = SourceBox(inst, value.node(), node);
        continue;
      }
      if (value.is_list()) {
        result.is_list = true;
        for (const Argument& e : value.list()) {
          result.elements.push_back(
              e.is_node() ? SourceBox(inst, e.node(), node) : -1);
        }
        continue;
      }
    }
    if (node->op() == OpCode::kCallModule && expand_ &&
        depth < kMaxClusterDepth) {
      if (const Module* sub = module.FindSubmodule(node->target())) {
        DrawCluster(module, inst, *node, *sub, depth);
        indent_ = depth;
        continue;
      }
    }
    int id = DrawNode(module, *node, inst);
    for (const Node* input : node->unique_inputs()) {
      AddEdge(SourceBox(inst, input, node), id, input);
    }
  }
  DrawGhosts(graph, inst);
  if (parent != nullptr) {
    // Nodes a pass moved into a submodule replace nodes of the graph that
    // calls it: the caller's ghosts point at them.
    for (auto& [name, boxes] : inst.replaced_by) {
      std::vector<int>& to = parent->replaced_by[name];
      to.insert(to.end(), boxes.begin(), boxes.end());
    }
  }
  return result;
}

void DotBuilder::DrawCluster(const Module& module, Instance& inst,
                             const Node& call, const Module& sub, int depth) {
  std::vector<int> sub_inputs;
  sub_inputs.reserve(call.num_args());
  for (const Argument& a : call.args()) {
    sub_inputs.push_back(a.is_node() ? SourceBox(inst, a.node(), &call) : -1);
  }
  bool created = IsCreated(call);
  if (created) ++created_;
  Indent(depth);
  absl::StrAppend(&out_, "subgraph \"cluster_", next_cluster_++, "\" {\n");
  Indent(depth + 1);
  out_.append("label=<<B>");
  AppendHtmlEscaped(&out_, call.target());
  out_.append("</B><BR/><FONT POINT-SIZE=\"9\">call_module ");
  AppendHtmlEscaped(&out_, call.Ref());
  out_.append("</FONT>>;\n");
  Indent(depth + 1);
  absl::StrAppend(&out_,
                  "style=\"rounded,filled\"; fillcolor=\"#eef7f7\"; color=\"",
                  created ? kCreatedColor : absl::string_view("#4d9999"),
                  "\"; penwidth=", created ? 3 : 1, ";\n");
  OutputBoxes result = DrawGraph(sub, &sub_inputs, &inst, depth + 1);
  Indent(depth);
  out_.append("}\n");
  if (result.is_list) {
    inst.box[&call] = result.elements.empty() ? -1 : result.elements[0];
    inst.tuple_boxes[&call] = std::move(result.elements);
  } else {
    inst.box[&call] = result.single;
  }
}

int DotBuilder::DrawNode(const Module& module, const Node& node,
                         Instance& inst) {
  int id = next_box_++;
  ++boxes_;
  inst.box[&node] = id;
  bool created = IsCreated(node);
  if (created) {
    ++created_;
    if (node.meta().provenance) {
      for (const std::string& from : node.meta().provenance->from) {
        inst.replaced_by[from].push_back(id);
      }
    }
  }
  Indent(indent_);
  absl::StrAppend(&out_, "\"n", id, "\" [label=<");
  AppendLabel(module, node, created);
  out_.append(">];\n");
  return id;
}

void DotBuilder::AppendLabel(const Module& module, const Node& node,
                             bool created) {
  DotNodeKind kind = ClassifyNodeForDot(node);
  const bool small = kind == DotNodeKind::kWeight;
  auto fill = options_.fill_colors.find(&node);
  absl::StrAppend(&out_, "<TABLE BORDER=\"", created ? 3 : 1,
                  "\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"",
                  small ? 1 : 2, "\" STYLE=\"rounded\" BGCOLOR=\"",
                  fill != options_.fill_colors.end() ? absl::string_view(fill->second)
                                                     : DotKindColor(kind),
                  "\" COLOR=\"",
                  created ? kCreatedColor : kBorderColor, "\">");
  auto row = [&](absl::string_view font_attrs, auto&& body) {
    out_.append("<TR><TD>");
    if (!font_attrs.empty()) absl::StrAppend(&out_, "<FONT ", font_attrs, ">");
    body();
    if (!font_attrs.empty()) out_.append("</FONT>");
    out_.append("</TD></TR>");
  };
  const absl::string_view detail_font =
      small ? "POINT-SIZE=\"8\"" : "POINT-SIZE=\"9\"";
  // Name.
  row(small ? "POINT-SIZE=\"9\"" : "", [&] {
    out_.append("<B>");
    AppendHtmlEscaped(&out_, node.name());
    out_.append("</B>");
  });
  // Opcode and target; the output node's name already says it all.
  if (!(node.op() == OpCode::kOutput && node.name() == OpCodeName(node.op()))) {
    row(detail_font, [&] {
      Append(&out_, OpCodeName(node.op()));
      bool show_target =
          node.op() != OpCode::kOutput &&
          !(node.op() == OpCode::kPlaceholder && node.target() == node.name());
      if (show_target) {
        out_.append(": ");
        AppendHtmlEscaped(&out_, node.target());
      }
    });
  }
  // Type; a weight without one shows its tensor's.
  if (HasType(node)) {
    row(detail_font, [&] { AppendType(&out_, node); });
  } else if (node.op() == OpCode::kGetAttr) {
    if (const Tensor* t = module.FindTensor(node.target())) {
      row(detail_font, [&] { AppendHtmlEscaped(&out_, PrintType(t->type())); });
    }
  }
  if (node.op() == OpCode::kCallFunction) {
    bool quant = kind == DotNodeKind::kQuantize;
    std::string args = ArgsText(node, quant);
    if (!args.empty()) {
      bool cut = false;
      absl::string_view text = quant ? args : Shorten(args, kMaxArgsText, &cut);
      row(quant ? "POINT-SIZE=\"9\" COLOR=\"#880e4f\""
                : "POINT-SIZE=\"8\" COLOR=\"#424242\"",
          [&] {
            AppendHtmlEscaped(&out_, text);
            if (cut) out_.append(" …");
          });
    }
  }
  if (node.op() == OpCode::kCallModule) {
    row("POINT-SIZE=\"8\" COLOR=\"#424242\"", [&] {
      const Module* sub = module.FindSubmodule(node.target());
      if (sub == nullptr) {
        out_.append("(no such submodule)");
        return;
      }
      size_t ops = 0;
      std::vector<absl::string_view> listed;
      for (const Node* n : sub->graph().nodes()) {
        if (n->op() != OpCode::kCallFunction && n->op() != OpCode::kCallModule)
          continue;
        ++ops;
        absl::string_view t = n->target();
        if (listed.size() <= kMaxListedOps &&
            std::find(listed.begin(), listed.end(), t) == listed.end()) {
          listed.push_back(t);
        }
      }
      absl::StrAppend(&out_, ops, ops == 1 ? " op" : " ops");
      for (size_t i = 0; i < listed.size() && i < kMaxListedOps; ++i) {
        out_.append(i == 0 ? ": " : ", ");
        AppendHtmlEscaped(&out_, listed[i]);
      }
      if (listed.size() > kMaxListedOps) out_.append(", …");
    });
  }
  if (auto note = options_.notes.find(&node); note != options_.notes.end()) {
    row("POINT-SIZE=\"10\"", [&] {
      out_.append("<B>");
      AppendHtmlEscaped(&out_, note->second);
      out_.append("</B>");
    });
  }
  if (created) {
    row(absl::StrCat("POINT-SIZE=\"9\" COLOR=\"", kCreatedColor, "\""), [&] {
      out_.append("new");
      const std::string& pass =
          node.meta().provenance ? node.meta().provenance->pass : std::string();
      if (!pass.empty()) {
        out_.append(": ");
        AppendHtmlEscaped(&out_, pass);
      }
    });
  }
  out_.append("</TABLE>");
}

void DotBuilder::DrawGhosts(const Graph& graph, const Instance& inst) {
  auto it = ghosts_by_graph_.find(&graph);
  if (it == ghosts_by_graph_.end()) return;
  // Boxes first, so ghosts that read other ghosts can be joined.
  absl::flat_hash_map<absl::string_view, int> ghost_ids;
  for (const DotGhost* g : it->second) {
    int id = next_ghost_++;
    ++boxes_;
    ++ghosts_drawn_;
    ghost_ids[g->name] = id;
    Indent(indent_);
    absl::StrAppend(&out_, "\"g", id,
                    "\" [shape=box, style=\"dashed,rounded\", color=\"",
                    kGhostColor, "\", fontcolor=\"", kGhostColor,
                    "\", margin=\"0.08,0.03\", label=<<S>");
    AppendHtmlEscaped(&out_, g->name);
    out_.append("</S><BR/><FONT POINT-SIZE=\"9\">removed: ");
    AppendHtmlEscaped(&out_, g->op);
    if (!g->type.empty()) {
      out_.append("<BR/>");
      AppendHtmlEscaped(&out_, g->type);
    }
    out_.append("</FONT>>];\n");
  }
  constexpr absl::string_view kGhostEdge =
      " [style=dashed, color=\"#9e9e9e\", arrowhead=empty];\n";
  auto endpoint = [&](const std::string& name) -> std::string {
    auto ghost = ghost_ids.find(name);
    if (ghost != ghost_ids.end())
      return absl::StrCat("\"g", ghost->second, "\"");
    const Node* n = graph.FindNode(name);
    if (n == nullptr) return "";
    auto box = inst.box.find(n);
    if (box == inst.box.end() || box->second < 0) return "";
    return absl::StrCat("\"n", box->second, "\"");
  };
  for (const DotGhost* g : it->second) {
    std::string self = absl::StrCat("\"g", ghost_ids[g->name], "\"");
    for (const std::string& in : g->inputs) {
      std::string from = endpoint(in);
      if (!from.empty())
        absl::StrAppend(&edges_, "  ", from, " -> ", self, kGhostEdge);
    }
    auto replaced = inst.replaced_by.find(g->name);
    if (replaced != inst.replaced_by.end()) {
      for (int to : replaced->second) {
        absl::StrAppend(&edges_, "  ", self, " -> \"n", to,
                        "\" [style=dashed, color=\"", kCreatedColor,
                        "\", arrowhead=empty, label=<<FONT COLOR=\"",
                        kCreatedColor, "\">replaced by</FONT>>];\n");
      }
      continue;
    }
    // Without a replacement, the users it had still say where it was.
    for (const std::string& user : g->users) {
      std::string to = endpoint(user);
      if (!to.empty())
        absl::StrAppend(&edges_, "  ", self, " -> ", to, kGhostEdge);
    }
  }
}

// Boxes `module` would take with submodules expanded (`expand`) or not. A
// submodule drawn in a cluster has no boxes for its placeholders and output.
size_t CountBoxes(const Module& module, bool expand, int depth,
                  absl::flat_hash_map<const Module*, size_t>& memo) {
  auto it = memo.find(&module);
  if (it != memo.end()) return it->second;
  size_t count = 0;
  for (const Node* n : module.graph().nodes()) {
    if (depth > 0 &&
        (n->op() == OpCode::kPlaceholder || n->op() == OpCode::kOutput)) {
      continue;
    }
    const Module* sub =
        n->op() == OpCode::kCallModule && expand && depth < kMaxClusterDepth
            ? module.FindSubmodule(n->target())
            : nullptr;
    count += sub != nullptr ? CountBoxes(*sub, expand, depth + 1, memo) : 1;
  }
  memo[&module] = count;
  return count;
}

void AppendNoteNode(std::string* out, absl::string_view text) {
  out->append(
      "  \"note\" [shape=note, style=filled, fillcolor=\"#fff8dc\", "
      "color=\"#b8860b\", fontcolor=\"#5c4300\", label=<");
  AppendHtmlEscaped(out, text);
  out->append(">];\n");
}

}  // namespace

DotNodeKind ClassifyNodeForDot(const Node& node) {
  switch (node.op()) {
    case OpCode::kPlaceholder:
      return DotNodeKind::kInput;
    case OpCode::kOutput:
      return DotNodeKind::kOutput;
    case OpCode::kGetAttr:
      return DotNodeKind::kWeight;
    case OpCode::kCallModule:
      return DotNodeKind::kModule;
    case OpCode::kCallFunction:
      break;
  }
  if (IsCollectiveOp(node.target())) return DotNodeKind::kCollective;
  // The op's traits decide; extension ops choose theirs when they register.
  switch (KindOf(node)) {
    case OpKind::kQuantize:
      return DotNodeKind::kQuantize;
    case OpKind::kContraction:
      return DotNodeKind::kComputeHeavy;
    case OpKind::kReduction:
      return DotNodeKind::kReduction;
    case OpKind::kPointwise:
      return DotNodeKind::kPointwise;
    case OpKind::kView:
      return DotNodeKind::kShape;
    case OpKind::kOther:
      break;
  }
  return DotNodeKind::kOther;
}

absl::string_view DotKindColor(DotNodeKind kind) {
  switch (kind) {
    case DotNodeKind::kInput:
      return "#b3d9ff";
    case DotNodeKind::kOutput:
      return "#ffcc99";
    case DotNodeKind::kWeight:
      return "#eeeeee";
    case DotNodeKind::kComputeHeavy:
      return "#ff9e9e";
    case DotNodeKind::kReduction:
      return "#d9b3ff";
    case DotNodeKind::kPointwise:
      return "#fff3a8";
    case DotNodeKind::kShape:
      return "#c8f0c8";
    case DotNodeKind::kQuantize:
      return "#ffb3e6";
    case DotNodeKind::kModule:
      return "#b3e0e0";
    case DotNodeKind::kCollective:
      return "#ff8f00";
    case DotNodeKind::kOther:
      return "#ffffff";
  }
  return "#ffffff";
}

absl::string_view DotKindName(DotNodeKind kind) {
  switch (kind) {
    case DotNodeKind::kInput:
      return "input";
    case DotNodeKind::kOutput:
      return "output";
    case DotNodeKind::kWeight:
      return "weight";
    case DotNodeKind::kComputeHeavy:
      return "compute-heavy";
    case DotNodeKind::kReduction:
      return "reduction";
    case DotNodeKind::kPointwise:
      return "pointwise";
    case DotNodeKind::kShape:
      return "shape";
    case DotNodeKind::kQuantize:
      return "quantize";
    case DotNodeKind::kModule:
      return "module";
    case DotNodeKind::kCollective:
      return "collective";
    case DotNodeKind::kOther:
      return "other";
  }
  return "other";
}

void AppendHtmlEscaped(std::string* out, absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&':
        out->append("&amp;");
        break;
      case '<':
        out->append("&lt;");
        break;
      case '>':
        out->append("&gt;");
        break;
      case '"':
        out->append("&quot;");
        break;
      case '\'':
        out->append("&#39;");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          AppendHexByte(out, c);
        } else if (c < 0x80) {
          out->push_back(static_cast<char>(c));
        } else if (size_t n = Utf8SequenceLength(text.substr(i)); n > 0) {
          Append(out, text.substr(i, n));
          i += n;
          continue;
        } else {
          AppendHexByte(out, c);
        }
    }
    ++i;
  }
}

void AddPassDiff(const Module& before, const Module& after,
                 absl::string_view pass, DotOptions* options) {
  if (pass.empty()) {
    options->created_by_any_pass = true;
  } else {
    options->created_by_pass = std::string(pass);
  }
  std::vector<std::pair<const Module*, const Module*>> work = {
      {&before, &after}};
  while (!work.empty()) {
    auto [b, a] = work.back();
    work.pop_back();
    const Graph& after_graph = a->graph();
    for (const Node* n : b->graph().nodes()) {
      if (after_graph.FindNode(n->name()) != nullptr) continue;
      DotGhost ghost;
      ghost.graph = &after_graph;
      ghost.name = n->name();
      ghost.op = std::string(OpCodeName(n->op()));
      if (n->op() != OpCode::kOutput)
        absl::StrAppend(&ghost.op, ": ", n->target());
      if (n->type().has_value()) ghost.type = PrintType(*n->type());
      for (const Node* in : n->unique_inputs())
        ghost.inputs.push_back(in->name());
      for (const Node* user : n->users()) ghost.users.push_back(user->name());
      options->ghosts.push_back(std::move(ghost));
    }
    for (const auto& [name, sub] : b->submodules()) {
      if (const Module* s = a->FindSubmodule(name))
        work.emplace_back(sub.get(), s);
    }
  }
}

DotResult ModuleToDot(const Module& module, const DotOptions& options) {
  DotResult result;
  const size_t limit = options.max_nodes;
  const size_t top_nodes = module.graph().num_nodes();
  bool expand = options.cluster_fused;
  absl::flat_hash_map<const Module*, size_t> memo;
  size_t boxes = CountBoxes(module, expand, 0, memo) + options.ghosts.size();
  std::vector<std::string> notes;
  if (limit > 0 && expand && boxes > limit) {
    expand = false;
    result.collapsed = true;
    notes.push_back(
        absl::StrCat("The graph has ", boxes,
                     " boxes with its submodules expanded, above the limit of ",
                     limit, ": submodules are drawn collapsed."));
    boxes = top_nodes + options.ghosts.size();
  }
  DotOptions trimmed;
  const DotOptions* used = &options;
  if (limit > 0 && boxes > limit && !options.ghosts.empty()) {
    // Ghosts go first: the graph itself matters more.
    trimmed = options;
    trimmed.ghosts.clear();
    used = &trimmed;
    notes.push_back(
        absl::StrCat(options.ghosts.size(),
                     " removed nodes are not drawn (above the limit of ", limit,
                     " boxes)."));
    boxes = top_nodes;
  }
  size_t top_limit = 0;
  if (limit > 0 && top_nodes > limit) {
    top_limit = limit;
    result.truncated = true;
    notes.push_back(absl::StrCat("The graph has ", top_nodes,
                                 " nodes, above the limit of ", limit,
                                 ": only the first ", limit, " are drawn."));
  }

  DotBuilder builder(*used, expand, top_limit);
  builder.Build(module, std::min(boxes, limit > 0 ? limit : boxes));
  result.boxes = builder.boxes();

  std::string& out = result.text;
  out.reserve(builder.nodes_text().size() + builder.edges_text().size() + 2048);
  out.append(
      "digraph \"graft\" {\n"
      "  graph [rankdir=TB, compound=true, fontname=\"Helvetica\", "
      "fontsize=11, "
      "nodesep=0.25, ranksep=0.35, labelloc=t];\n"
      "  node [shape=plain, fontname=\"Helvetica\", fontsize=11];\n"
      "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\", "
      "fontcolor=\"#555555\", arrowsize=0.7];\n");
  out.append(builder.nodes_text());
  out.append(builder.edges_text());

  // The title and, when a diff is shown, what its marks mean.
  std::string label;
  if (!options.title.empty()) {
    label.append("<B>");
    AppendHtmlEscaped(&label, options.title);
    label.append("</B>");
  }
  bool diff = options.created_by_any_pass || !options.created_by_pass.empty() ||
              !options.created.empty() || !options.ghosts.empty();
  if (diff) {
    if (!label.empty()) label.append("<BR/>");
    absl::StrAppend(&label, "<FONT POINT-SIZE=\"10\"><FONT COLOR=\"",
                    kCreatedColor, "\">red border: created (",
                    builder.created(), ")</FONT>");
    absl::StrAppend(&label, "   <FONT COLOR=\"#757575\">dashed grey: removed (",
                    builder.ghosts_drawn(), ")</FONT></FONT>");
  }
  if (!label.empty()) absl::StrAppend(&out, "  label=<", label, ">;\n");

  if (!notes.empty()) {
    std::string note = absl::StrCat("Large graph (limit ", limit, " boxes):");
    for (const std::string& n : notes) absl::StrAppend(&note, " ", n);
    AppendNoteNode(&out, note);
    result.warning = absl::StrCat(
        absl::StrJoin(notes, " "),
        result.truncated
            ? " Raise --max-nodes to draw more (Graphviz's layout of very "
              "large "
              "graphs is slow), or draw a smaller part of the model."
            : " Raise --max-nodes to see them expanded (Graphviz's layout gets "
              "slow), or leave out --cluster-fused to draw them collapsed.");
  }
  out.append("}\n");
  return result;
}

absl::Status WriteModulePicture(const Module& module, const std::string& path,
                                const DotOptions& options,
                                std::string* warning) {
  // Check the name before drawing: a typo should not cost a big layout.
  ASSIGN_OR_RETURN(PictureFormat format, PictureFormatForPath(path));
  if (format != PictureFormat::kDot && !HaveGraphviz()) {
    return absl::FailedPreconditionError(GraphvizMissingMessage());
  }
  DotResult dot = ModuleToDot(module, options);
  if (warning != nullptr) *warning = std::move(dot.warning);
  return WritePicture(path, dot.text);
}

}  // namespace graft
