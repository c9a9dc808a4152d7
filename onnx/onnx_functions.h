#ifndef GRAFT_ONNX_ONNX_FUNCTIONS_H_
#define GRAFT_ONNX_ONNX_FUNCTIONS_H_

// A model's local functions (ModelProto.functions, IR version 8 on): what
// PyTorch writes with export_modules_as_functions, and other tools for
// repeated blocks. A call is imported as the function's body, inlined: its
// formal inputs and outputs bound to the call's values, its own values
// renamed after the call, and attributes that refer to the call's
// (ref_attr_name) given the call's value or the function's default. Calls
// inside a body are inlined in turn by the importer.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

class LocalFunctions {
 public:
  explicit LocalFunctions(const onnx::ModelProto& model);

  // The function `node` calls (by domain, name and overload), or null.
  const onnx::FunctionProto* Find(const onnx::NodeProto& node) const;

  // How many nodes a call of `function` becomes once every call inside is
  // inlined too (other nodes count one), saturating at `limit`; an error
  // for a function that calls itself.
  absl::StatusOr<int64_t> InlinedSize(const onnx::FunctionProto& function, int64_t limit, int depth = 0);

  // The body of `function` for the call `call`, renamed and with its
  // attribute references resolved. `call_id` makes the body's own value
  // names unique in the model.
  static absl::StatusOr<std::vector<onnx::NodeProto>> Inline(const onnx::FunctionProto& function,
                                                             const onnx::NodeProto& call,
                                                             const std::string& call_id);

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, const onnx::FunctionProto*> functions_;
  std::map<const onnx::FunctionProto*, int64_t> sizes_;  // InlinedSize's, once known.
  std::map<const onnx::FunctionProto*, bool> sizing_;    // Being sized (a cycle when met again).
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_FUNCTIONS_H_
