#include "cli/output_files.h"

#include <filesystem>
#include <system_error>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "serialize/npy.h"
#include "support/status_macros.h"

namespace graft::cli {

std::vector<std::string> OutputFileNames(absl::Span<const std::string> names) {
  if (names.size() == 1) return {"output.npy"};
  std::vector<std::string> files;
  absl::flat_hash_set<std::string> used;
  for (size_t i = 0; i < names.size(); ++i) {
    // Identifiers ([A-Za-z_][A-Za-z0-9_.]*) are safe file names: no '/',
    // and never "." or "..".
    std::string base = IsValidName(names[i]) ? names[i] : "output";
    std::string file = absl::StrCat(base, ".npy");
    while (!used.insert(file).second) {
      base = absl::StrCat(base, "_", i);
      file = absl::StrCat(base, ".npy");
    }
    files.push_back(std::move(file));
  }
  return files;
}

absl::StatusOr<std::vector<std::string>> WriteOutputFiles(
    const std::string& dir, absl::Span<const std::string> files,
    absl::Span<const Tensor> tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the output directory '", dir,
                     "': ", ec ? ec.message() : "a file of that name exists"));
  }
  std::vector<std::string> written;
  for (size_t i = 0; i < files.size() && i < tensors.size(); ++i) {
    std::string path = (std::filesystem::path(dir) / files[i]).string();
    RETURN_IF_ERROR(WriteNpy(path, tensors[i]));
    written.push_back(std::move(path));
  }
  return written;
}

}  // namespace graft::cli
