#include "serialize/gpb_reader.h"

#include <cstring>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "graph/verifier.h"
#include "serialize/gpb_format.h"
#include "serialize/protobuf_quiet.h"
#include "serialize/side_file.h"
#include "support/status_macros.h"

namespace graft {
namespace {

using google::protobuf::RepeatedPtrField;

// Message nesting protobuf may follow while parsing: a Model, 64 levels of
// submodules, a graph, a node, a keyword, an argument, 64 levels of lists
// (two messages each), with room to spare. Bounds the parser's recursion on
// hostile input.
constexpr int kRecursionLimit = 256;

// Builds modules from the proto, checking everything on the way. Errors
// read "FILE: PLACE: problem", PLACE being "submodule 'a.b': tensor 'w': "
// and the like.
class ModuleReader {
 public:
  ModuleReader(absl::string_view file, std::shared_ptr<MappedFile> side_file)
      : file_(file), side_file_(std::move(side_file)) {}

  // Reads one module; `path` is its dotted submodule path (empty for the
  // top). Recursion follows submodule nesting, bounded by kMaxModuleDepth.
  absl::Status ReadModule(const proto::Graph& graph,
                          const RepeatedPtrField<proto::Tensor>& tensors,
                          const RepeatedPtrField<proto::Submodule>& submodules,
                          const std::string& path, int depth, Module* out);

 private:
  absl::Status Error(absl::string_view place, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": ", place, message));
  }
  absl::Status ReadTensor(const proto::Tensor& t, const std::string& where,
                          Module* out);
  absl::StatusOr<std::shared_ptr<Storage>> ExternalStorage(
      const proto::ExternalData& ext, uint64_t bytes,
      const std::string& place) const;
  absl::Status ReadGraph(const proto::Graph& graph, const std::string& where,
                         Graph* out);
  // These return errors without the file and place, which ReadGraph adds
  // (building place strings for every node would cost more than the rest).
  absl::Status ReadNode(const proto::Node& node, Graph* graph);
  absl::StatusOr<Argument> ReadArgument(const proto::Argument& arg, int depth,
                                        absl::string_view self,
                                        const Graph& graph) const;
  absl::StatusOr<TensorType> ReadType(const proto::TensorType& type) const;
  // Whether a node after the one being read has this name: tells a
  // reference to a later node from one to no node at all. Searched only
  // when a reference fails.
  bool DefinedLater(absl::string_view name) const;

  std::string file_;
  std::shared_ptr<MappedFile> side_file_;
  // The graph being read, and the index of the node being read in it.
  const proto::Graph* graph_ = nullptr;
  int index_ = 0;
};

absl::Status ModuleReader::ReadModule(
    const proto::Graph& graph, const RepeatedPtrField<proto::Tensor>& tensors,
    const RepeatedPtrField<proto::Submodule>& submodules,
    const std::string& path, int depth, Module* out) {
  const std::string where =
      path.empty() ? std::string() : absl::StrCat("submodule '", path, "': ");
  for (const proto::Tensor& t : tensors) {
    RETURN_IF_ERROR(ReadTensor(t, where, out));
  }
  for (const proto::Submodule& sub : submodules) {
    const std::string sub_path =
        path.empty() ? sub.name() : absl::StrCat(path, ".", sub.name());
    if (out->FindSubmodule(sub.name()) != nullptr) {
      return Error(where,
                   absl::StrCat("duplicate submodule '", sub.name(), "'"));
    }
    if (depth + 1 > kMaxModuleDepth) {
      return Error(where, absl::StrCat("submodules nest deeper than ",
                                       kMaxModuleDepth, " levels"));
    }
    Module module;
    if (absl::Status s =
            ReadModule(sub.graph(), sub.tensors(), sub.submodules(), sub_path,
                       depth + 1, &module);
        !s.ok()) {
      return s;
    }
    out->AddSubmodule(sub.name(), std::move(module));
  }
  return ReadGraph(graph, where, &out->graph());
}

absl::Status ModuleReader::ReadTensor(const proto::Tensor& t,
                                      const std::string& where, Module* out) {
  const std::string place = absl::StrCat(where, "tensor '", t.name(), "': ");
  if (out->tensors().count(t.name()) > 0) {
    return Error(where, absl::StrCat("duplicate tensor '", t.name(), "'"));
  }
  std::optional<DType> dtype = DTypeFromProto(t.dtype());
  if (!dtype.has_value()) {
    return Error(place, absl::StrCat("unknown dtype ", t.dtype(),
                                     t.dtype() == 0 ? " (none given)" : ""));
  }
  if (t.dims_size() > kMaxRank) {
    return Error(place, absl::StrCat("rank ", t.dims_size(),
                                     " is over the limit of ", kMaxRank));
  }
  // Every partial product must fit in int64 (code that computes strides
  // relies on it), zero dims or not; then the byte size must too.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t extent = 1;
  bool empty = false;
  for (int i = 0; i < t.dims_size(); ++i) {
    const int64_t d = t.dims(i);
    if (d < 0) {
      return Error(place,
                   absl::StrCat("dimension ", i, " is negative (", d, ")"));
    }
    if (d == 0) {
      empty = true;
      continue;
    }
    if (extent > kMax / d) return Error(place, "its size overflows");
    extent *= d;
  }
  const int64_t element_size = DTypeSize(*dtype);
  if (extent > kMax / element_size) return Error(place, "its size overflows");
  const uint64_t bytes =
      empty ? 0 : static_cast<uint64_t>(extent * element_size);
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  std::shared_ptr<Storage> storage;
  switch (t.data_case()) {
    case proto::Tensor::kInlineData: {
      const std::string& data = t.inline_data();
      if (data.size() != bytes) {
        return Error(place,
                     absl::StrCat("its inline data is ", data.size(),
                                  " bytes, but ", DTypeName(*dtype), "[",
                                  absl::StrJoin(dims, ","), "] needs ", bytes));
      }
      // Bounded by the file: the bytes are already in memory.
      storage = Storage::Allocate(bytes);
      if (bytes > 0) std::memcpy(storage->data(), data.data(), bytes);
      break;
    }
    case proto::Tensor::kExternal: {
      ASSIGN_OR_RETURN(std::shared_ptr<Storage> mapped,
                       ExternalStorage(t.external(), bytes, place));
      storage = std::move(mapped);
      break;
    }
    default:
      return Error(place, "it has no data");
  }
  out->SetTensor(t.name(), Tensor(*dtype, std::move(dims), std::move(storage)),
                 t.init());
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Storage>> ModuleReader::ExternalStorage(
    const proto::ExternalData& ext, uint64_t bytes,
    const std::string& place) const {
  if (side_file_ == nullptr) {
    return Error(place,
                 "its data is in a side file, but the model records none");
  }
  const uint64_t offset = ext.offset();
  const uint64_t length = ext.length();
  const uint64_t size = side_file_->size();
  if (length != bytes) {
    return Error(place,
                 absl::StrCat("its side-file region is ", length,
                              " bytes, but its dtype and dims need ", bytes));
  }
  if (offset % kSideFileAlignment != 0) {
    return Error(place,
                 absl::StrCat("its side-file offset ", offset,
                              " is not a multiple of ", kSideFileAlignment));
  }
  if (offset < kSideFileHeaderSize) {
    return Error(place, absl::StrCat("its side-file offset ", offset,
                                     " is inside the side file's header"));
  }
  // Written so that nothing overflows: offset <= size first.
  if (offset > size || length > size - offset) {
    return Error(place,
                 absl::StrCat("its side-file region [", offset, ", ", offset,
                              " + ", length, ") ends past the end of ",
                              side_file_->path(), " (", size, " bytes)"));
  }
  // Large weights take their hash from this machine's memo of the same,
  // unchanged file, or leave it there once a fingerprint computes it.
  std::byte* data = side_file_->data() + offset;
  if (length < FileHashMemo::kMinRegionBytes) return Storage::Wrap(data, length, side_file_);
  FileHashMemo memo = FileHashMemo::Default();
  const FileIdentity& identity = side_file_->identity();
  if (std::optional<Fingerprint> known = memo.Find(identity, offset, length, data)) {
    return Storage::WrapWithKnownContent(data, length, side_file_, *known);
  }
  return Storage::WrapWithHashHook(
      data, length, side_file_,
      [memo = std::move(memo), path = side_file_->path(), identity, offset, length,
       data](const Fingerprint& hash) {
        memo.Record(path, identity, offset, length, hash, data);
      });
}

absl::Status ModuleReader::ReadGraph(const proto::Graph& graph,
                                     const std::string& where, Graph* out) {
  out->ReserveNodes(static_cast<size_t>(graph.nodes_size()));
  graph_ = &graph;
  for (int i = 0; i < graph.nodes_size(); ++i) {
    const proto::Node& node = graph.nodes(i);
    if (!IsValidName(node.name())) {
      return Error(where,
                   absl::StrCat("node #", i, " has the name '", node.name(),
                                "', which is not an identifier "
                                "([A-Za-z_][A-Za-z0-9_.]*)"));
    }
    if (out->FindNode(node.name()) != nullptr) {
      return Error(where,
                   absl::StrCat("duplicate node name '%", node.name(), "'"));
    }
    index_ = i;
    if (absl::Status s = ReadNode(node, out); !s.ok()) {
      return Error(absl::StrCat(where, "node %", node.name(), ": "),
                   s.message());
    }
  }
  graph_ = nullptr;
  return absl::OkStatus();
}

bool ModuleReader::DefinedLater(absl::string_view name) const {
  for (int i = index_ + 1; i < graph_->nodes_size(); ++i) {
    if (graph_->nodes(i).name() == name) return true;
  }
  return false;
}

// An error whose message is `prefix` followed by `status`'s.
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, status.message()));
}

absl::Status Problem(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// Small keyword lists are searched; long (hostile) ones hashed.
bool HasDuplicateKey(const RepeatedPtrField<proto::Kwarg>& kwargs,
                     std::string* duplicate) {
  if (kwargs.size() <= 16) {
    for (int i = 0; i < kwargs.size(); ++i) {
      for (int j = 0; j < i; ++j) {
        if (kwargs[i].name() == kwargs[j].name()) {
          *duplicate = kwargs[i].name();
          return true;
        }
      }
    }
    return false;
  }
  absl::flat_hash_set<absl::string_view> keys;
  for (const proto::Kwarg& kwarg : kwargs) {
    if (!keys.insert(kwarg.name()).second) {
      *duplicate = kwarg.name();
      return true;
    }
  }
  return false;
}

absl::Status ModuleReader::ReadNode(const proto::Node& node, Graph* graph) {
  std::optional<OpCode> op = OpCodeFromProto(node.op());
  if (!op.has_value()) {
    return Problem(absl::StrCat("unknown opcode ", node.op(),
                                node.op() == 0 ? " (none given)" : ""));
  }
  std::vector<Argument> args;
  args.reserve(node.args_size());
  for (int i = 0; i < node.args_size(); ++i) {
    absl::StatusOr<Argument> arg =
        ReadArgument(node.args(i), 0, node.name(), *graph);
    if (!arg.ok()) return Prefixed(absl::StrCat("args[", i, "]"), arg.status());
    args.push_back(*std::move(arg));
  }
  std::string duplicate;
  if (HasDuplicateKey(node.kwargs(), &duplicate)) {
    return Problem(
        absl::StrCat("duplicate keyword argument '", duplicate, "'"));
  }
  Kwargs kwargs;
  kwargs.reserve(node.kwargs_size());
  for (const proto::Kwarg& kwarg : node.kwargs()) {
    absl::StatusOr<Argument> value =
        ReadArgument(kwarg.value(), 0, node.name(), *graph);
    if (!value.ok()) {
      return Prefixed(absl::StrCat("kwargs['", kwarg.name(), "']"),
                      value.status());
    }
    kwargs.emplace_back(kwarg.name(), *std::move(value));
  }
  NodeMeta meta;
  if (node.has_type()) {
    absl::StatusOr<TensorType> type = ReadType(node.type());
    if (!type.ok()) return type.status();
    meta.type = *std::move(type);
  }
  meta.tuple_types.reserve(node.tuple_types_size());
  for (const proto::TensorType& t : node.tuple_types()) {
    ASSIGN_OR_RETURN(TensorType type, ReadType(t));
    meta.tuple_types.push_back(std::move(type));
  }
  if (node.has_location()) {
    meta.location =
        SourceLocation{node.location().file(), node.location().line(),
                       node.location().column()};
  }
  if (node.has_provenance()) {
    meta.provenance =
        Provenance{node.provenance().pass(),
                   std::vector<std::string>(node.provenance().from().begin(),
                                            node.provenance().from().end())};
  }
  for (const proto::StringEntry& entry : node.meta()) {
    if (meta.entries.Find(entry.key()) != nullptr) {
      return Problem(absl::StrCat("duplicate meta entry '", entry.key(), "'"));
    }
    meta.entries[entry.key()] = entry.value();
  }
  Node* created = graph->CreateNode(*op, node.target(), std::move(args),
                                    std::move(kwargs), node.name());
  if (created->name() != node.name()) {
    // Cannot happen: names were checked unique and valid above.
    return absl::InternalError("the node was renamed");
  }
  created->meta() = std::move(meta);
  return absl::OkStatus();
}

absl::StatusOr<Argument> ModuleReader::ReadArgument(const proto::Argument& arg,
                                                    int depth,
                                                    absl::string_view self,
                                                    const Graph& graph) const {
  switch (arg.value_case()) {
    case proto::Argument::kNone:
      return Argument(NoneArg{});
    case proto::Argument::kNode: {
      const std::string& name = arg.node();
      if (Node* node = graph.FindNode(name); node != nullptr) {
        return Argument(node);
      }
      if (name == self) {
        return Problem(absl::StrCat(" refers to its own node %", name));
      }
      if (DefinedLater(name)) {
        return Problem(
            absl::StrCat(" refers to %", name, ", which is defined after it"));
      }
      return Problem(absl::StrCat(" refers to %", name,
                                  ", which the graph does not have"));
    }
    case proto::Argument::kIntValue:
      return Argument(arg.int_value());
    case proto::Argument::kFloatValue:
      return Argument(arg.float_value());
    case proto::Argument::kBoolValue:
      return Argument(arg.bool_value());
    case proto::Argument::kStringValue:
      return Argument(arg.string_value());
    case proto::Argument::kBytesValue:
      return Argument(arg.bytes_value());
    case proto::Argument::kDtypeValue: {
      std::optional<DType> dtype = DTypeFromProto(arg.dtype_value());
      if (!dtype.has_value()) {
        return Problem(
            absl::StrCat(" is an unknown dtype ", arg.dtype_value()));
      }
      return Argument(*dtype);
    }
    case proto::Argument::kList: {
      if (depth + 1 > kMaxListDepth) {
        return Problem(absl::StrCat(" nests lists deeper than ", kMaxListDepth,
                                    " levels"));
      }
      const proto::ArgumentList& list = arg.list();
      ArgumentList elements;
      elements.reserve(list.elements_size());
      for (int i = 0; i < list.elements_size(); ++i) {
        absl::StatusOr<Argument> element =
            ReadArgument(list.elements(i), depth + 1, self, graph);
        if (!element.ok()) {
          return Prefixed(absl::StrCat("[", i, "]"), element.status());
        }
        elements.push_back(*std::move(element));
      }
      return Argument(std::move(elements));
    }
    default:
      return Problem(
          " is empty or of a kind this graft does not know (a newer "
          "format?)");
  }
}

absl::StatusOr<TensorType> ModuleReader::ReadType(
    const proto::TensorType& type) const {
  std::optional<DType> dtype = DTypeFromProto(type.dtype());
  if (!dtype.has_value()) {
    return Problem(absl::StrCat("its type has an unknown dtype ", type.dtype(),
                                type.dtype() == 0 ? " (none given)" : ""));
  }
  if (type.dims_size() > kMaxRank) {
    return Problem(absl::StrCat("its type has rank ", type.dims_size(),
                                ", over the limit of ", kMaxRank));
  }
  TensorType out;
  out.dtype = *dtype;
  out.shape.reserve(type.dims_size());
  for (int i = 0; i < type.dims_size(); ++i) {
    const proto::Dim& d = type.dims(i);
    switch (d.value_case()) {
      case proto::Dim::kSize:
        if (d.size() < 0) {
          return Problem(absl::StrCat(
              "dimension ", i, " of its type is negative (", d.size(), ")"));
        }
        out.shape.push_back(Dim(d.size()));
        break;
      case proto::Dim::kSymbol:
        out.shape.push_back(Dim::Symbol(d.symbol()));
        break;
      default:
        return Problem(absl::StrCat("dimension ", i,
                                    " of its type is neither a size nor a "
                                    "symbol"));
    }
  }
  return out;
}

// Checks the mapped side file against what the model records.
absl::Status CheckSideFile(const proto::DataFile& recorded,
                           const MappedFile& side, absl::string_view file) {
  ASSIGN_OR_RETURN(SideFileHeader header,
                   DecodeSideFileHeader(side.bytes(), side.path()));
  if (header.id != recorded.id()) {
    return absl::InvalidArgumentError(absl::StrCat(
        side.path(), " does not belong to ", file,
        ": its id differs from the one the model records (the two files come "
        "from different saves)"));
  }
  if (side.size() != recorded.size() || header.size != recorded.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        side.path(), ": the side file is ", side.size(), " bytes, but ", file,
        " expects ", recorded.size(), " (it was cut short or extended)"));
  }
  return absl::OkStatus();
}

// Parses the bytes of a .gpb into `model`.
absl::Status ParseModel(absl::string_view bytes, absl::string_view name,
                        proto::Model* model) {
  if (bytes.size() > kMaxProtoBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": the file is ", bytes.size(),
        " bytes, over the 2 GiB a .gpb can be (large tensors belong in the "
        "side file)"));
  }
  // The version first: a newer major version may not parse as this one.
  std::optional<FormatVersion> version = PeekFormatVersion(bytes);
  if (version.has_value()) {
    if (absl::Status s =
            CheckFormatVersion(name, version->major, version->minor);
        !s.ok()) {
      return s;
    }
  }
  google::protobuf::io::CodedInputStream input(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kRecursionLimit);
  bool parsed;
  {
    ProtobufQuiet quiet;  // The error below says enough.
    parsed = model->ParseFromCodedStream(&input) &&
             input.ConsumedEntireMessage() &&
             input.CurrentPosition() == static_cast<int>(bytes.size());
  }
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat(
        name,
        ": not a valid graft model: the protobuf data is truncated, "
        "corrupted or nested too deep (",
        bytes.size(), " bytes)"));
  }
  return CheckFormatVersion(name, model->format_major(), model->format_minor());
}

}  // namespace

absl::StatusOr<LoadedModel> ModelFromProto(
    const proto::Model& model, absl::string_view name,
    std::shared_ptr<MappedFile> side_file, const GpbReadOptions& options) {
  if (absl::Status s =
          CheckFormatVersion(name, model.format_major(), model.format_minor());
      !s.ok()) {
    return s;
  }
  if (model.has_data_file()) {
    if (side_file == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the model keeps tensor data in the side file ",
                       SideFilePath(name), ", which was not given"));
    }
    RETURN_IF_ERROR(CheckSideFile(model.data_file(), *side_file, name));
    if (options.check_data) {
      SideFileHasher hasher;
      hasher.Update(side_file->data() + kSideFileHeaderSize,
                    side_file->size() - kSideFileHeaderSize);
      if (hasher.Finish() != model.data_file().id()) {
        return absl::InvalidArgumentError(absl::StrCat(
            side_file->path(),
            ": the side file's bytes do not match its id: the tensor data is "
            "corrupted"));
      }
    }
  } else {
    side_file = nullptr;  // The model says it has none: refer to none.
  }
  LoadedModel loaded;
  loaded.info.format_major = model.format_major();
  loaded.info.format_minor = model.format_minor();
  loaded.info.producer = model.producer();
  absl::flat_hash_set<absl::string_view> keys;
  for (const proto::StringEntry& entry : model.metadata()) {
    if (!keys.insert(entry.key()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": duplicate metadata key '", entry.key(), "'"));
    }
    loaded.info.metadata.emplace_back(entry.key(), entry.value());
  }
  ModuleReader reader(name, std::move(side_file));
  if (absl::Status s =
          reader.ReadModule(model.graph(), model.tensors(), model.submodules(),
                            "", 0, &loaded.module);
      !s.ok()) {
    return s;
  }
  if (options.verify) {
    if (absl::Status s = Verify(loaded.module); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
    }
  }
  return loaded;
}

absl::StatusOr<LoadedModel> ParseGpb(absl::string_view bytes,
                                     absl::string_view name,
                                     std::shared_ptr<MappedFile> side_file,
                                     const GpbReadOptions& options) {
  // An arena: a big graph is millions of small messages, allocated and
  // freed at once.
  google::protobuf::Arena arena;
  proto::Model& model =
      *google::protobuf::Arena::CreateMessage<proto::Model>(&arena);
  RETURN_IF_ERROR(ParseModel(bytes, name, &model));
  return ModelFromProto(model, name, std::move(side_file), options);
}

absl::StatusOr<LoadedModel> ReadGpbFile(const std::string& path,
                                        const GpbReadOptions& options) {
  google::protobuf::Arena arena;
  proto::Model& model =
      *google::protobuf::Arena::CreateMessage<proto::Model>(&arena);
  {
    // The .gpb's mapping is only needed while parsing.
    ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
    RETURN_IF_ERROR(ParseModel(file->bytes(), path, &model));
  }
  std::shared_ptr<MappedFile> side_file;
  if (model.has_data_file()) {
    ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> side,
                     MappedFile::Open(SideFilePath(path),
                                      absl::StrCat("the side file of ", path)));
    side_file = std::move(side);
  }
  return ModelFromProto(model, path, std::move(side_file), options);
}

}  // namespace graft
