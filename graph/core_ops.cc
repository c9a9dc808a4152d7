#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "graph/type_rules.h"

namespace graft {
namespace {

using P = ParamSpec;
using K = ParamKind;

void Add(OpRegistry& r, OpSchema s) {
  absl::Status status = r.Register(std::move(s));
  if (!status.ok()) {
    std::fprintf(stderr, "graft: core op registration failed: %s\n",
                 status.ToString().c_str());
    std::abort();
  }
}

}  // namespace

void RegisterCoreOps(OpRegistry& r) {
  for (const char* name : {"relu", "neg"}) {
    Add(r, {.name = name,
            .params = {P{"input", K::kTensor}},
            .infer = rules::SameAsInput,
            .summary = "elementwise"});
  }
  for (const char* name : {"add", "mul"}) {
    Add(r, {.name = name,
            .params = {P{"input", K::kTensorOrScalar}, P{"other", K::kTensorOrScalar}},
            .infer = rules::BroadcastBinary,
            .summary = "elementwise, broadcasting"});
  }
}

}  // namespace graft
