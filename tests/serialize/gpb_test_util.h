#ifndef GRAFT_TESTS_SERIALIZE_GPB_TEST_UTIL_H_
#define GRAFT_TESTS_SERIALIZE_GPB_TEST_UTIL_H_

// Helpers shared by the model-format tests (tests/serialize/gpb_*_test.cc,
// json_format_test.cc, model_io_test.cc; tests/onnx/onnx_model_io_test.cc).

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/module.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"

namespace graft::testing_util {

// A fresh directory for one test's files.
inline std::string MakeTempDir(absl::string_view prefix) {
  std::string templ =
      absl::StrCat(::testing::TempDir(), "/", prefix, "_XXXXXX");
  char* dir = ::mkdtemp(templ.data());
  EXPECT_NE(dir, nullptr);
  return templ;
}

inline Module ParseOrDie(absl::string_view text) {
  absl::StatusOr<Module> module = ParseModule(text, "test.graft");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return Module();
  return *std::move(module);
}

// The text form with every tensor's data.
inline std::string PrintAll(const Module& module) {
  PrintOptions options;
  options.max_inline_elements = -1;
  return PrintModule(module, options);
}

// What the text format does not show: each node's location, provenance and
// meta entries, and each tensor's init and raw bytes, recursively through
// submodules, one line each. Two modules that agree on PrintAll and on this
// are the same module.
inline void AppendHidden(const Module& module, const std::string& path,
                         std::string* out) {
  for (const auto& [name, t] : module.tensors()) {
    absl::StrAppend(out, path, "tensor ", name, " init='", t.init, "' ",
                    t.value.TypeString(), " bytes=");
    const auto* p = static_cast<const unsigned char*>(t.value.raw_data());
    for (size_t i = 0; i < t.value.NumBytes(); ++i) {
      absl::StrAppend(out, absl::Hex(p[i], absl::kZeroPad2));
    }
    out->push_back('\n');
  }
  for (const auto& [name, sub] : module.submodules()) {
    AppendHidden(*sub, absl::StrCat(path, name, "/"), out);
  }
  for (const Node* n : module.graph().nodes()) {
    const NodeMeta& m = n->meta();
    absl::StrAppend(out, path, n->Ref(), " target='", n->target(), "'");
    if (m.location.has_value()) {
      absl::StrAppend(out, " loc=", m.location->file, ":", m.location->line,
                      ":", m.location->column);
    }
    if (m.provenance.has_value()) {
      absl::StrAppend(out, " prov=", m.provenance->pass, "<-");
      for (const std::string& f : m.provenance->from) {
        absl::StrAppend(out, f, ",");
      }
    }
    for (const auto& [k, v] : m.entries) {
      absl::StrAppend(out, " meta[", k, "]=", v);
    }
    // Both type fields, even where the printer shows only one.
    if (m.type.has_value()) absl::StrAppend(out, " type=", m.type->ToString());
    for (const TensorType& t : m.tuple_types) {
      absl::StrAppend(out, " tuple=", t.ToString());
    }
    out->push_back('\n');
  }
}

inline std::string Hidden(const Module& module) {
  std::string out;
  AppendHidden(module, "", &out);
  return out;
}

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void WriteBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace graft::testing_util

#endif  // GRAFT_TESTS_SERIALIZE_GPB_TEST_UTIL_H_
