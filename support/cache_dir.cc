#include "support/cache_dir.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace graft {

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("GRAFT_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return absl::StrCat(xdg, "/graft");
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home && *home ? home : "/tmp", "/.cache/graft");
}

}  // namespace graft
