#ifndef GRAFT_TESTS_BACKENDS_CACHE_DIRS_H_
#define GRAFT_TESTS_BACKENDS_CACHE_DIRS_H_

// Directories for the on-disk compile cache tests.

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace graft::backend_test {

// An empty directory path under the test's temporary directory, unique to
// `name` and this process.
inline std::string FreshDir(const std::string& name) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/graft_cache_", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// Every regular file below `dir`; none when it does not exist.
inline std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  return files;
}

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_CACHE_DIRS_H_
