#ifndef GRAFT_ONNX_ONNX_SEQUENCES_H_
#define GRAFT_ONNX_ONNX_SEQUENCES_H_

// ONNX's sequences (lists of tensors: torch.tensor_split's
// SplitToSequence, the list a scripted loop appends to) as the importer
// keeps them: the names of the tensors in each, with every length and
// position known at import. graft's graphs hold tensors only, so each
// sequence op becomes the tensor nodes it stands for (Slice, Unsqueeze,
// Concat) or none (SequenceInsert only extends the list), and a position
// computed at run time is refused by name.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "onnx/onnx_expansion.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

class Sequences {
 public:
  // The contents of a value when known at import.
  using KnownValue = std::function<std::optional<Tensor>(const std::string& name)>;

  // Whether `node` makes or reads sequences: a sequence op, or an Identity
  // of a sequence (a Loop's carried list, an If's branch output).
  bool Handles(const onnx::NodeProto& node) const;
  bool IsSequence(const std::string& name) const { return sequences_.contains(name); }
  // An error naming the first input of `node` that is a sequence, or OK:
  // for the ops that read tensors only.
  absl::Status RefuseSequenceInputs(const onnx::NodeProto& node) const;

  // The tensor nodes `node` stands for (in `opset`'s forms); the sequences
  // it makes are recorded under its outputs' names.
  absl::StatusOr<std::vector<onnx::NodeProto>> Expand(const onnx::NodeProto& node, int64_t opset,
                                                      const ValueTypeLookup& types, const KnownValue& known);

 private:
  // A sequence: the first `length` names of `items`. Appending to a
  // sequence whose items end with it extends them in place (the items are
  // only ever appended to, so shorter sequences sharing them are
  // unchanged): a loop's list grows in linear time.
  struct Sequence {
    std::shared_ptr<std::vector<std::string>> items = std::make_shared<std::vector<std::string>>();
    size_t length = 0;
    std::vector<std::string> Names() const { return {items->begin(), items->begin() + length}; }
  };

  absl::StatusOr<const Sequence*> Find(const std::string& name) const;
  // A new sequence of `names`, counted against the copying budget.
  absl::StatusOr<Sequence> Copy(std::vector<std::string> names);

  absl::flat_hash_map<std::string, Sequence> sequences_;
  int64_t copied_ = 0;  // Bytes of names copied into new sequences so far.
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_SEQUENCES_H_
