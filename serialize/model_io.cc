#include "serialize/model_io.h"

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "serialize/json_format.h"
#include "support/status_macros.h"

namespace graft {
namespace {

struct FormatEntry {
  absl::string_view extension;
  ModelFormat format;
};

// graft's own formats, one row per extension.
constexpr std::array<FormatEntry, 3> kFormats = {{
    {".graft", ModelFormat::kText},
    {".gpb", ModelFormat::kGpb},
    {".json", ModelFormat::kJson},
}};

// Formats that graft reads with a library of their own. Named here only so
// that a program which does not link that library can say which one it
// lacks: serialize/ does not depend on it.
struct OtherLibraryFormat {
  absl::string_view extension;
  absl::string_view library;
};
constexpr std::array<OtherLibraryFormat, 1> kOtherLibraryFormats = {{
    {".onnx", "graft_onnx (CMake target graft::onnx)"},
}};

// The readers that other libraries registered, by extension.
class ReaderRegistry {
 public:
  static ReaderRegistry& Global() {
    // Never destroyed: registrations run from static initializers, and
    // reads may come from static destructors.
    static auto* registry = new ReaderRegistry();
    return *registry;
  }

  absl::Status Register(ModelReader reader) {
    if (!reader.read) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model reader for '", reader.extension, "' has no read function"));
    }
    if (reader.extension.size() < 2 || reader.extension[0] != '.') {
      return absl::InvalidArgumentError(
          absl::StrCat("model reader extension '", reader.extension,
                       "' must be a dot and a name, e.g. '.onnx'"));
    }
    for (const FormatEntry& entry : kFormats) {
      if (reader.extension == entry.extension) {
        return absl::AlreadyExistsError(absl::StrCat(
            "model format '", reader.extension, "' is graft's own"));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (readers_.contains(reader.extension)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a reader for model format '", reader.extension,
          "' is already registered"));
    }
    std::string extension = reader.extension;
    readers_.emplace(std::move(extension), std::move(reader));
    return absl::OkStatus();
  }

  // The reader of the longest registered extension that ends `path`.
  std::optional<ModelReader> Find(absl::string_view path) const {
    std::lock_guard<std::mutex> lock(mu_);
    const ModelReader* found = nullptr;
    for (const auto& [extension, reader] : readers_) {
      if (absl::EndsWith(path, extension) &&
          (found == nullptr || extension.size() > found->extension.size())) {
        found = &reader;
      }
    }
    if (found == nullptr) return std::nullopt;
    return *found;
  }

  // Sorted.
  std::vector<std::string> Extensions() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> extensions;
    for (const auto& [extension, reader] : readers_) {
      extensions.push_back(extension);
    }
    return extensions;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, ModelReader, std::less<>> readers_;
};

}  // namespace

absl::Status RegisterModelReader(ModelReader reader) {
  return ReaderRegistry::Global().Register(std::move(reader));
}

std::string KnownModelExtensions() {
  std::vector<std::string> extensions;
  for (const FormatEntry& f : kFormats) {
    extensions.emplace_back(f.extension);
  }
  for (std::string& extension : ReaderRegistry::Global().Extensions()) {
    extensions.push_back(std::move(extension));
  }
  return absl::StrJoin(extensions, ", ");
}

namespace {

// ModelFormatForPath, its message worded for reading or writing.
absl::StatusOr<ModelFormat> FormatForPath(absl::string_view path,
                                          bool writing) {
  for (const FormatEntry& entry : kFormats) {
    if (absl::EndsWith(path, entry.extension)) return entry.format;
  }
  if (ReaderRegistry::Global().Find(path).has_value()) {
    return ModelFormat::kRegistered;
  }
  const size_t slash = path.find_last_of('/');
  const absl::string_view base =
      slash == absl::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot == absl::string_view::npos || dot == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot tell the format of '", path,
        "': it has no extension (known: ", KnownModelExtensions(), ")"));
  }
  if (!writing) {
    for (const OtherLibraryFormat& other : kOtherLibraryFormats) {
      if (absl::EndsWith(path, other.extension)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot read '", path, "': ", other.extension,
            " files are read by ", other.library,
            ", which this program does not link"));
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(writing ? "cannot write '" : "cannot read '", path,
                   "': unknown model format '", base.substr(dot),
                   "' (known: ", KnownModelExtensions(), ")"));
}

}  // namespace

absl::StatusOr<ModelFormat> ModelFormatForPath(absl::string_view path) {
  return FormatForPath(path, /*writing=*/false);
}

absl::StatusOr<LoadedModel> LoadModelWithInfo(const std::string& path,
                                              const ModelLoadOptions& options) {
  ASSIGN_OR_RETURN(ModelFormat format, ModelFormatForPath(path));
  absl::StatusOr<Module> module;
  switch (format) {
    case ModelFormat::kText:
      module = LoadTextModule(path, options.text);
      break;
    case ModelFormat::kGpb:
      return ReadGpbFile(path, options.binary);
    case ModelFormat::kJson:
      return ReadJsonFile(path, options.binary);
    case ModelFormat::kRegistered: {
      std::optional<ModelReader> reader = ReaderRegistry::Global().Find(path);
      // Readers are never removed, so the one that gave the format is
      // still there.
      if (!reader.has_value()) {
        return absl::InternalError(
            absl::StrCat("cannot read '", path, "': no reader registered"));
      }
      module = reader->read(path, options.shapes);
      break;
    }
  }
  if (!module.ok()) return module.status();
  LoadedModel loaded;
  loaded.module = *std::move(module);
  return loaded;
}

absl::StatusOr<Module> LoadModel(const std::string& path,
                                 const ModelLoadOptions& options) {
  ASSIGN_OR_RETURN(LoadedModel loaded, LoadModelWithInfo(path, options));
  return std::move(loaded.module);
}

absl::StatusOr<Module> LoadModel(const std::string& path) {
  return LoadModel(path, ModelLoadOptions());
}

absl::StatusOr<ModelFormat> OutputModelFormatForPath(absl::string_view path) {
  ASSIGN_OR_RETURN(ModelFormat format, FormatForPath(path, /*writing=*/true));
  if (format == ModelFormat::kRegistered) {
    std::optional<ModelReader> reader = ReaderRegistry::Global().Find(path);
    std::string name = "this format";
    if (reader.has_value()) {
      name = reader->format_name.empty() ? reader->extension
                                         : reader->format_name;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", path, "': graft imports ", name,
                     " but does not export it; write .graft, .gpb or .json"));
  }
  return format;
}

absl::Status SaveModel(const Module& module, const std::string& path,
                       const ModelSaveOptions& options) {
  ASSIGN_OR_RETURN(ModelFormat format, OutputModelFormatForPath(path));
  switch (format) {
    case ModelFormat::kText:
      return WriteTextModule(module, path, options.text);
    case ModelFormat::kGpb:
      return WriteGpbFile(module, path, options.binary);
    case ModelFormat::kJson:
      return WriteJsonFile(module, path, options.binary);
    case ModelFormat::kRegistered:
      break;  // Refused by OutputModelFormatForPath.
  }
  return absl::InternalError("unhandled model format");
}

absl::Status SaveModel(const Module& module, const std::string& path) {
  return SaveModel(module, path, ModelSaveOptions());
}

}  // namespace graft
