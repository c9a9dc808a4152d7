#include "serialize/side_file.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "serialize/gpb_format.h"

namespace graft {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the side file's header and tensor data are little-endian");

constexpr absl::string_view kMagic = "GRAFTDAT";
constexpr uint64_t kPrime1 = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kPrime2 = 0xbf58476d1ce4e5b9ULL;
constexpr uint64_t kPrime3 = 0x94d049bb133111ebULL;

void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// splitmix64's finalizer: every input bit affects every output bit.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * kPrime2;
  z = (z ^ (z >> 27)) * kPrime3;
  return z ^ (z >> 31);
}

}  // namespace

std::string EncodeSideFileHeader(const SideFileHeader& header) {
  std::string out(kSideFileHeaderSize, '\0');
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  PutU64(out.data() + 8, header.id);
  PutU64(out.data() + 16, header.size);
  return out;
}

absl::StatusOr<SideFileHeader> DecodeSideFileHeader(absl::string_view bytes,
                                                    absl::string_view file) {
  if (bytes.size() < kSideFileHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": not a graft side file: it is ", bytes.size(),
        " bytes long, shorter than its ", kSideFileHeaderSize, "-byte header"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": not a graft side file: it does not start with \"GRAFTDAT\""));
  }
  SideFileHeader header;
  header.id = GetU64(bytes.data() + 8);
  header.size = GetU64(bytes.data() + 16);
  return header;
}

SideFileHasher::SideFileHasher()
    : lanes_{kPrime1, kPrime2, kPrime3, kPrime1 ^ kPrime2} {}

// Four independent lanes, so the multiplications of one block overlap.
void SideFileHasher::Block(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    uint64_t h = (lanes_[i] ^ w) * kPrime1;
    lanes_[i] = h ^ (h >> 32);
  }
}

void SideFileHasher::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, sizeof(pending_) - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    size -= take;
    if (pending_size_ < sizeof(pending_)) return;
    Block(pending_);
    pending_size_ = 0;
  }
  while (size >= sizeof(pending_)) {
    Block(p);
    p += sizeof(pending_);
    size -= sizeof(pending_);
  }
  std::memcpy(pending_, p, size);
  pending_size_ = size;
}

uint64_t SideFileHasher::Finish() {
  if (pending_size_ > 0) {
    std::memset(pending_ + pending_size_, 0, sizeof(pending_) - pending_size_);
    Block(pending_);
    pending_size_ = 0;
  }
  uint64_t h = Mix(total_ ^ kPrime3);
  for (uint64_t lane : lanes_) h = Mix(h ^ Mix(lane));
  return h;
}

}  // namespace graft
