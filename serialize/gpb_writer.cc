#include "serialize/gpb_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <variant>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "serialize/side_file.h"
#include "serialize/utf8.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace graft {
namespace {

using google::protobuf::RepeatedPtrField;

absl::Status SaveError(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(where, message));
}

uint64_t AlignUp(uint64_t n) {
  return (n + kSideFileAlignment - 1) / kSideFileAlignment * kSideFileAlignment;
}

// Builds the proto of one module and, recursively, its submodules (at most
// kMaxModuleDepth deep, so the recursion is bounded).
class ProtoBuilder {
 public:
  ProtoBuilder(const GpbWriteOptions& options, SideFileLayout* layout)
      : options_(options), layout_(layout) {}

  absl::Status AddModule(const Module& module, const std::string& where,
                         int depth, proto::Graph* graph,
                         RepeatedPtrField<proto::Tensor>* tensors,
                         RepeatedPtrField<proto::Submodule>* submodules);

 private:
  absl::Status AddTensor(const std::string& name, const ModuleTensor& tensor,
                         const std::string& where, proto::Tensor* out);
  absl::Status AddNode(const Node& node, const std::string& where,
                       proto::Node* out);
  absl::Status AddArgument(const Argument& arg, int depth,
                           const std::string& where, proto::Argument* out);
  absl::Status AddType(const TensorType& type, const std::string& where,
                       proto::TensorType* out);

  const GpbWriteOptions& options_;
  SideFileLayout* layout_;
};

// Checks a string that goes into a proto `string` field.
absl::Status CheckUtf8(absl::string_view text, const std::string& where,
                       absl::string_view what) {
  if (IsValidUtf8(text)) return absl::OkStatus();
  return SaveError(where, absl::StrCat(what,
                                       " is not valid UTF-8, which the .gpb "
                                       "format requires of names and meta"));
}

absl::Status ProtoBuilder::AddModule(
    const Module& module, const std::string& where, int depth,
    proto::Graph* graph, RepeatedPtrField<proto::Tensor>* tensors,
    RepeatedPtrField<proto::Submodule>* submodules) {
  for (const auto& [name, tensor] : module.tensors()) {
    RETURN_IF_ERROR(AddTensor(name, tensor, where, tensors->Add()));
  }
  for (const auto& [name, sub] : module.submodules()) {
    const std::string sub_where =
        absl::StrCat(where, "submodule '", name, "': ");
    RETURN_IF_ERROR(CheckUtf8(name, where, "a submodule name"));
    if (depth + 1 > kMaxModuleDepth) {
      return SaveError(sub_where, absl::StrCat("submodules nest deeper than ",
                                               kMaxModuleDepth, " levels"));
    }
    proto::Submodule* out = submodules->Add();
    out->set_name(name);
    if (absl::Status s =
            AddModule(*sub, sub_where, depth + 1, out->mutable_graph(),
                      out->mutable_tensors(), out->mutable_submodules());
        !s.ok()) {
      return s;
    }
  }
  graph->mutable_nodes()->Reserve(
      static_cast<int>(std::min<size_t>(module.graph().num_nodes(), 1 << 30)));
  for (const Node* node : module.graph().nodes()) {
    RETURN_IF_ERROR(AddNode(*node, where, graph->add_nodes()));
  }
  return absl::OkStatus();
}

absl::Status ProtoBuilder::AddTensor(const std::string& name,
                                     const ModuleTensor& tensor,
                                     const std::string& where,
                                     proto::Tensor* out) {
  const std::string place = absl::StrCat(where, "tensor '", name, "': ");
  RETURN_IF_ERROR(CheckUtf8(name, where, "a tensor name"));
  RETURN_IF_ERROR(CheckUtf8(tensor.init, place, "the init"));
  const Tensor& t = tensor.value;
  if (!t.defined()) return SaveError(place, "it has no data");
  if (t.rank() > kMaxRank) {
    return SaveError(place, absl::StrCat("rank ", t.rank(),
                                         " is over the limit of ", kMaxRank));
  }
  out->set_name(name);
  out->set_dtype(DTypeToProto(t.dtype()));
  for (int64_t d : t.dims()) out->add_dims(d);
  out->set_init(tensor.init);
  const uint64_t bytes = t.NumBytes();
  const bool external = layout_ != nullptr && options_.inline_limit >= 0 &&
                        bytes > static_cast<uint64_t>(options_.inline_limit);
  if (!external) {
    out->set_inline_data(static_cast<const char*>(t.raw_data()), bytes);
    return absl::OkStatus();
  }
  const uint64_t offset = AlignUp(layout_->size);
  layout_->entries.push_back({t, offset});
  layout_->size = offset + bytes;
  proto::ExternalData* ext = out->mutable_external();
  ext->set_offset(offset);
  ext->set_length(bytes);
  return absl::OkStatus();
}

absl::Status ProtoBuilder::AddType(const TensorType& type,
                                   const std::string& where,
                                   proto::TensorType* out) {
  if (type.rank() > kMaxRank) {
    return SaveError(where, absl::StrCat("a type of rank ", type.rank(),
                                         " is over the limit of ", kMaxRank));
  }
  out->set_dtype(DTypeToProto(type.dtype));
  for (Dim d : type.shape) {
    proto::Dim* dim = out->add_dims();
    if (d.is_constant()) {
      dim->set_size(d.value());
    } else {
      absl::string_view symbol = d.symbol();
      RETURN_IF_ERROR(CheckUtf8(symbol, where, "a dimension symbol"));
      dim->set_symbol(symbol.data(), symbol.size());
    }
  }
  return absl::OkStatus();
}

absl::Status ProtoBuilder::AddArgument(const Argument& arg, int depth,
                                       const std::string& where,
                                       proto::Argument* out) {
  const Argument::Value& v = arg.value();
  if (std::holds_alternative<NoneArg>(v)) {
    out->mutable_none();
  } else if (arg.is_node()) {
    out->set_node(arg.node()->name());
  } else if (arg.is_int()) {
    out->set_int_value(arg.int_value());
  } else if (arg.is_double()) {
    out->set_float_value(arg.double_value());
  } else if (arg.is_bool()) {
    out->set_bool_value(arg.bool_value());
  } else if (arg.is_string()) {
    // proto3 strings must be UTF-8; other bytes keep their own field.
    if (IsValidUtf8(arg.string_value())) {
      out->set_string_value(arg.string_value());
    } else {
      out->set_bytes_value(arg.string_value());
    }
  } else if (arg.is_dtype()) {
    out->set_dtype_value(DTypeToProto(arg.dtype_value()));
  } else if (arg.is_list()) {
    if (depth + 1 > kMaxListDepth) {
      return SaveError(where, absl::StrCat("lists nest deeper than ",
                                           kMaxListDepth, " levels"));
    }
    proto::ArgumentList* list = out->mutable_list();
    for (const Argument& element : arg.list()) {
      if (absl::Status s =
              AddArgument(element, depth + 1, where, list->add_elements());
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ProtoBuilder::AddNode(const Node& node, const std::string& where,
                                   proto::Node* out) {
  const std::string place = absl::StrCat(where, "node ", node.Ref(), ": ");
  if (!IsValidName(node.name())) {
    return SaveError(where, absl::StrCat("node name '", node.name(),
                                         "' is not an identifier"));
  }
  RETURN_IF_ERROR(CheckUtf8(node.target(), place, "the target"));
  out->set_name(node.name());
  out->set_op(OpCodeToProto(node.op()));
  out->set_target(node.target());
  for (const Argument& arg : node.args()) {
    RETURN_IF_ERROR(AddArgument(arg, 0, place, out->add_args()));
  }
  for (const auto& [key, value] : node.kwargs()) {
    RETURN_IF_ERROR(CheckUtf8(key, place, "a keyword name"));
    proto::Kwarg* kwarg = out->add_kwargs();
    kwarg->set_name(key);
    RETURN_IF_ERROR(AddArgument(value, 0, place, kwarg->mutable_value()));
  }
  const NodeMeta& meta = node.meta();
  if (meta.type.has_value()) {
    RETURN_IF_ERROR(AddType(*meta.type, place, out->mutable_type()));
  }
  for (const TensorType& type : meta.tuple_types) {
    RETURN_IF_ERROR(AddType(type, place, out->add_tuple_types()));
  }
  if (meta.location.has_value()) {
    RETURN_IF_ERROR(CheckUtf8(meta.location->file, place,
                              "the source location's file name"));
    proto::SourceLocation* loc = out->mutable_location();
    loc->set_file(meta.location->file);
    loc->set_line(meta.location->line);
    loc->set_column(meta.location->column);
  }
  if (meta.provenance.has_value()) {
    proto::Provenance* prov = out->mutable_provenance();
    RETURN_IF_ERROR(
        CheckUtf8(meta.provenance->pass, place, "the provenance's pass name"));
    prov->set_pass(meta.provenance->pass);
    for (const std::string& from : meta.provenance->from) {
      RETURN_IF_ERROR(CheckUtf8(from, place, "a provenance node name"));
      prov->add_from(from);
    }
  }
  for (const auto& [key, value] : meta.entries) {
    RETURN_IF_ERROR(CheckUtf8(key, place, "a meta key"));
    if (absl::Status s =
            CheckUtf8(value, place, absl::StrCat("meta entry '", key, "'"));
        !s.ok()) {
      return s;
    }
    proto::StringEntry* entry = out->add_meta();
    entry->set_key(key);
    entry->set_value(value);
  }
  return absl::OkStatus();
}

// Writes the side file's bytes (header, then each tensor at its offset) and
// returns its id. The hash covers everything after the header, padding too.
absl::StatusOr<uint64_t> WriteSideFile(const SideFileLayout& layout,
                                       AtomicFile& file) {
  static constexpr char kZeros[kSideFileAlignment] = {};
  RETURN_IF_ERROR(file.Write(EncodeSideFileHeader({})));
  SideFileHasher hasher;
  // Chunks small enough to be hashed and written while still in cache.
  constexpr size_t kChunk = size_t{8} << 20;
  for (const SideFileLayout::Entry& entry : layout.entries) {
    while (file.size() < entry.offset) {
      const size_t n =
          std::min<uint64_t>(entry.offset - file.size(), sizeof(kZeros));
      hasher.Update(kZeros, n);
      RETURN_IF_ERROR(file.Write(kZeros, n));
    }
    const auto* p = static_cast<const char*>(entry.tensor.raw_data());
    size_t left = entry.tensor.NumBytes();
    while (left > 0) {
      const size_t n = std::min(left, kChunk);
      hasher.Update(p, n);
      RETURN_IF_ERROR(file.Write(p, n));
      p += n;
      left -= n;
    }
  }
  if (file.size() != layout.size) {
    return absl::InternalError("side file size differs from its layout");
  }
  const uint64_t id = hasher.Finish();
  RETURN_IF_ERROR(file.WriteAt(0, EncodeSideFileHeader({id, layout.size})));
  return id;
}

}  // namespace

absl::StatusOr<proto::Model> ModuleToProto(const Module& module,
                                           const GpbWriteOptions& options,
                                           SideFileLayout* layout) {
  proto::Model model;
  RETURN_IF_ERROR(ModuleToProto(module, options, layout, &model));
  return model;
}

absl::Status ModuleToProto(const Module& module, const GpbWriteOptions& options,
                           SideFileLayout* layout, proto::Model* out) {
  proto::Model& model = *out;
  model.Clear();
  model.set_format_major(kGpbFormatMajor);
  model.set_format_minor(kGpbFormatMinor);
  RETURN_IF_ERROR(CheckUtf8(options.producer, "", "the producer"));
  model.set_producer(options.producer);
  std::set<absl::string_view> keys;
  for (const auto& [key, value] : options.metadata) {
    if (!keys.insert(key).second) {
      return SaveError("",
                       absl::StrCat("metadata key '", key, "' is given twice"));
    }
    RETURN_IF_ERROR(CheckUtf8(key, "", "a metadata key"));
    if (absl::Status s =
            CheckUtf8(value, "", absl::StrCat("metadata entry '", key, "'"));
        !s.ok()) {
      return s;
    }
    proto::StringEntry* entry = model.add_metadata();
    entry->set_key(key);
    entry->set_value(value);
  }
  ProtoBuilder builder(options, layout);
  RETURN_IF_ERROR(builder.AddModule(module, "", 0, model.mutable_graph(),
                                    model.mutable_tensors(),
                                    model.mutable_submodules()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> SerializeModelProto(const proto::Model& model,
                                                absl::string_view path) {
  const size_t size = model.ByteSizeLong();
  if (size > kMaxProtoBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write ", path, ": the model's proto would be ", size,
        " bytes, over protobuf's 2 GiB limit (store large tensors in the side "
        "file: use a smaller inline limit)"));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": protobuf serialization failed"));
  }
  return bytes;
}

absl::Status WriteGpbFile(const Module& module, const std::string& path,
                          const GpbWriteOptions& options) {
  SideFileLayout layout;
  google::protobuf::Arena arena;
  proto::Model* model =
      google::protobuf::Arena::CreateMessage<proto::Model>(&arena);
  if (absl::Status s = ModuleToProto(module, options, &layout, model);
      !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("cannot write ", path, ": ", s.message()));
  }
  // The side file first: it must be complete before a .gpb refers to it.
  std::optional<AtomicFile> side;
  if (!layout.entries.empty()) {
    ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(SideFilePath(path)));
    side.emplace(std::move(file));
    ASSIGN_OR_RETURN(uint64_t id, WriteSideFile(layout, *side));
    RETURN_IF_ERROR(side->Finish());
    proto::DataFile* data_file = model->mutable_data_file();
    data_file->set_size(layout.size);
    data_file->set_id(id);
  }
  ASSIGN_OR_RETURN(std::string bytes, SerializeModelProto(*model, path));
  ASSIGN_OR_RETURN(AtomicFile gpb, AtomicFile::Create(path));
  RETURN_IF_ERROR(gpb.Write(bytes));
  RETURN_IF_ERROR(gpb.Finish());
  if (side.has_value()) {
    RETURN_IF_ERROR(side->Publish());
  }
  RETURN_IF_ERROR(gpb.Publish());
  if (!side.has_value()) {
    // A side file left by an earlier save of this path belongs to no model
    // now.
    const std::string stale = SideFilePath(path);
    if (::unlink(stale.c_str()) != 0 && errno != ENOENT) {
      return absl::InvalidArgumentError(
          absl::StrCat("wrote ", path, " but cannot remove the stale ", stale,
                       ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace graft
