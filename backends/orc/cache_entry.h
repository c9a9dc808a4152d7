#ifndef GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_
#define GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_

// The bytes of an ORC executable in the on-disk compile cache: the hash of
// the program it was compiled from, its object code, and the constant
// weights of its library calls in the layout oneDNN packed them into, so
// that a new process maps them from the entry instead of packing them
// again (for the 100 MB benchmark MLP, the difference between a few
// milliseconds and tens to hundreds).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/payload_parts.h"
#include "runtime/library_call.h"

namespace graft::orc {

struct OrcCacheEntry {
  std::string program_hash;
  std::string object;
  // One per library call of the program, in order: its packed weights
  // (pointing into the bytes the entry was read from), or none.
  std::vector<std::optional<runtime::PackedWeights>> packed;
};

// The bytes in parts: a header (the table and the object, which the parts
// own), then each of `packed`'s data where it lies, at a 64-byte aligned
// offset from the start (zeros between). The packed weights must outlive
// the parts; `keep_alive` is added to what the parts keep.
PayloadParts EncodeOrcCacheEntryInParts(const OrcCacheEntry& entry,
                                        std::shared_ptr<const void> keep_alive);
// The same bytes in one string.
std::string EncodeOrcCacheEntry(const OrcCacheEntry& entry);
// Reads and checks what EncodeOrcCacheEntry wrote; the packed weights point
// into `bytes`. Damage is an error, never a crash.
absl::StatusOr<OrcCacheEntry> DecodeOrcCacheEntry(absl::string_view bytes);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_CACHE_ENTRY_H_
