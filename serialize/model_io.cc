#include "serialize/model_io.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "serialize/json_format.h"
#include "serialize/onnx_import.h"

namespace graft {
namespace {

struct FormatEntry {
  absl::string_view extension;
  ModelFormat format;
};

// One row per extension.
constexpr std::array<FormatEntry, 4> kFormats = {{
    {".graft", ModelFormat::kText},
    {".gpb", ModelFormat::kGpb},
    {".json", ModelFormat::kJson},
    {".onnx", ModelFormat::kOnnx},
}};

}  // namespace

std::string KnownModelExtensions() {
  return absl::StrJoin(kFormats, ", ",
                       [](std::string* out, const FormatEntry& f) {
                         out->append(f.extension.data(), f.extension.size());
                       });
}

namespace {

// ModelFormatForPath, its message worded for reading or writing.
absl::StatusOr<ModelFormat> FormatForPath(absl::string_view path,
                                          bool writing) {
  for (const FormatEntry& entry : kFormats) {
    if (absl::EndsWith(path, entry.extension)) return entry.format;
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
  absl::StatusOr<ModelFormat> format = ModelFormatForPath(path);
  if (!format.ok()) return format.status();
  switch (*format) {
    case ModelFormat::kText: {
      absl::StatusOr<Module> module = LoadTextModule(path, options.text);
      if (!module.ok()) return module.status();
      LoadedModel loaded;
      loaded.module = *std::move(module);
      return loaded;
    }
    case ModelFormat::kGpb:
      return ReadGpbFile(path, options.binary);
    case ModelFormat::kJson:
      return ReadJsonFile(path, options.binary);
    case ModelFormat::kOnnx: {
      absl::StatusOr<Module> module = ImportOnnxFile(path, options.onnx);
      if (!module.ok()) return module.status();
      LoadedModel loaded;
      loaded.module = *std::move(module);
      return loaded;
    }
  }
  return absl::InternalError("unhandled model format");
}

absl::StatusOr<Module> LoadModel(const std::string& path,
                                 const ModelLoadOptions& options) {
  absl::StatusOr<LoadedModel> loaded = LoadModelWithInfo(path, options);
  if (!loaded.ok()) return loaded.status();
  return std::move(loaded->module);
}

absl::StatusOr<Module> LoadModel(const std::string& path) {
  return LoadModel(path, ModelLoadOptions());
}

absl::StatusOr<ModelFormat> OutputModelFormatForPath(absl::string_view path) {
  absl::StatusOr<ModelFormat> format = FormatForPath(path, /*writing=*/true);
  if (!format.ok()) return format.status();
  if (*format == ModelFormat::kOnnx) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", path,
                     "': graft imports ONNX but does not export it; write "
                     ".graft, .gpb or .json"));
  }
  return format;
}

absl::Status SaveModel(const Module& module, const std::string& path,
                       const ModelSaveOptions& options) {
  absl::StatusOr<ModelFormat> format = OutputModelFormatForPath(path);
  if (!format.ok()) return format.status();
  switch (*format) {
    case ModelFormat::kText:
      return WriteTextModule(module, path, options.text);
    case ModelFormat::kGpb:
      return WriteGpbFile(module, path, options.binary);
    case ModelFormat::kJson:
      return WriteJsonFile(module, path, options.binary);
    case ModelFormat::kOnnx:
      break;  // Refused by OutputModelFormatForPath.
  }
  return absl::InternalError("unhandled model format");
}

absl::Status SaveModel(const Module& module, const std::string& path) {
  return SaveModel(module, path, ModelSaveOptions());
}

}  // namespace graft
