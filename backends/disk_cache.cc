#include "backends/disk_cache.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/types/span.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/file_io.h"
#include "support/atomic_file.h"
#include "support/cache_dir.h"
#include "support/file_hash_memo.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'G', 'R', 'A', 'F', 'T', 'C', 'C', '\0'};
// 2: the payload starts at a multiple of kPayloadAlignment.
constexpr uint32_t kFormatVersion = 2;
constexpr uint64_t kPayloadAlignment = 64;
constexpr absl::string_view kEntrySuffix = ".entry";

// Fixed-size header of an entry file; the key follows, then zeros up to
// the next multiple of kPayloadAlignment, then the payload.
struct EntryHeader {
  char magic[8];
  uint32_t version;
  uint32_t key_bytes;
  uint64_t payload_bytes;
  uint64_t checksum;  // Of key and payload.
};
static_assert(sizeof(EntryHeader) == 32);

uint64_t EntryChecksum(absl::string_view key, absl::Span<const absl::string_view> payload) {
  FingerprintBuilder b;
  b.AddString(key).AddStringInParts(payload);
  return b.Finish().low;
}

uint64_t EntryChecksum(absl::string_view key, absl::string_view payload) {
  return EntryChecksum(key, absl::Span<const absl::string_view>(&payload, 1));
}

// Using an entry marks it recently used (for eviction) at most this often:
// each mark changes the file's identity, and with it the memo's record.
constexpr int64_t kMarkUsedEverySeconds = 3600;
// The memo records a checksum found to hold, tagged apart from content
// hashes.
constexpr uint64_t kVouchedTag = 0x636865636b73756dULL;  // "checksum"

int64_t SecondsSince(const struct timespec& t) {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec - t.tv_sec);
}

uint64_t PayloadOffset(uint32_t key_bytes) {
  const uint64_t end = sizeof(EntryHeader) + uint64_t{key_bytes};
  return (end + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment;
}

// A whole file mapped read-only; null if it cannot be.
std::shared_ptr<const void> MapWholeFile(const std::string& path, uint64_t& size,
                                         struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* data = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    size = static_cast<uint64_t>(st.st_size);
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (data == MAP_FAILED) return nullptr;
  const uint64_t bytes = size;
  return std::shared_ptr<const void>(data, [bytes](const void* p) {
    ::munmap(const_cast<void*>(p), bytes);
  });
}

bool IsEntry(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_regular_file(ec) &&
         absl::EndsWith(e.path().filename().string(), kEntrySuffix);
}

// The regular files of `dir`, without throwing: a directory that cannot be
// read is an error, one that does not exist is empty.
absl::StatusOr<std::vector<fs::directory_entry>> Files(const std::string& dir) {
  std::vector<fs::directory_entry> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return files;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) files.push_back(*it);
  }
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read ", dir, ": ", ec.message()));
  }
  return files;
}

}  // namespace

DiskCache::DiskCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)),
      entries_dir_(absl::StrCat(dir_, "/v", kFormatVersion)),
      max_bytes_(max_bytes),
      warn_([](const std::string& message) {
        std::fprintf(stderr, "graft: warning: %s\n", message.c_str());
      }) {}

namespace {

// Background stores not yet written, of every DiskCache in the process: a
// load waits for all of them, so that two caches over one directory in one
// process (two graft::Jit functions, say) see each other's entries as soon
// as a second process would.
struct PendingStores {
  std::mutex mu;
  std::condition_variable cv;
  int64_t count = 0;
};

PendingStores& Pending() {
  static auto* pending = [] {
    auto* p = new PendingStores();
    // A forked child has no writer thread: it must not wait for the
    // stores its parent queued (the parent writes them), nor find the
    // mutex held by a thread that does not exist in it.
    pthread_atfork([] { Pending().mu.lock(); }, [] { Pending().mu.unlock(); },
                   [] {
                     Pending().mu.unlock();
                     Pending().count = 0;
                   });
    return p;
  }();
  return *pending;
}

}  // namespace

DiskCache::~DiskCache() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (!writer_.joinable()) return;
  if (writer_pid_ == ::getpid()) {
    writer_.join();
  } else {
    // A forked child: the writer thread is its parent's, not here to join.
    new std::thread(std::move(writer_));  // Released, never joined.
  }
}

void DiskCache::StoreInBackground(std::string key, std::string payload) {
  StoreInBackground(std::move(key), PayloadParts::Owning(std::move(payload)));
}

void DiskCache::StoreInBackground(std::string key, PayloadParts payload) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    // In a forked child the writer thread does not exist: write now.
    const bool writer_usable = !writer_.joinable() || writer_pid_ == ::getpid();
    if (writer_usable) {
      try {
        if (!writer_.joinable()) {
          writer_ = std::thread([this] { WriteQueued(); });
          writer_pid_ = ::getpid();
        }
        queue_.emplace_back(std::move(key), std::move(payload));
        std::lock_guard<std::mutex> pending(Pending().mu);
        ++Pending().count;
        queue_cv_.notify_all();
        return;
      } catch (const std::exception&) {
        // No thread or no memory for the queue: written now instead.
      }
    }
  }
  Store(key, payload);
}

void DiskCache::WriteQueued() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (true) {
    queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // Stopping, with everything written.
    std::pair<std::string, PayloadParts> entry = std::move(queue_.front());
    queue_.pop_front();
    ++writing_;
    lock.unlock();
    Store(entry.first, entry.second);
    {
      std::lock_guard<std::mutex> pending_lock(Pending().mu);
      --Pending().count;
    }
    Pending().cv.notify_all();
    lock.lock();
    --writing_;
    queue_cv_.notify_all();
  }
}

void DiskCache::WaitForStores() const {
  std::unique_lock<std::mutex> lock(Pending().mu);
  Pending().cv.wait(lock, [] { return Pending().count == 0; });
}

std::string DiskCache::DefaultDir() { return DefaultCacheDir(); }

uint64_t DiskCache::DefaultMaxBytes() {
  uint64_t mb = 0;
  if (const char* v = std::getenv("GRAFT_CACHE_MAX_MB");
      v != nullptr && absl::SimpleAtoi(v, &mb)) {
    return mb << 20;
  }
  return kDefaultMaxBytes;
}

std::string DiskCache::EntryPath(absl::string_view key) const {
  FingerprintBuilder b;
  b.AddString(key);
  return absl::StrCat(entries_dir_, "/", b.Finish().ToHex(), kEntrySuffix);
}

void DiskCache::Warn(const std::string& what) {
  if (!warned_.exchange(true)) {
    warn_(absl::StrCat("compile cache at ", dir_, ": ", what,
                       "; compiled code is not kept between runs"));
  }
}

std::optional<std::string> DiskCache::Load(absl::string_view key) {
  std::optional<DiskEntry> entry = Map(key);
  if (!entry.has_value()) return std::nullopt;
  return std::string(entry->payload);
}

std::optional<DiskEntry> DiskCache::Map(absl::string_view key) {
  WaitForStores();
  const std::string path = EntryPath(key);
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  uint64_t size = 0;
  struct stat st;
  std::shared_ptr<const void> mapping = MapWholeFile(path, size, st);
  if (mapping == nullptr) return std::nullopt;
  const char* bytes = static_cast<const char*>(mapping.get());
  EntryHeader h;
  bool good = size >= sizeof(h);
  if (good) {
    std::memcpy(&h, bytes, sizeof(h));
    // Compared without adding, which a damaged header could overflow.
    good = std::memcmp(h.magic, kMagic, sizeof(kMagic)) == 0 &&
           h.version == kFormatVersion && PayloadOffset(h.key_bytes) <= size &&
           h.payload_bytes == size - PayloadOffset(h.key_bytes);
  }
  if (good) {
    absl::string_view stored_key(bytes + sizeof(h), h.key_bytes);
    absl::string_view payload(bytes + PayloadOffset(h.key_bytes), h.payload_bytes);
    // Marking the entry used changes its identity: no memo record then.
    const bool mark_used = SecondsSince(st.st_mtim) >= kMarkUsedEverySeconds;
    good = ChecksumHolds(path, st, PayloadOffset(h.key_bytes), stored_key, payload,
                         h.checksum, /*may_record=*/!mark_used);
    // A different key under the same name is a hash collision, not damage.
    if (good && stored_key != key) return std::nullopt;
    if (good) {
      if (mark_used) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
      return DiskEntry{std::move(mapping), payload};
    }
  }
  Discard(key);
  return std::nullopt;
}

// Whether the entry's checksum matches its key and payload. Hashing a
// large payload (100 MB of packed weights: 5 ms) is done once per entry
// file: the file-hash memo then vouches for the unchanged file, checking a
// sample of its pages on every use.
bool DiskCache::ChecksumHolds(const std::string& path, const struct stat& st,
                              uint64_t payload_offset, absl::string_view key,
                              absl::string_view payload, uint64_t checksum,
                              bool may_record) const {
  const FileIdentity file = FileIdentity::Of(st);
  const Fingerprint vouched{checksum, kVouchedTag};
  const FileHashMemo memo = FileHashMemo::In(dir_);
  if (memo.Find(file, payload_offset, payload.size(), payload.data()) == vouched) {
    return true;
  }
  ++full_checks_;
  if (EntryChecksum(key, payload) != checksum) return false;
  // Only an entry old enough to be on the disk (the kernel writes dirty
  // pages back after 30 s by default), so that a crash cannot leave the
  // memo vouching for pages that never reached it.
  if (may_record && SecondsSince(st.st_ctim) >= vouch_after_seconds_) {
    memo.Record(path, file, payload_offset, payload.size(), vouched, payload.data());
  }
  return true;
}

void DiskCache::Discard(absl::string_view key) {
  ++damaged_;
  std::error_code ignored;
  fs::remove(EntryPath(key), ignored);
}

void DiskCache::Store(absl::string_view key, absl::string_view payload) {
  Store(key, PayloadParts{{payload}, nullptr});
}

void DiskCache::Store(absl::string_view key, const PayloadParts& payload) {
  std::error_code ec;
  fs::create_directories(entries_dir_, ec);
  if (ec) {
    Warn(absl::StrCat("cannot create ", entries_dir_, ": ", ec.message()));
    return;
  }
  EntryHeader h;
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kFormatVersion;
  h.key_bytes = static_cast<uint32_t>(key.size());
  h.payload_bytes = payload.size();
  h.checksum = EntryChecksum(key, payload.parts);
  // Not synced to disk: a lost or torn entry is found by its checksum and
  // rebuilt, and waiting for the disk would slow every first compile.
  absl::StatusOr<AtomicFile> file =
      AtomicFile::Create(EntryPath(key), AtomicFile::Durability::kCache);
  absl::Status s = file.status();
  if (s.ok()) s = file->Write(&h, sizeof(h));
  if (s.ok()) s = file->Write(key);
  if (s.ok()) s = file->PadTo(PayloadOffset(h.key_bytes));
  for (absl::string_view part : payload.parts) {
    if (s.ok()) s = file->Write(part);
  }
  if (s.ok()) s = file->Finish();
  if (s.ok()) s = file->Publish();
  if (!s.ok()) {
    Warn(std::string(s.message()));
    return;
  }
  Evict();
}

void DiskCache::Evict() {
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  absl::StatusOr<std::vector<fs::directory_entry>> files = Files(entries_dir_);
  if (!files.ok()) return;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(30);
  for (const fs::directory_entry& e : *files) {
    if (!IsEntry(e)) {
      // A temporary file of a write that never finished (the process ended
      // first) would otherwise stay for good, outside the size bound.
      std::error_code time_ec, remove_ec;
      if (e.path().filename().string().find(".tmp.") != std::string::npos &&
          e.last_write_time(time_ec) < stale && !time_ec) {
        fs::remove(e.path(), remove_ec);
      }
      continue;
    }
    std::error_code size_ec, time_ec;
    const uint64_t bytes = e.file_size(size_ec);
    const fs::file_time_type used = e.last_write_time(time_ec);
    if (size_ec || time_ec) continue;  // Removed by another process.
    entries.push_back({e.path(), bytes, used});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    std::error_code ignored;
    fs::remove(e.path, ignored);
    total -= e.bytes;
  }
}

absl::StatusOr<DiskCacheInfo> DiskCache::Info() const {
  WaitForStores();
  DiskCacheInfo info{dir_, 0, 0, max_bytes_};
  ASSIGN_OR_RETURN(std::vector<fs::directory_entry> files, Files(entries_dir_));
  for (const fs::directory_entry& e : files) {
    if (!IsEntry(e)) continue;
    std::error_code size_ec;
    const uint64_t bytes = e.file_size(size_ec);
    if (size_ec) continue;
    ++info.entries;
    info.bytes += bytes;
  }
  return info;
}

absl::Status DiskCache::Clear() {
  WaitForStores();
  // Entries of older formats, which this graft never reads, and the hashes
  // of model files (support/file_hash_memo.h), which live beside them.
  for (uint32_t v = 1; v < kFormatVersion; ++v) {
    std::error_code ignored;
    fs::remove_all(absl::StrCat(dir_, "/v", v), ignored);
  }
  std::error_code ignored;
  fs::remove_all(absl::StrCat(dir_, "/file-hashes"), ignored);
  ASSIGN_OR_RETURN(std::vector<fs::directory_entry> files, Files(entries_dir_));
  for (const fs::directory_entry& e : files) {
    std::error_code ec;
    if (!fs::remove(e.path(), ec) && ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot remove ", e.path().string(), ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace graft
