// The Backend interface, the registry and the interp backend.

#include "backends/backend.h"

#include "backends/interp/interp_backend.h"
#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// y = relu(linear(x, w, b)) with x: f32[batch, 2].
Module SmallMlp() {
  Module m;
  Graph& g = m.graph();
  Node* x =
      g.Placeholder("x", TensorType{DType::kF32, {Dim::Symbol("batch"), 2}});
  Node* w = g.GetAttr("w");
  Node* b = g.GetAttr("b");
  Node* y = g.CallFunction("relu", {g.CallFunction("linear", {x, w, b})});
  y->set_type(TensorType{DType::kF32, {Dim::Symbol("batch"), 2}});
  g.Output(y);
  m.SetTensor("w", F32({2, 2}, {1, 2, -1, 0}));
  m.SetTensor("b", F32({2}, {0.5, 0}));
  return m;
}

TEST(BackendRegistry, CreatesInterp) {
  GRAFT_ASSERT_OK_AND_ASSIGN(backend, CreateBackend("interp"));
  EXPECT_EQ(backend->name(), "interp");
  EXPECT_THAT(BackendRegistry::Global().Names(), testing::Contains("interp"));
}

TEST(BackendRegistry, UnknownNameListsKnownBackends) {
  absl::StatusOr<std::unique_ptr<Backend>> b = CreateBackend("tpu");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(b.status().message(), HasSubstr("unknown backend 'tpu'"));
  EXPECT_THAT(b.status().message(), HasSubstr("interp"));
}

TEST(BackendRegistry, RefusesDuplicates) {
  EXPECT_FALSE(RegisterBackend("interp", [] {
                 return std::make_unique<interp::InterpBackend>();
               }).ok());
}

TEST(InterpBackend, CompilesAndRuns) {
  GRAFT_ASSERT_OK_AND_ASSIGN(backend, CreateBackend("interp"));
  std::unique_ptr<Executable> exe;
  {
    Module m = SmallMlp();
    GRAFT_ASSERT_OK_AND_ASSIGN(compiled, backend->Compile(m, CompileOptions{}));
    exe = std::move(compiled);
  }  // The executable keeps its own copy of the module.
  ASSERT_EQ(exe->input_signature().size(), 1u);
  EXPECT_EQ(exe->input_signature()[0].name, "x");
  EXPECT_EQ(exe->input_signature()[0].type->ToString(), "f32[batch,2]");
  ASSERT_EQ(exe->output_signature().size(), 1u);
  EXPECT_EQ(exe->output_signature()[0].name, "relu");
  // Row [1, 1]: [1*1 + 1*2 + 0.5, -1 + 0] -> relu [3.5, 0].
  // Row [0, -1]: [-2 + 0.5, 0] -> [0, 0].
  GRAFT_ASSERT_OK_AND_ASSIGN(out, exe->Run({F32({2, 2}, {1, 1, 0, -1})}));
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 2}, {3.5, 0, 0, 0});
  // Another batch size, same executable.
  GRAFT_ASSERT_OK_AND_ASSIGN(one, exe->Run({F32({1, 2}, {-1, 0})}));
  ExpectTensor(one[0], DType::kF32, {1, 2}, {0, 1});
  absl::StatusOr<std::vector<Tensor>> bad =
      exe->Run({F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("input 0 ('x')"));
}

TEST(InterpBackend, InputTypesNarrowTheSignature) {
  GRAFT_ASSERT_OK_AND_ASSIGN(backend, CreateBackend("interp"));
  CompileOptions options;
  options.input_types = {TensorType{DType::kF32, {4, 2}}};
  GRAFT_ASSERT_OK_AND_ASSIGN(exe, backend->Compile(SmallMlp(), options));
  EXPECT_EQ(exe->input_signature()[0].type->ToString(), "f32[4,2]");
  EXPECT_FALSE(exe->Run({F32({1, 2}, {1, 2})}).ok());
  options.input_types = {TensorType{DType::kF64, {4, 2}}};
  absl::StatusOr<std::unique_ptr<Executable>> mismatch =
      backend->Compile(SmallMlp(), options);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("does not match"));
}

TEST(InterpBackend, RefusesOptionsAndDevices) {
  interp::InterpBackend backend;
  CompileOptions options;
  options.options["autotune"] = "1";
  absl::StatusOr<std::unique_ptr<Executable>> a =
      backend.Compile(SmallMlp(), options);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("autotune"));
  CompileOptions device;
  device.device_index = 1;
  EXPECT_FALSE(backend.Compile(SmallMlp(), device).ok());
}

TEST(InterpBackend, CompileReportsUnrunnableNodes) {
  interp::InterpBackend backend;
  Module unknown;
  Node* x = unknown.graph().Placeholder("x");
  unknown.graph().Output(unknown.graph().CallFunction("frobnicate", {x}));
  absl::StatusOr<std::unique_ptr<Executable>> a = backend.Compile(unknown, {});
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("node %frobnicate"));

  Module no_tensor;
  no_tensor.graph().Output(no_tensor.graph().GetAttr("w"));
  EXPECT_FALSE(backend.Compile(no_tensor, {}).ok());

  Module no_output;
  no_output.graph().Placeholder("x");
  EXPECT_FALSE(backend.Compile(no_output, {}).ok());
}

TEST(InterpBackend, CanRunSaysWhyNot) {
  interp::InterpBackend backend;
  Module m;
  Node* x = m.graph().Placeholder("x");
  EXPECT_TRUE(backend.CanRun(*x, {}).ok());
  EXPECT_TRUE(backend.CanRun(*m.graph().CallFunction("relu", {x}), {}).ok());
  absl::Status s = backend.CanRun(*m.graph().CallFunction("my::op", {x}), {});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("no kernel for op 'my::op'"));
}

TEST(Signatures, OutputSignatureExpandsTuples) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  Node* s = g.CallFunction("split", {x, 2});
  s->meta().tuple_types = {TensorType{DType::kF32, {2}},
                           TensorType{DType::kF32, {2}}};
  Node* n = g.CallFunction("neg", {x});
  g.Output(ArgumentList{n, s});
  std::vector<ValueSignature> sig = OutputSignature(g);
  ASSERT_EQ(sig.size(), 3u);
  EXPECT_EQ(sig[0].name, "neg");
  EXPECT_FALSE(sig[0].type.has_value());
  EXPECT_EQ(sig[1].name, "split.0");
  EXPECT_EQ(sig[2].name, "split.1");
  EXPECT_EQ(sig[2].type->ToString(), "f32[2]");
}

TEST(Signatures, CheckInputs) {
  const Dim n = Dim::Symbol("n");
  std::vector<ValueSignature> sig = {
      {"a", TensorType{DType::kF32, {n, 3}}},
      {"b", TensorType{DType::kI64, {n}}},
      {"c", std::nullopt},
  };
  GRAFT_ASSERT_OK_AND_ASSIGN(
      bindings, CheckInputs(sig, {F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                                  I64({2}, {1, 2}), F32({}, {0})}));
  EXPECT_EQ(bindings.at("n"), 2);
  absl::StatusOr<SymbolBindings> bad = CheckInputs(
      sig, {F32({2, 3}, {1, 2, 3, 4, 5, 6}), I64({1}, {1}), F32({}, {0})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(
      bad.status().message(),
      HasSubstr(
          "input 1 ('b'): dim 0 (n) is 1, but n is 2 from input 0 ('a')"));
  EXPECT_FALSE(CheckInputs(sig, {F32({2, 4}, std::vector<double>(8, 0)),
                                 I64({2}, {1, 2}), F32({}, {0})})
                   .ok());
  EXPECT_FALSE(CheckInputs(sig, {}).ok());
}

TEST(Signatures, DerivedSymbolsMustAgreeWithTheirFactors) {
  const Dim batch = Dim::Symbol("batch");
  const Dim derived = Dim::Symbol("4*batch");
  std::vector<ValueSignature> sig = {
      {"flat", TensorType{DType::kF32, {derived}}},
      {"x", TensorType{DType::kF32, {batch, 4}}},
  };
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ok, CheckInputs(sig, {F32({8}, std::vector<double>(8, 0)),
                            F32({2, 4}, std::vector<double>(8, 0))}));
  EXPECT_EQ(ok.at("batch"), 2);
  absl::StatusOr<SymbolBindings> bad =
      CheckInputs(sig, {F32({12}, std::vector<double>(12, 0)),
                        F32({2, 4}, std::vector<double>(8, 0))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("(4*batch) is 12, but 4*batch is 8"));
  // With batch unbound, a derived symbol binds by its name.
  std::vector<ValueSignature> alone = {
      {"flat", TensorType{DType::kF32, {derived}}},
      {"g", TensorType{DType::kF32, {derived}}}};
  EXPECT_TRUE(
      CheckInputs(alone, {F32({3}, {0, 0, 0}), F32({3}, {0, 0, 0})}).ok());
  EXPECT_FALSE(
      CheckInputs(alone, {F32({3}, {0, 0, 0}), F32({2}, {0, 0})}).ok());
}

TEST(CompileOptions, GetWithFallback) {
  CompileOptions options;
  options.options["k"] = "v";
  EXPECT_EQ(options.Get("k"), "v");
  EXPECT_EQ(options.Get("missing", "d"), "d");
}

}  // namespace
}  // namespace graft::interp_test
