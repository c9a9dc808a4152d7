#ifndef GRAFT_BACKENDS_COMPILE_CACHE_H_
#define GRAFT_BACKENDS_COMPILE_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/disk_cache.h"
#include "backends/fallback_executable.h"
#include "graph/module.h"

namespace graft {

// The counters `graft run --stats` prints, as JAX and torch.compile show
// them.
struct CompileCacheStats {
  int64_t traces = 0;       // Functions traced into modules (graft::Jit).
  int64_t compiles = 0;     // Modules compiled by a backend.
  int64_t memory_hits = 0;  // Executables reused from this process.
  int64_t disk_hits = 0;    // Executables loaded from the disk cache.
  int64_t disk_damaged = 0;  // Damaged disk entries found and rebuilt.
  double compile_seconds = 0;  // Spent compiling (and loading from disk).
};

// Compiled executables by what decides them, in memory and (for backends
// that can write their executables as bytes) on disk: the key is the
// module's fingerprint, the backend, its cache identity (compiler version,
// CPU or GPU), graft's version, and the compile options, which hold the
// input signature and the device. Input types left symbolic stay symbolic
// in the key, so a module with a symbolic batch compiles once for every
// batch size. Thread-safe; compiles of different keys may run at once.
class CompileCache {
 public:
  // `disk` may be null: memory only.
  explicit CompileCache(std::shared_ptr<DiskCache> disk = nullptr)
      : disk_(std::move(disk)) {}

  // The executable for (module, backend, options), compiled with
  // CompileWithFallback on a miss. `report`, when given, receives what the
  // compile reported (also on a hit).
  absl::StatusOr<std::shared_ptr<Executable>> GetOrCompile(
      Backend& backend, const Module& module, const CompileOptions& options,
      CompileReport* report = nullptr);

  // Counts a trace; graft::Jit calls it when it traces a function.
  void CountTrace();
  CompileCacheStats stats() const;
  // The cache key, for tests and for `graft run --stats`.
  static std::string Key(const Backend& backend, const Module& module,
                         const CompileOptions& options);

 private:
  struct Entry {
    std::shared_ptr<Executable> executable;
    CompileReport report;
  };
  absl::StatusOr<std::shared_ptr<Executable>> LoadFromDisk(
      Backend& backend, const std::string& key, const Module& module,
      const CompileOptions& options);

  std::shared_ptr<DiskCache> disk_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
  CompileCacheStats stats_;
};

}  // namespace graft

#endif  // GRAFT_BACKENDS_COMPILE_CACHE_H_
