#include "passes/plugin_loader.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "passes/pass_registry.h"
#include "passes/pattern_registry.h"
#include "passes/pipeline.h"
#include "passes/plugin_api.h"
#include "tests/passes/test_util.h"

// Paths of the plugins tests/CMakeLists.txt builds from tests/plugin/.
#ifndef GRAFT_TEST_PLUGIN_PATH
#error "tests/CMakeLists.txt defines the paths of the test plugins"
#endif

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;
using ::testing::HasSubstr;

constexpr char kRelu[] = R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %relu : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    %neg : f32[4] = call_function[target=neg](args = (%relu,), kwargs = {})
    return neg
)";

// Whether a plugin of that name was loaded (by this test or, when the whole
// binary runs in one process, by an earlier one).
bool IsLoaded(absl::string_view name) {
  for (const LoadedPlugin& p : LoadedPassPlugins()) {
    if (p.name == name) return true;
  }
  return false;
}

void LoadTestPlugin() {
  absl::Status s = LoadPassPlugin(GRAFT_TEST_PLUGIN_PATH);
  ASSERT_TRUE(s.ok()) << s;
}

TEST(PluginLoaderTest, RegistersPassesPatternsAndOps) {
  LoadTestPlugin();
  EXPECT_NE(PassRegistry::Global().Find("test-plugin-throw"), nullptr);
  EXPECT_NE(PassRegistry::Global().Find("test-plugin-throwing-factory"),
            nullptr);
  const PatternInfo* pattern =
      PatternRegistry::Global().Find("test_plugin.relu_to_twice");
  ASSERT_NE(pattern, nullptr);
  EXPECT_EQ(pattern->origin, GRAFT_TEST_PLUGIN_PATH);
  const OpSchema* twice = OpRegistry::Global().Find("test_plugin::twice");
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice->Signature(), "test_plugin::twice(input: Tensor)");

  std::vector<LoadedPlugin> loaded = LoadedPassPlugins();
  ASSERT_EQ(loaded.size(), 1u);  // Failed plugins are not listed.
  EXPECT_EQ(loaded[0].name, "test_plugin");
  EXPECT_EQ(loaded[0].path, GRAFT_TEST_PLUGIN_PATH);
  EXPECT_EQ(loaded[0].description, "Plugin of the loader's tests");
  EXPECT_EQ(loaded[0].passes,
            (std::vector<std::string>{"test-plugin-throw",
                                      "test-plugin-throwing-factory"}));
  EXPECT_EQ(loaded[0].patterns,
            (std::vector<std::string>{"test_plugin.relu_to_twice"}));
  EXPECT_EQ(loaded[0].ops, (std::vector<std::string>{"test_plugin::twice"}));
}

TEST(PluginLoaderTest, LoadingTheSameLibraryAgainDoesNothing) {
  LoadTestPlugin();
  LoadTestPlugin();
  EXPECT_EQ(LoadedPassPlugins().size(), 1u);
}

TEST(PluginLoaderTest, PluginPatternRunsThroughApplyPatterns) {
  LoadTestPlugin();
  Module m = Parse(kRelu);
  absl::StatusOr<Pipeline> p =
      Pipeline::FromString("apply-patterns{names=test_plugin.relu_to_twice}");
  ASSERT_TRUE(p.ok()) << p.status();
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(Ops(m.graph()), "test_plugin::twice neg");
  const Node* twice = m.graph().output()->arg(0).node()->arg(0).node();
  ASSERT_TRUE(twice->is_call("test_plugin::twice"));
  ASSERT_TRUE(twice->meta().provenance.has_value());
  EXPECT_EQ(twice->meta().provenance->pass, "apply-patterns");
  EXPECT_EQ(twice->meta().provenance->from, (std::vector<std::string>{"relu"}));
}

TEST(PluginLoaderTest, UnknownPatternNamesAreErrors) {
  LoadTestPlugin();
  absl::StatusOr<Pipeline> p =
      Pipeline::FromString("apply-patterns{names=nope}");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("unknown pattern 'nope'"));
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("test_plugin.relu_to_twice"));
}

TEST(PluginLoaderTest, ExceptionFromPassRunIsAnErrorNamingPassAndPlugin) {
  LoadTestPlugin();
  Module m = Parse(kRelu);
  const std::string before = PrintModule(m);
  absl::StatusOr<Pipeline> p = Pipeline::FromString("test-plugin-throw");
  ASSERT_TRUE(p.ok()) << p.status();
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              HasSubstr("pass 'test-plugin-throw' failed: threw an exception: "
                        "thrown from Run"));
  EXPECT_THAT(std::string(changed.status().message()),
              HasSubstr(GRAFT_TEST_PLUGIN_PATH));
  EXPECT_EQ(PrintModule(m), before);
}

TEST(PluginLoaderTest, ExceptionFromPassFactoryIsAnError) {
  LoadTestPlugin();
  absl::StatusOr<Pipeline> p =
      Pipeline::FromString("test-plugin-throwing-factory");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(
      std::string(p.status().message()),
      HasSubstr("pass 'test-plugin-throwing-factory': creating the pass "
                "threw an exception: thrown from the factory"));
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr(GRAFT_TEST_PLUGIN_PATH));
}

TEST(PluginLoaderTest, ExceptionFromTypeRuleIsATypeError) {
  LoadTestPlugin();
  Graph g;
  Node* x = g.Placeholder("x", TensorType{DType::kBool, {2}});
  Node* twice = g.CallFunction("test_plugin::twice", {x});
  auto types = InferNodeTypes(*twice);
  ASSERT_FALSE(types.ok());
  EXPECT_THAT(std::string(types.status().message()),
              HasSubstr("test_plugin::twice"));
  EXPECT_THAT(std::string(types.status().message()),
              HasSubstr("type rule threw an exception: twice of a bool"));

  Node* y = g.Placeholder("y", TensorType{DType::kF32, {2}});
  Node* ok = g.CallFunction("test_plugin::twice", {y});
  auto ok_types = InferNodeTypes(*ok);
  ASSERT_TRUE(ok_types.ok()) << ok_types.status();
  ASSERT_TRUE(ok_types->has_value());
  EXPECT_EQ((**ok_types)[0], (TensorType{DType::kF32, {2}}));
}

TEST(PluginLoaderTest, ExceptionFromMatchFilterIsAnError) {
  LoadTestPlugin();
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %boom : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    return boom
)");
  const std::string before = PrintModule(m);
  absl::StatusOr<Pipeline> p = Pipeline::FromString("apply-patterns");
  ASSERT_TRUE(p.ok()) << p.status();
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(
      std::string(changed.status().message()),
      HasSubstr(absl::StrCat("pass 'apply-patterns' failed: pattern "
                             "'test_plugin.relu_to_twice' (from ",
                             GRAFT_TEST_PLUGIN_PATH,
                             "): threw an "
                             "exception that is not a std::exception")));
  EXPECT_EQ(PrintModule(m), before);
}

TEST(PluginLoaderTest, MissingFileIsAnError) {
  absl::Status s = LoadPassPlugin("/nonexistent/libgraft_nope.so");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("pass plugin '/nonexistent/libgraft_nope.so': cannot "
                        "load it: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("No such file or directory"));
}

TEST(PluginLoaderTest, FileThatIsNoLibraryIsAnError) {
  std::string path = ::testing::TempDir() + "/not_a_library.so";
  std::ofstream(path) << "graft plugin? no, just text\n";
  absl::Status s = LoadPassPlugin(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(absl::StrCat("pass plugin '", path, "': cannot load it: ")));
  std::remove(path.c_str());
}

TEST(PluginLoaderTest, NewerApiVersionIsRefused) {
  absl::Status s = LoadPassPlugin(GRAFT_BAD_VERSION_PATH);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            absl::StrCat("plugin '", GRAFT_BAD_VERSION_PATH,
                         "' was built for graft plugin API v",
                         GRAFT_PLUGIN_API_VERSION + 1, ", this graft has v",
                         GRAFT_PLUGIN_API_VERSION,
                         "; rebuild the plugin against this graft"));
  EXPECT_FALSE(IsLoaded("bad_version"));
}

TEST(PluginLoaderTest, OtherBuildTagIsRefused) {
  absl::Status s = LoadPassPlugin(GRAFT_BAD_BUILD_TAG_PATH);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("plugin '", GRAFT_BAD_BUILD_TAG_PATH,
                                     "' was built against graft build "
                                     "'graft-0.0.1-OtherCompiler-1.0', but "
                                     "this graft is '",
                                     GRAFT_PLUGIN_BUILD_TAG, "'")));
}

TEST(PluginLoaderTest, LibraryWithoutEntryPointIsRefused) {
  absl::Status s = LoadPassPlugin(GRAFT_BAD_MISSING_SYMBOL_PATH);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(absl::StrCat("pass plugin '", GRAFT_BAD_MISSING_SYMBOL_PATH,
                             "': the library does not export the "
                             "entry point 'graft_plugin_info'")));
}

TEST(PluginLoaderTest, ExceptionFromRegisterFunctionIsCaught) {
  for (int attempt = 0; attempt < 2; ++attempt) {  // A retry fails the same.
    absl::Status s = LoadPassPlugin(GRAFT_BAD_THROWING_PATH);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(),
              absl::StrCat("plugin 'bad_throwing' (", GRAFT_BAD_THROWING_PATH,
                           ") failed to register: its register function threw "
                           "an exception: bad_throwing: out of cheese"));
  }
  EXPECT_FALSE(IsLoaded("bad_throwing"));
}

TEST(PluginLoaderTest, FailingRegisterFunctionRegistersNothing) {
  absl::Status s = LoadPassPlugin(GRAFT_BAD_FAILING_PATH);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            absl::StrCat("plugin 'bad_failing' (", GRAFT_BAD_FAILING_PATH,
                         ") failed to register: bad_failing: no licence key "
                         "found"));
  EXPECT_EQ(PassRegistry::Global().Find("bad-failing-pass"), nullptr);
}

TEST(PluginLoaderTest, TakenPassNameFailsThePluginEvenIfIgnored) {
  absl::Status s = LoadPassPlugin(GRAFT_BAD_DUPLICATE_PATH);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            absl::StrCat("plugin 'bad_duplicate' (", GRAFT_BAD_DUPLICATE_PATH,
                         ") failed to register: pass 'dce' is already "
                         "registered"));
  EXPECT_FALSE(IsLoaded("bad_duplicate"));
  // The built-in dce is still the one registered.
  EXPECT_THAT(PassRegistry::Global().Find("dce")->description,
              HasSubstr("Removes nodes"));
}

TEST(PatternRegistryTest, RefusesMismatchedArityAndBadNames) {
  PatternInfo info;
  info.name = "bad arity";
  info.pattern = Parse(R"(
graph():
    %x = placeholder[target=x]
    %relu = call_function[target=relu](args = (%x,), kwargs = {})
    return relu
)");
  info.replacement = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %add = call_function[target=add](args = (%x, %y), kwargs = {})
    return add
)");
  absl::Status s = CheckPatternInfo(info);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("invalid pattern name 'bad arity'"));
  info.name = "tests.bad_arity";
  s = CheckPatternInfo(info);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("the replacement takes 2 inputs and returns 1 values, "
                        "but the pattern takes 1 and returns 1"));
}

}  // namespace
}  // namespace graft::passes
