#ifndef GRAFT_GRAPH_MODULE_FINGERPRINT_H_
#define GRAFT_GRAPH_MODULE_FINGERPRINT_H_

#include "graph/module.h"
#include "support/fingerprint.h"

namespace graft {

// A stable content hash of everything that decides what a module computes:
// for each node in graph order its opcode, target, arguments (node
// references by position, so renaming a node changes nothing), keyword
// arguments (sorted by name), known types and, for ops, the op's schema
// version; every named tensor's name, dtype, dims and bytes; every
// submodule, recursively. Source locations, provenance and free-form meta
// are left out, so the same model read from .graft, .gpb, .json or .onnx
// hashes the same. The compile cache keys compiled code by it.
Fingerprint ModuleFingerprint(const Module& module);

}  // namespace graft

#endif  // GRAFT_GRAPH_MODULE_FINGERPRINT_H_
