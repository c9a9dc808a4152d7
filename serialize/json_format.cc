#include "serialize/json_format.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/util/json_util.h"
#include "graph/file_io.h"
#include "serialize/gpb_format.h"
#include "serialize/mapped_file.h"
#include "serialize/protobuf_quiet.h"
#include "support/status_macros.h"

namespace graft {
namespace {

template <typename Status>
std::string MessageOf(const Status& status) {
  auto message = status.message();
  return std::string(message.data(), message.size());
}

// protobuf prints the double -0.0 as `-0`, which its parser reads as the
// integer 0; `-0.0` reads back as -0.0. A float argument is the only double
// in the format. The pattern cannot occur inside a JSON string, where the
// quote before `:` would be escaped.
void KeepNegativeZeros(std::string* json) {
  constexpr absl::string_view kToken = "\"float_value\": -0";
  size_t pos = 0;
  while ((pos = json->find(kToken.data(), pos, kToken.size())) !=
         std::string::npos) {
    pos += kToken.size();
    if (pos == json->size() || (*json)[pos] == '\n' || (*json)[pos] == ',' ||
        (*json)[pos] == '}') {
      json->insert(pos, ".0");
    }
  }
}

google::protobuf::util::JsonParseOptions ParseOptions() {
  google::protobuf::util::JsonParseOptions options;
  // A newer minor version's fields: JSON cannot keep them, so skip them.
  options.ignore_unknown_fields = true;
  return options;
}

}  // namespace

absl::StatusOr<std::string> ModuleToJson(const Module& module,
                                         const GpbWriteOptions& options) {
  google::protobuf::Arena arena;
  proto::Model* model =
      google::protobuf::Arena::CreateMessage<proto::Model>(&arena);
  if (absl::Status s =
          ModuleToProto(module, options, /*layout=*/nullptr, model);
      !s.ok()) {
    return s;
  }
  if (model->ByteSizeLong() > kMaxProtoBytes) {
    return absl::InvalidArgumentError(
        "the model is over protobuf's 2 GiB limit for one message; save it "
        "as .gpb, which keeps large tensors in a side file");
  }
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  print.preserve_proto_field_names = true;
  std::string json;
  ProtobufQuiet quiet;  // The error below says what failed.
  auto status =
      google::protobuf::util::MessageToJsonString(*model, &json, print);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot convert the model to JSON (it may nest lists or submodules "
        "deeper than JSON allows; .gpb allows more): ",
        MessageOf(status)));
  }
  KeepNegativeZeros(&json);
  return json;
}

absl::StatusOr<LoadedModel> ModuleFromJson(absl::string_view json,
                                           absl::string_view name,
                                           const GpbReadOptions& options) {
  if (json.size() > kMaxProtoBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": the file is ", json.size(),
        " bytes, over the 2 GiB a JSON model can be (save large models as "
        ".gpb)"));
  }
  const google::protobuf::StringPiece text(json.data(), json.size());
  google::protobuf::Arena arena;
  proto::Model& model =
      *google::protobuf::Arena::CreateMessage<proto::Model>(&arena);
  ProtobufQuiet quiet;
  auto status =
      google::protobuf::util::JsonStringToMessage(text, &model, ParseOptions());
  if (!status.ok()) {
    // A newer major version may have changed what this graft expects: if
    // so, say that rather than what failed to parse.
    proto::ModelVersion version;
    if (google::protobuf::util::JsonStringToMessage(text, &version,
                                                    ParseOptions())
            .ok()) {
      if (absl::Status s = CheckFormatVersion(name, version.format_major(),
                                              version.format_minor());
          !s.ok() && version.format_major() != 0) {
        return s;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": not a valid graft JSON model: ", MessageOf(status)));
  }
  if (absl::Status s =
          CheckFormatVersion(name, model.format_major(), model.format_minor());
      !s.ok()) {
    return s;
  }
  if (model.has_data_file()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        ": a JSON model keeps its tensor data inline, but this one refers to "
        "a side file (data_file)"));
  }
  return ModelFromProto(model, name, /*side_file=*/nullptr, options);
}

absl::Status WriteJsonFile(const Module& module, const std::string& path,
                           const GpbWriteOptions& options) {
  absl::StatusOr<std::string> json = ModuleToJson(module, options);
  if (!json.ok()) {
    return absl::Status(
        json.status().code(),
        absl::StrCat("cannot write ", path, ": ", json.status().message()));
  }
  return WriteFileAtomically(path, *json);
}

absl::StatusOr<LoadedModel> ReadJsonFile(const std::string& path,
                                         const GpbReadOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  return ModuleFromJson(file->bytes(), path, options);
}

}  // namespace graft
