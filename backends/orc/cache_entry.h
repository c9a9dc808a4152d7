#ifndef GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_
#define GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_

// The bytes of an ORC executable in the on-disk compile cache: the hash of
// the program it was compiled from, its object code, and the constant
// weights of its library calls in the layout oneDNN packed them into, so
// that a new process maps them from the entry instead of packing them
// again (for the 100 MB benchmark MLP, the difference between a few
// milliseconds and tens to hundreds).

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/library_call.h"

namespace graft::orc {

struct OrcCacheEntry {
  std::string program_hash;
  std::string object;
  // One per library call of the program, in order: its packed weights
  // (pointing into the bytes the entry was read from), or none.
  std::vector<std::optional<runtime::PackedWeights>> packed;
};

// `packed`'s data is copied into the bytes, each at a 64-byte aligned
// offset from their start.
std::string EncodeOrcCacheEntry(const OrcCacheEntry& entry);
// Reads and checks what EncodeOrcCacheEntry wrote; the packed weights point
// into `bytes`. Damage is an error, never a crash.
absl::StatusOr<OrcCacheEntry> DecodeOrcCacheEntry(absl::string_view bytes);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_
