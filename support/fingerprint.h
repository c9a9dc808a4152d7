#ifndef GRAFT_SUPPORT_FINGERPRINT_H_
#define GRAFT_SUPPORT_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graft {

// A 128-bit content hash, stable across processes, machines and versions of
// graft: the same bytes give the same fingerprint forever, so it can key
// files on disk. Not a cryptographic hash.
struct Fingerprint {
  uint64_t high = 0;
  uint64_t low = 0;

  // 32 lowercase hex digits.
  std::string ToHex() const;
  bool operator==(const Fingerprint&) const = default;
};

// Builds a Fingerprint from a stream of values (XXH3-128, which hashes
// several GB/s per core, so a model's weights cost little next to reading
// them). Each Add is framed by its kind and length, so ("ab","c") and
// ("a","bc") differ.
class FingerprintBuilder {
 public:
  FingerprintBuilder();
  ~FingerprintBuilder();
  FingerprintBuilder(const FingerprintBuilder&) = delete;
  FingerprintBuilder& operator=(const FingerprintBuilder&) = delete;

  FingerprintBuilder& AddInt(int64_t value);
  FingerprintBuilder& AddDouble(double value);  // By bit pattern.
  FingerprintBuilder& AddString(absl::string_view value);
  // The same as AddString of the parts' concatenation.
  FingerprintBuilder& AddStringInParts(absl::Span<const absl::string_view> parts);
  // Raw bytes, framed by their length.
  FingerprintBuilder& AddBytes(const void* data, size_t size);

  Fingerprint Finish() const;

 private:
  void Raw(const void* data, size_t size);

  struct State;
  std::unique_ptr<State> state_;
};

// The 64-bit XXH3 hash of `data`, for checksums of files written by graft.
uint64_t Checksum64(const void* data, size_t size);

}  // namespace graft

#endif  // GRAFT_SUPPORT_FINGERPRINT_H_
