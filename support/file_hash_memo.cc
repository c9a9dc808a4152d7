#include "support/file_hash_memo.h"

#include <algorithm>
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

constexpr char kMagic[8] = {'G', 'R', 'A', 'F', 'T', 'F', 'H', '1'};

// One memo file: what it is for, the hash, and a checksum of both.
struct MemoRecord {
  char magic[8];
  FileIdentity file;
  uint64_t offset;
  uint64_t length;
  Fingerprint hash;
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

const FileHashMemo& FileHashMemo::Default() {
  static const FileHashMemo* memo = new FileHashMemo(DefaultCacheDir() + "/file-hashes");
  return *memo;
}

std::string FileHashMemo::PathOf(const FileIdentity& file, uint64_t offset,
                                 uint64_t length) const {
  FingerprintBuilder b;
  b.AddInt(static_cast<int64_t>(file.device)).AddInt(static_cast<int64_t>(file.inode));
  b.AddInt(static_cast<int64_t>(offset)).AddInt(static_cast<int64_t>(length));
  return absl::StrCat(dir_, "/", b.Finish().ToHex());
}

std::optional<Fingerprint> FileHashMemo::Find(const FileIdentity& file, uint64_t offset,
                                              uint64_t length) const {
  if (length < kMinRegionBytes) return std::nullopt;
  std::ifstream in(PathOf(file, offset, length), std::ios::binary);
  MemoRecord r;
  if (!in.read(reinterpret_cast<char*>(&r), sizeof(r)) || in.peek() != EOF) return std::nullopt;
  if (std::memcmp(r.magic, kMagic, sizeof(kMagic)) != 0 || r.checksum != ChecksumOf(r) ||
      !(r.file == file) || r.offset != offset || r.length != length) {
    return std::nullopt;  // Damaged, or for a file that has changed since.
  }
  return r.hash;
}

void FileHashMemo::Record(const FileIdentity& file, uint64_t offset, uint64_t length,
                          const Fingerprint& hash) const {
  if (length < kMinRegionBytes) return;
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
