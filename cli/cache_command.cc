// graft cache info|clear: the on-disk compile cache ($GRAFT_CACHE_DIR,
// default ~/.cache/graft).

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/disk_cache.h"
#include "cli/command.h"
#include "cli/output.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

std::string Megabytes(uint64_t bytes) {
  return absl::StrCat(absl::SixDigits(static_cast<double>(bytes) / (1 << 20)),
                      " MB");
}

absl::Status RunInfo() {
  DiskCache cache(DiskCache::DefaultDir(), DiskCache::DefaultMaxBytes());
  ASSIGN_OR_RETURN(DiskCacheInfo info, cache.Info());
  return WriteStdout(absl::StrCat(
      "compile cache: ", info.dir, "\n", "entries: ", info.entries, "\n",
      "size: ", Megabytes(info.bytes), " of at most ",
      Megabytes(info.max_bytes), " (GRAFT_CACHE_MAX_MB)\n"));
}

absl::Status RunClear() {
  DiskCache cache(DiskCache::DefaultDir(), DiskCache::DefaultMaxBytes());
  ASSIGN_OR_RETURN(DiskCacheInfo before, cache.Info());
  RETURN_IF_ERROR(cache.Clear());
  return WriteStdout(absl::StrCat("removed ", before.entries, " entries (",
                                  Megabytes(before.bytes), ") from ",
                                  before.dir, "\n"));
}

}  // namespace

Command AddCacheCommand(CLI::App& graft) {
  CLI::App* app = graft.add_subcommand(
      "cache",
      "Show or clear the on-disk compile cache ($GRAFT_CACHE_DIR, default "
      "~/.cache/graft)");
  app->require_subcommand(1);
  auto action = std::make_shared<std::string>();
  app->add_subcommand("info", "Where the cache is, its entries and size")
      ->callback([action] { *action = "info"; });
  app->add_subcommand("clear", "Remove every entry")
      ->callback([action] { *action = "clear"; });
  return Command{app, [action] {
                   return *action == "clear" ? RunClear() : RunInfo();
                 }};
}

}  // namespace graft::cli
