#ifndef GRAFT_BACKENDS_DISK_CACHE_H_
#define GRAFT_BACKENDS_DISK_CACHE_H_

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/payload_parts.h"

namespace graft {

// What `graft cache info` shows.
struct DiskCacheInfo {
  std::string dir;
  int64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t max_bytes = 0;
};

// A cache entry's payload as it lies in the mapped entry file, kept alive
// by `keep_alive`; 64-byte aligned, so that a backend can use large parts
// of it in place (packed weights).
struct DiskEntry {
  std::shared_ptr<const void> keep_alive;
  absl::string_view payload;
};

// Compiled code kept on disk between processes: one file per key under
// DIR/v2/, each with a header (magic, format version, lengths, a checksum
// of key and payload), the full key and the payload at a 64-byte aligned
// offset, so a damaged, truncated or
// colliding entry is detected, removed and rebuilt, never trusted. Entries
// are written to a temporary file and renamed into place, so readers and
// concurrent writers of one key only ever see a whole entry. The total size
// stays under a bound: after each store the least recently used entries
// (by modification time, which a load refreshes) are removed. The cache
// only ever costs speed: a directory that cannot be created or written
// (read-only, full) gives one warning per DiskCache and no error.
class DiskCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{2} << 30;  // 2 GiB.

  explicit DiskCache(std::string dir, uint64_t max_bytes = kDefaultMaxBytes);
  // Finishes the stores still being written.
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // $GRAFT_CACHE_DIR, else $XDG_CACHE_HOME/graft, else ~/.cache/graft.
  static std::string DefaultDir();
  // $GRAFT_CACHE_MAX_MB megabytes when set to a number, else the default.
  static uint64_t DefaultMaxBytes();

  // The payload stored under `key`, or nullopt.
  std::optional<std::string> Load(absl::string_view key);
  // The same, mapped rather than read (checked as Load checks it). A
  // large payload is hashed in full once per entry file; from then on
  // the file-hash memo in the cache directory vouches for the unchanged
  // file (same inode, size and times), checking a sample of its pages.
  std::optional<DiskEntry> Map(absl::string_view key);
  // Stores `payload` under `key`, then evicts down to the size bound.
  void Store(absl::string_view key, absl::string_view payload);
  void Store(absl::string_view key, const PayloadParts& payload);
  // The same, written by a thread of the cache's own while the caller goes
  // on (a large entry takes a while to write). Loads, Info and Clear wait
  // for the background stores of every DiskCache of the process; the
  // destructor for its own.
  void StoreInBackground(std::string key, std::string payload);
  // The same for a payload in parts, which keep_alive keeps until written.
  void StoreInBackground(std::string key, PayloadParts payload);
  // Removes the entry of `key` and counts it as damaged: for an entry whose
  // checks passed but whose payload its reader refused.
  void Discard(absl::string_view key);

  absl::StatusOr<DiskCacheInfo> Info() const;
  // Removes every entry (and stray temporary files, and the entries of
  // older formats); the directory stays.
  absl::Status Clear();

  const std::string& dir() const { return dir_; }
  // Entries found damaged (and removed) by Load so far.
  int64_t damaged() const { return damaged_.load(); }
  // Payloads hashed in full to check an entry so far: once per entry
  // file, after which the file-hash memo vouches for it (see Map).
  int64_t full_checks() const { return full_checks_.load(); }
  // How old an entry must be before the memo may vouch for it (default
  // 60 s: written back to the disk by then).
  void set_vouch_after_seconds(int64_t seconds) { vouch_after_seconds_ = seconds; }
  // Where the one warning goes; stderr by default.
  void set_warning_sink(std::function<void(const std::string&)> sink) {
    warn_ = std::move(sink);
  }

 private:
  std::string EntryPath(absl::string_view key) const;
  bool ChecksumHolds(const std::string& path, const struct stat& st,
                     uint64_t payload_offset, absl::string_view key,
                     absl::string_view payload, uint64_t checksum,
                     bool may_record) const;
  void Warn(const std::string& what);
  void Evict();
  // Waits until every background store of the process is written.
  void WaitForStores() const;
  void WriteQueued();

  std::string dir_;
  std::string entries_dir_;
  uint64_t max_bytes_;
  std::atomic<int64_t> damaged_{0};
  mutable std::atomic<int64_t> full_checks_{0};
  int64_t vouch_after_seconds_ = 60;
  std::atomic<bool> warned_{false};
  std::function<void(const std::string&)> warn_;

  // Background stores: the queue, and the one thread that writes it.
  mutable std::mutex queue_mu_;
  mutable std::condition_variable queue_cv_;
  std::deque<std::pair<std::string, PayloadParts>> queue_;
  int writing_ = 0;  // Stores taken from the queue and not yet written.
  bool stopping_ = false;
  std::thread writer_;
  int writer_pid_ = 0;  // The process the writer thread belongs to.
};

}  // namespace graft

#endif  // GRAFT_BACKENDS_DISK_CACHE_H_
