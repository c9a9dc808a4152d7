#ifndef GRAFT_BACKENDS_PAYLOAD_PARTS_H_
#define GRAFT_BACKENDS_PAYLOAD_PARTS_H_

// The bytes of a compile cache entry as parts that read as their
// concatenation, pointing into memory that `keep_alive` owns: a large
// entry (an ORC executable's 100 MB of packed weights) is written from
// where the executable keeps its data, with no copy of it first.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace graft {

struct PayloadParts {
  std::vector<absl::string_view> parts;
  std::shared_ptr<const void> keep_alive;

  uint64_t size() const {
    uint64_t n = 0;
    for (absl::string_view p : parts) n += p.size();
    return n;
  }
  // The parts joined.
  std::string Join() const {
    std::string out;
    out.reserve(size());
    for (absl::string_view p : parts) out.append(p.data(), p.size());
    return out;
  }
  // One part owning its bytes.
  static PayloadParts Owning(std::string bytes) {
    auto owned = std::make_shared<const std::string>(std::move(bytes));
    return PayloadParts{{absl::string_view(*owned)}, owned};
  }
};

}  // namespace graft

#endif  // GRAFT_BACKENDS_PAYLOAD_PARTS_H_
