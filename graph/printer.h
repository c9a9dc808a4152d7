#ifndef GRAFT_GRAPH_PRINTER_H_
#define GRAFT_GRAPH_PRINTER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/argument.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/tensor_type.h"

namespace graft {

// How PrintModule writes tensor data.
struct PrintOptions {
  // A tensor without a recorded init prints as a literal list when it has at
  // most this many elements. A larger one prints as `zeros` or `full(V)` when
  // every element is the same, and otherwise as `elided` (which the parser
  // refuses: the text is a view, .gpb keeps the data). Negative: no limit.
  int64_t max_inline_elements = 64;
};

// The text form of a module (docs/ir.md): its tensors, its submodules
// (recursively) and its graph. ParseModule reads it back, and printing the
// result gives the same bytes.
std::string PrintModule(const Module& module, const PrintOptions& options = {});

// "graph():" and one line per node, without the module's tensors.
std::string PrintGraph(const Graph& graph);

// One node as the graph prints it, without indentation or newline:
// "%relu : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})",
// or "return relu" for the output node. Useful in messages.
std::string PrintNode(const Node& node);

// One argument as it appears among a node's args: "%x", "2.5", "[1, 2]".
std::string PrintArgument(const Argument& argument);

// "f32[batch,16]"; symbols that are not plain names are quoted.
std::string PrintType(const TensorType& type);

// The shortest text that parses back to exactly `value`, always with a '.'
// or an exponent ("1.0", "0.1", "1e+20"), or "inf", "-inf", "nan".
void AppendDouble(std::string* out, double value);
// The same for a float: the shortest text that parses back to it as a float.
void AppendFloat(std::string* out, float value);

// Writes PrintModule's text to `path` through a temporary file and a rename,
// so a failed write leaves no half file.
absl::Status WriteTextModule(const Module& module, absl::string_view path,
                             const PrintOptions& options = {});

}  // namespace graft

#endif  // GRAFT_GRAPH_PRINTER_H_
