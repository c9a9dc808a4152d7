#ifndef GRAFT_SERIALIZE_SIDE_FILE_H_
#define GRAFT_SERIALIZE_SIDE_FILE_H_

// The side file of a .gpb model (MODEL.gpb.data), which holds the bytes of
// its large tensors. Layout (docs/serialization.md):
//
//   offset 0   "GRAFTDAT"             magic, 8 bytes
//   offset 8   id, uint64 LE          SideFileHasher of the bytes from 64 on
//   offset 16  size, uint64 LE        the whole file's size
//   offset 24  zeros up to 64
//   offset 64  tensor data, each tensor at a multiple of 64, zeros between
//
// The .gpb records the same id and size (Model.data_file), so a side file
// that belongs to another save, or was cut short, is refused instead of
// being read as the wrong tensors.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

struct SideFileHeader {
  uint64_t id = 0;
  uint64_t size = 0;
};

// The 64 header bytes.
std::string EncodeSideFileHeader(const SideFileHeader& header);
// Reads the header from the start of a side file; `file` names it in errors.
absl::StatusOr<SideFileHeader> DecodeSideFileHeader(absl::string_view bytes,
                                                    absl::string_view file);

// A fast 64-bit hash of a byte stream fed in pieces (the same bytes give the
// same id however they are split). Not cryptographic: it tells files of
// different saves apart, it does not defend against forgery.
class SideFileHasher {
 public:
  SideFileHasher();
  void Update(const void* data, size_t size);
  uint64_t Finish();

 private:
  void Block(const unsigned char* p);

  uint64_t lanes_[4];
  unsigned char pending_[32];
  size_t pending_size_ = 0;
  uint64_t total_ = 0;
};

}  // namespace graft

#endif  // GRAFT_SERIALIZE_SIDE_FILE_H_
