#include "backends/orc/cache_entry.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "runtime/byte_stream.h"
#include "support/status_macros.h"

namespace graft::orc {
namespace {

constexpr absl::string_view kMagic = "graft-orc-executable 2\n";
constexpr uint64_t kAlignment = 64;

uint64_t AlignUp(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

PayloadParts EncodeOrcCacheEntryInParts(const OrcCacheEntry& entry,
                                        std::shared_ptr<const void> keep_alive) {
  // The table first, with offsets from the start of the bytes; the data
  // after it. Offsets depend on the table's size, which does not depend on
  // them (fixed-width fields).
  auto table = [&](uint64_t data_start) {
    runtime::ByteWriter w;
    w.PutString(entry.program_hash);
    w.PutString(entry.object);
    w.Put<uint64_t>(entry.packed.size());
    uint64_t offset = data_start;
    for (const std::optional<runtime::PackedWeights>& p : entry.packed) {
      w.Put<uint8_t>(p.has_value());
      if (!p.has_value()) continue;
      w.Put<uint64_t>(offset);
      w.Put<uint64_t>(p->bytes);
      w.PutString(p->layout);
      offset = AlignUp(offset + p->bytes);
    }
    return w.Take();
  };
  const uint64_t data_start = AlignUp(kMagic.size() + table(0).size());
  struct Kept {
    std::string header;
    std::shared_ptr<const void> weights;
  };
  auto kept = std::make_shared<Kept>();
  kept->header.append(kMagic.data(), kMagic.size());
  kept->header += table(data_start);
  kept->header.resize(data_start, '\0');
  kept->weights = std::move(keep_alive);
  static const char kZeros[kAlignment] = {};
  PayloadParts out;
  out.parts.push_back(kept->header);
  uint64_t offset = data_start;
  for (const std::optional<runtime::PackedWeights>& p : entry.packed) {
    if (!p.has_value()) continue;
    if (AlignUp(offset) != offset) {
      out.parts.emplace_back(kZeros, AlignUp(offset) - offset);
      offset = AlignUp(offset);
    }
    out.parts.emplace_back(static_cast<const char*>(p->data), p->bytes);
    offset += p->bytes;
  }
  out.keep_alive = std::move(kept);
  return out;
}

std::string EncodeOrcCacheEntry(const OrcCacheEntry& entry) {
  return EncodeOrcCacheEntryInParts(entry, nullptr).Join();
}

absl::StatusOr<OrcCacheEntry> DecodeOrcCacheEntry(absl::string_view bytes) {
  if (!absl::StartsWith(bytes, kMagic)) {
    return absl::DataLossError("not an orc executable of this graft");
  }
  runtime::ByteReader in(bytes.substr(kMagic.size()), "orc cache entry");
  OrcCacheEntry entry;
  ASSIGN_OR_RETURN(entry.program_hash, in.GetString());
  ASSIGN_OR_RETURN(entry.object, in.GetString());
  ASSIGN_OR_RETURN(uint64_t calls, in.GetCount(1));
  for (uint64_t i = 0; i < calls; ++i) {
    ASSIGN_OR_RETURN(uint8_t has, in.Get<uint8_t>());
    if (has == 0) {
      entry.packed.push_back(std::nullopt);
      continue;
    }
    ASSIGN_OR_RETURN(uint64_t offset, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(uint64_t size, in.Get<uint64_t>());
    runtime::PackedWeights w;
    ASSIGN_OR_RETURN(w.layout, in.GetString());
    // Written so that nothing overflows: offset <= size of the bytes first.
    if (offset % kAlignment != 0 || offset > bytes.size() || size > bytes.size() - offset) {
      return in.Error("packed weights lie outside the entry");
    }
    w.data = bytes.data() + offset;
    w.bytes = size;
    entry.packed.push_back(std::move(w));
  }
  return entry;
}

}  // namespace graft::orc
