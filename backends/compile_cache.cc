#include "backends/compile_cache.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/module_fingerprint.h"
#include "support/build_id.h"
#include "support/status_macros.h"

namespace graft {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

}  // namespace

std::string CompileCache::Key(const Backend& backend, const Module& module,
                              const CompileOptions& options) {
  // Readable fields first; the full key is also what a disk entry stores.
  // The fingerprint leaves node names out, but an executable reports its
  // outputs by name, so those names are part of the key.
  // The build ID too: two builds of one version may generate different
  // code, and an entry must only be used by the build that made it.
  std::string key = absl::StrCat(
      "graft ", GRAFT_VERSION_STRING, " build ", BuildId(), "|backend ", backend.name(), "|",
      backend.CacheIdentity(options), "|module ",
      ModuleFingerprint(module).ToHex(), "|", options.KeyString(), "|outputs");
  for (const ValueSignature& s : OutputSignature(module.graph())) {
    absl::StrAppend(&key, " ", s.name);
  }
  return key;
}

void CompileCache::CountTrace() {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.traces;
}

CompileCacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CompileCacheStats stats = stats_;
  if (disk_ != nullptr) stats.disk_damaged = disk_->damaged();
  return stats;
}

// Entries from this size on are written in the background.
constexpr size_t kBackgroundStoreBytes = size_t{4} << 20;

absl::StatusOr<std::shared_ptr<Executable>> CompileCache::LoadFromDisk(
    Backend& backend, const std::string& key, const Module& module,
    const CompileOptions& options) {
  std::optional<DiskEntry> entry = disk_->Map(key);
  if (!entry.has_value()) return nullptr;
  absl::StatusOr<std::unique_ptr<Executable>> loaded =
      backend.DeserializeMapped(entry->payload, entry->keep_alive, module, options);
  // An entry the backend cannot read is rebuilt like a damaged one.
  if (!loaded.ok()) {
    disk_->Discard(key);
    return nullptr;
  }
  return std::shared_ptr<Executable>(*std::move(loaded));
}

absl::StatusOr<std::shared_ptr<Executable>> CompileCache::GetOrCompile(
    Backend& backend, const Module& module, const CompileOptions& options,
    CompileReport* report) {
  const std::string key = Key(backend, module, options);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      ++stats_.memory_hits;
      if (report != nullptr) *report = it->second.report;
      return it->second.executable;
    }
  }
  const bool use_disk =
      disk_ != nullptr && !backend.CacheIdentity(options).empty();
  const auto start = std::chrono::steady_clock::now();
  Entry entry;
  bool from_disk = false;
  if (use_disk) {
    ASSIGN_OR_RETURN(entry.executable,
                     LoadFromDisk(backend, key, module, options));
    from_disk = entry.executable != nullptr;
    if (from_disk) entry.report = {{}, 1, 1};
  }
  if (!from_disk) {
    ASSIGN_OR_RETURN(std::unique_ptr<Executable> compiled,
                     CompileWithFallback(backend, module, options,
                                         &entry.report));
    entry.executable = std::move(compiled);
    // Only a whole-module executable is the backend's to write.
    if (use_disk && entry.report.breaks.empty()) {
      absl::StatusOr<PayloadParts> bytes =
          backend.SerializeExecutableInParts(entry.executable);
      // A large entry (packed weights) takes longer to write than to
      // compile: it is written while the caller runs the executable, from
      // the executable's own memory.
      if (bytes.ok() && bytes->size() >= kBackgroundStoreBytes) {
        disk_->StoreInBackground(key, *std::move(bytes));
      } else if (bytes.ok()) {
        disk_->Store(key, *bytes);
      }
    }
  }
  const double seconds = SecondsSince(start);
  std::lock_guard<std::mutex> lock(mu_);
  ++(from_disk ? stats_.disk_hits : stats_.compiles);
  stats_.compile_seconds += seconds;
  if (report != nullptr) *report = entry.report;
  // Another thread may have compiled the same key meanwhile: keep the first.
  auto [it, inserted] = entries_.emplace(key, std::move(entry));
  return it->second.executable;
}

}  // namespace graft
