#include "support/fingerprint.h"

#include <cstring>

#include "absl/strings/str_format.h"

// Header-only use: nothing to link, and the hash inlines into its callers.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace graft {

struct FingerprintBuilder::State {
  XXH3_state_t xxh;
};

std::string Fingerprint::ToHex() const {
  return absl::StrFormat("%016x%016x", high, low);
}

FingerprintBuilder::FingerprintBuilder() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh);
}

FingerprintBuilder::~FingerprintBuilder() = default;

void FingerprintBuilder::Raw(const void* data, size_t size) {
  XXH3_128bits_update(&state_->xxh, data, size);
}

FingerprintBuilder& FingerprintBuilder::AddInt(int64_t value) {
  const char kind = 'i';
  Raw(&kind, 1);
  Raw(&value, sizeof(value));
  return *this;
}

FingerprintBuilder& FingerprintBuilder::AddDouble(double value) {
  const char kind = 'd';
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  Raw(&kind, 1);
  Raw(&bits, sizeof(bits));
  return *this;
}

FingerprintBuilder& FingerprintBuilder::AddString(absl::string_view value) {
  const char kind = 's';
  const uint64_t size = value.size();
  Raw(&kind, 1);
  Raw(&size, sizeof(size));
  Raw(value.data(), value.size());
  return *this;
}

FingerprintBuilder& FingerprintBuilder::AddStringInParts(
    absl::Span<const absl::string_view> parts) {
  const char kind = 's';
  uint64_t size = 0;
  for (absl::string_view p : parts) size += p.size();
  Raw(&kind, 1);
  Raw(&size, sizeof(size));
  for (absl::string_view p : parts) Raw(p.data(), p.size());
  return *this;
}

FingerprintBuilder& FingerprintBuilder::AddBytes(const void* data,
                                                 size_t size) {
  const char kind = 'b';
  const uint64_t n = size;
  Raw(&kind, 1);
  Raw(&n, sizeof(n));
  Raw(data, size);
  return *this;
}

Fingerprint FingerprintBuilder::Finish() const {
  const XXH128_hash_t h = XXH3_128bits_digest(&state_->xxh);
  return Fingerprint{h.high64, h.low64};
}

uint64_t Checksum64(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}

}  // namespace graft
