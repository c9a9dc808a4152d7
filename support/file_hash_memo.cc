#include "support/file_hash_memo.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/atomic_file.h"
#include "support/cache_dir.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

// The format and the hash in one: records of XXH3-128 (FingerprintBuilder).
constexpr char kMagic[8] = {'G', 'F', 'H', 'X', 'X', 'H', '3', '2'};
constexpr uint64_t kPage = 4096;
constexpr int kSamples = 64;

// A hash of up to kSamples pages spread evenly over `length` bytes, read
// by `read(offset, size, out)` (false: unreadable).
template <typename Read>
std::optional<Fingerprint> SampleHash(uint64_t length, Read read) {
  FingerprintBuilder b;
  std::vector<char> page(kPage);
  for (int i = 0; i < kSamples; ++i) {
    const uint64_t at = length <= kPage ? 0 : (length - kPage) / (kSamples - 1) * i;
    const uint64_t n = std::min(kPage, length - at);
    if (!read(at, n, page.data())) return std::nullopt;
    b.AddBytes(page.data(), n);
  }
  return b.Finish();
}

std::optional<Fingerprint> MemorySamples(const void* data, uint64_t length) {
  return SampleHash(length, [data](uint64_t at, uint64_t n, char* out) {
    std::memcpy(out, static_cast<const char*>(data) + at, n);
    return true;
  });
}

// One memo file: what it is for, the hash, and a checksum of both.
struct MemoRecord {
  char magic[8];
  FileIdentity file;
  uint64_t offset;
  uint64_t length;
  Fingerprint hash;
  Fingerprint samples;  // SampleHash of the region.
  uint64_t checksum;
};

uint64_t ChecksumOf(const MemoRecord& r) {
  return Checksum64(&r, offsetof(MemoRecord, checksum));
}

}  // namespace

FileIdentity FileIdentity::Of(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  return id;
}

FileHashMemo FileHashMemo::Default() { return In(DefaultCacheDir()); }

FileHashMemo FileHashMemo::In(const std::string& cache_dir) {
  const char* on = std::getenv("GRAFT_FILE_HASH_MEMO");
  if (on != nullptr && std::string(on) == "0") return FileHashMemo("");
  return FileHashMemo(cache_dir + "/file-hashes");
}

std::string FileHashMemo::PathOf(const FileIdentity& file, uint64_t offset,
                                 uint64_t length) const {
  FingerprintBuilder b;
  b.AddInt(static_cast<int64_t>(file.device)).AddInt(static_cast<int64_t>(file.inode));
  b.AddInt(static_cast<int64_t>(offset)).AddInt(static_cast<int64_t>(length));
  return absl::StrCat(dir_, "/", b.Finish().ToHex());
}

std::optional<Fingerprint> FileHashMemo::Find(const FileIdentity& file, uint64_t offset,
                                              uint64_t length, const void* data) const {
  if (dir_.empty() || length < kMinRegionBytes) return std::nullopt;
  std::ifstream in(PathOf(file, offset, length), std::ios::binary);
  MemoRecord r;
  if (!in.read(reinterpret_cast<char*>(&r), sizeof(r)) || in.peek() != EOF) return std::nullopt;
  if (std::memcmp(r.magic, kMagic, sizeof(kMagic)) != 0 || r.checksum != ChecksumOf(r) ||
      !(r.file == file) || r.offset != offset || r.length != length) {
    return std::nullopt;  // Damaged, or for a file that has changed since.
  }
  // The times say nothing of writes through a shared mapping: the pages
  // sampled when the record was made must still be there.
  if (MemorySamples(data, length) != r.samples) return std::nullopt;
  return r.hash;
}

void FileHashMemo::Record(const std::string& path, const FileIdentity& file, uint64_t offset,
                          uint64_t length, const Fingerprint& hash, const void* data) const {
  if (dir_.empty() || length < kMinRegionBytes) return;
  // Only a file that has not changed for a while, and is as it was when it
  // was opened: a file still being written could change within the same
  // timestamp tick.
  struct stat st;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  if (::stat(path.c_str(), &st) != 0 || !(FileIdentity::Of(st) == file) ||
      file.ctime_ns > now_ns - 2'000'000'000) {
    return;
  }
  // The bytes hashed must be the file's (not a process's own writes into
  // its private mapping): their sampled pages, read from the file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const std::optional<Fingerprint> from_file =
      SampleHash(length, [fd, offset](uint64_t at, uint64_t n, char* out) {
        return ::pread(fd, out, n, static_cast<off_t>(offset + at)) == static_cast<ssize_t>(n);
      });
  ::close(fd);
  const std::optional<Fingerprint> in_memory = MemorySamples(data, length);
  if (!from_file.has_value() || from_file != in_memory) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return;
  MemoRecord r;
  std::memset(&r, 0, sizeof(r));  // Padding too: it is checksummed.
  std::memcpy(r.magic, kMagic, sizeof(kMagic));
  r.file = file;
  r.offset = offset;
  r.length = length;
  r.hash = hash;
  r.samples = *in_memory;
  r.checksum = ChecksumOf(r);
  absl::StatusOr<AtomicFile> out =
      AtomicFile::Create(PathOf(file, offset, length), AtomicFile::Durability::kCache);
  if (!out.ok() || !out->Write(&r, sizeof(r)).ok() || !out->Finish().ok() ||
      !out->Publish().ok()) {
    return;
  }
  Trim();
}

void FileHashMemo::Trim() const {
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code time_ec;
    const fs::file_time_type t = it->last_write_time(time_ec);
    if (!time_ec) files.emplace_back(t, it->path());
  }
  if (files.size() <= static_cast<size_t>(kMaxFiles)) return;
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size() / 2; ++i) fs::remove(files[i].second, ec);
}

}  // namespace graft
