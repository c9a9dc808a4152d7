// Every built-in pass must leave what a model computes unchanged: each one
// runs (through a Pipeline, verifying after it) on a few small models, and
// the interpreter's outputs before and after are compared on fresh random
// inputs.

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/interp/constant_evaluator.h"
#include "backends/interp/interpreter.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/fused_ops.h"
#include "passes/pass_registry.h"
#include "passes/pattern_registry.h"
#include "passes/pipeline.h"
#include "passes/shape_prop.h"
#include "passes/substitute.h"
#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

// An MLP: linear + gelu, layer_norm, linear + relu, matmul + bias + gelu,
// softmax, and a few identities.
constexpr char kMlp[] = R"(
tensor w1 : f32[16,8] = random(seed=1)
tensor b1 : f32[16] = random(seed=2)
tensor g : f32[16] = random(seed=3)
tensor beta : f32[16] = random(seed=4)
tensor w2 : f32[12,16] = random(seed=5)
tensor b2 : f32[12] = random(seed=6)
tensor w3 : f32[12,6] = random(seed=7)
tensor b3 : f32[6] = random(seed=8)
graph():
    %x : f32[5,8] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %b1 = get_attr[target=b1]
    %h = call_function[target=linear](args = (%x, %w1, %b1), kwargs = {})
    %a = call_function[target=gelu](args = (%h,), kwargs = {})
    %g = get_attr[target=g]
    %beta = get_attr[target=beta]
    %n = call_function[target=layer_norm](args = (%a, [16], %g, %beta), kwargs = {})
    %w2 = get_attr[target=w2]
    %b2 = get_attr[target=b2]
    %h2 = call_function[target=linear](args = (%n, %w2, %b2), kwargs = {})
    %r = call_function[target=relu](args = (%h2,), kwargs = {})
    %w3 = get_attr[target=w3]
    %b3 = get_attr[target=b3]
    %mm = call_function[target=matmul](args = (%r, %w3), kwargs = {})
    %ab = call_function[target=add](args = (%mm, %b3), kwargs = {})
    %ge = call_function[target=gelu](args = (%ab,), kwargs = {approximate: "tanh"})
    %z = call_function[target=add](args = (%ge, 0.0), kwargs = {})
    %o = call_function[target=mul](args = (%z, 1.0), kwargs = {})
    %s = call_function[target=silu](args = (%o,), kwargs = {})
    %p = call_function[target=softmax](args = (%s, -1), kwargs = {})
    %l = call_function[target=log_softmax](args = (%s, 0), kwargs = {})
    %q = call_function[target=mul](args = (%p, 2.0), kwargs = {})
    %t = call_function[target=add](args = (%q, 1.0), kwargs = {})
    return (t, l)
)";

// conv2d + batch_norm + relu + pooling, with duplicated work for cse.
constexpr char kConvNet[] = R"(
tensor cw : f32[4,3,3,3] = random(seed=11)
tensor cb : f32[4] = random(seed=12)
tensor mean : f32[4] = random(seed=13)
tensor var : f32[4] = [0.5, 1.5, 0.75, 2.0]
tensor gamma : f32[4] = random(seed=14)
tensor bnb : f32[4] = random(seed=15)
tensor fw : f32[5,16] = random(seed=16)
graph():
    %x : f32[2,3,8,8] = placeholder[target=x]
    %cw = get_attr[target=cw]
    %cb = get_attr[target=cb]
    %c = call_function[target=conv2d](args = (%x, %cw, %cb), kwargs = {padding: 1})
    %mean = get_attr[target=mean]
    %var = get_attr[target=var]
    %gamma = get_attr[target=gamma]
    %bnb = get_attr[target=bnb]
    %bn = call_function[target=batch_norm](args = (%c, %mean, %var, %gamma, %bnb), kwargs = {eps: 0.001})
    %r = call_function[target=relu](args = (%bn,), kwargs = {})
    %p = call_function[target=max_pool2d](args = (%r, 2), kwargs = {})
    %p2 = call_function[target=max_pool2d](args = (%r, 2), kwargs = {})
    %s = call_function[target=add](args = (%p, %p2), kwargs = {})
    %ap = call_function[target=adaptive_avg_pool2d](args = (%s, [2, 2]), kwargs = {})
    %f = call_function[target=flatten](args = (%ap, 1), kwargs = {})
    %fw = get_attr[target=fw]
    %y = call_function[target=linear](args = (%f, %fw), kwargs = {})
    %yr = call_function[target=relu](args = (%y,), kwargs = {})
    %dead = call_function[target=exp](args = (%yr,), kwargs = {})
    return yr
)";

// Identities, double transposes, permutes, reshapes, constants.
constexpr char kChain[] = R"(
tensor k : f32[4,6] = random(seed=21)
graph():
    %x : f32[2,4,6] = placeholder[target=x]
    %t1 = call_function[target=transpose](args = (%x, 1, 2), kwargs = {})
    %t2 = call_function[target=transpose](args = (%t1, 2, 1), kwargs = {})
    %i = call_function[target=identity](args = (%t2,), kwargs = {})
    %d = call_function[target=dropout](args = (%i,), kwargs = {p: 0.5, training: False})
    %k = get_attr[target=k]
    %kt = call_function[target=transpose](args = (%k, 0, 1), kwargs = {})
    %ks = call_function[target=mul](args = (%kt, 0.5), kwargs = {})
    %kb = call_function[target=transpose](args = (%ks, -1, 0), kwargs = {})
    %a = call_function[target=add](args = (%d, %kb), kwargs = {})
    %p1 = call_function[target=permute](args = (%a, [0, 2, 1]), kwargs = {})
    %p2 = call_function[target=permute](args = (%p1, [2, 1, 0]), kwargs = {})
    %r1 = call_function[target=reshape](args = (%p2, [4, 12]), kwargs = {})
    %r2 = call_function[target=reshape](args = (%r1, [48]), kwargs = {})
    %u = call_function[target=unsqueeze](args = (%r2, 0), kwargs = {})
    %q = call_function[target=squeeze](args = (%u, 0), kwargs = {})
    %c = call_function[target=cast](args = (%q,), kwargs = {dtype: f32})
    %n1 = call_function[target=neg](args = (%c,), kwargs = {})
    %n2 = call_function[target=neg](args = (%n1,), kwargs = {})
    %e = call_function[target=exp](args = (%n2,), kwargs = {})
    %m = call_function[target=mul](args = (%e, %n2), kwargs = {})
    %z = call_function[target=zeros](args = ([48],), kwargs = {})
    %ar = call_function[target=arange](args = (0, 48), kwargs = {dtype: f32})
    %cz = call_function[target=add](args = (%z, %ar), kwargs = {})
    %o = call_function[target=sub](args = (%m, %cz), kwargs = {})
    %sr = call_function[target=relu](args = (%o,), kwargs = {})
    %sg = call_function[target=sigmoid](args = (%sr,), kwargs = {})
    return sg
)";

// What the substitute pass applies in this test: relu(x) -> maximum(x, 0.0)
// and sigmoid(x) -> 1 / (1 + exp(-x)).
constexpr char kTable[] = R"(--- pattern relu
graph():
    %x = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
--- replacement relu
graph():
    %x = placeholder[target=x]
    %r = call_function[target=maximum](args = (%x, 0.0), kwargs = {})
    return r
--- pattern sigmoid
graph():
    %x = placeholder[target=x]
    %s = call_function[target=sigmoid](args = (%x,), kwargs = {})
    return s
--- replacement sigmoid
graph():
    %x = placeholder[target=x]
    %n = call_function[target=neg](args = (%x,), kwargs = {})
    %e = call_function[target=exp](args = (%n,), kwargs = {})
    %d = call_function[target=add](args = (%e, 1.0), kwargs = {})
    %r = call_function[target=reciprocal](args = (%d,), kwargs = {})
    return r
)";

// One built-in pass and how to check it.
struct PassCase {
  std::string pass;      // Registry name.
  std::string pipeline;  // What runs.
  double tolerance;      // Relative.
  bool must_change;      // On at least one model.
};

std::vector<PassCase> Cases() {
  static const std::string table = [] {
    std::string path = ::testing::TempDir() + "pass_semantics_table.txt";
    std::ofstream(path) << kTable;
    return path;
  }();
  return {
      {"shape-prop", "shape-prop", 1e-5, false},
      {"dce", "dce", 1e-5, true},
      {"cse", "cse", 1e-5, true},
      {"canonicalize", "canonicalize", 1e-5, true},
      {"substitute", "substitute{file=" + table + "}", 1e-5, true},
      {"decompose", "decompose", 1e-4, true},
      // What decompose spells out, put back.
      {"recognize-composites", "decompose,recognize-composites", 1e-4, true},
      {"fold-batchnorm", "fold-batchnorm", 1e-4, true},
      {"fuse-linear-activation", "fuse-linear-activation", 1e-5, true},
      {"fuse-elementwise", "fuse-elementwise", 1e-5, true},
      {"partition",
       "partition{ops=relu;add;mul;gelu;layer_norm;transpose;permute;reshape;"
       "conv2d;max_pool2d;neg;exp}",
       1e-5, true},
      {"fold-constants", "fold-constants", 1e-5, true},
      {"apply-patterns", "apply-patterns{names=semantics_test.sigmoid_by_exp}",
       1e-5, true},
      // A world of one rank runs alone; larger worlds need every rank
      // running, which tests/backends/sharding_test.cc checks.
      {"shard", "shard{world=1}", 1e-5, false},
      // Observers are the identity; convert changes nothing unprepared (the
      // quantized graph's accuracy is tests/quantize/'s).
      {"quantize-prepare", "quantize-prepare", 1e-5, true},
      {"quantize-convert", "quantize-convert", 1e-5, false},
      {"quantize-lower", "quantize-lower", 1e-5, false},
      // No linear -> relu -> linear pair here: tests/quantize/ has one.
      {"equalize-layers", "equalize-layers", 1e-5, false},
      // Lossy by design: only a gross error (a misplaced or transposed
      // weight) fails here; tests/quantize/ measures its SQNR.
      {"quantize-weights", "quantize-weights{group=16}", 0.2, true},
      {"quantize-dynamic", "quantize-dynamic", 0.2, true},
  };
}

// Loads models, makes inputs and runs the interpreter.
class PassSemanticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterTestPattern();
  }

  // sigmoid(x) -> 1 / (1 + exp(-x)) as a named pattern, for apply-patterns.
  static void RegisterTestPattern() {
    static const bool registered = [] {
      absl::StatusOr<std::vector<passes::Substitution>> table =
          passes::ParseSubstitutionTable(kTable);
      EXPECT_TRUE(table.ok()) << table.status();
      if (!table.ok()) return false;
      passes::Substitution& s = (*table)[1];
      EXPECT_EQ(s.name, "sigmoid");
      passes::PatternInfo info;
      info.name = "semantics_test.sigmoid_by_exp";
      info.description = "sigmoid(x) -> 1 / (1 + exp(-x))";
      info.pattern = std::move(s.pattern);
      info.replacement = std::move(s.replacement);
      absl::Status st =
          passes::PatternRegistry::Global().Register(std::move(info));
      EXPECT_TRUE(st.ok()) << st;
      return st.ok();
    }();
    (void)registered;
  }

  // Parses a model and types it, as a model would be before optimization.
  Module Load(absl::string_view text) {
    absl::StatusOr<Module> m = ParseModule(text);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return Module();
    absl::StatusOr<bool> typed = passes::PropagateShapes(*m);
    EXPECT_TRUE(typed.ok()) << typed.status();
    return *std::move(m);
  }

  std::vector<Tensor> RandomInputs(const Module& m, uint32_t seed) {
    std::vector<Tensor> inputs;
    for (Node* p : m.graph().placeholders()) {
      inputs.push_back(Random(p->type()->dtype, StaticDims(p->type()->shape),
                              seed++, -2, 2));
    }
    return inputs;
  }

  absl::StatusOr<std::vector<Tensor>> Run(const Module& m,
                                          const std::vector<Tensor>& inputs) {
    interp::Interpreter interpreter(m);
    return interpreter.Run(inputs);
  }
};

void ExpectClose(const std::vector<Tensor>& got,
                 const std::vector<Tensor>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
    for (int64_t k = 0; k < want[i].NumElements(); ++k) {
      const double g = got[i].GetAsDouble(k), w = want[i].GetAsDouble(k);
      ASSERT_LE(std::fabs(g - w), tolerance * std::max(1.0, std::fabs(w)))
          << "output " << i << " element " << k << ": got " << g << ", want "
          << w;
    }
  }
}

TEST_F(PassSemanticsTest, EveryBuiltinPassIsCovered) {
  std::set<std::string> covered;
  for (const PassCase& c : Cases()) covered.insert(c.pass);
  for (const passes::PassInfo* info : passes::PassRegistry::Global().All()) {
    EXPECT_TRUE(covered.contains(info->name))
        << "pass '" << info->name << "' has no semantic-preservation case";
  }
}

TEST_F(PassSemanticsTest, PassesKeepWhatModelsCompute) {
  const std::map<std::string, const char*> models = {
      {"mlp", kMlp}, {"convnet", kConvNet}, {"chain", kChain}};
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (const PassCase& c : Cases()) {
    bool changed_any = false;
    for (const auto& [model_name, text] : models) {
      SCOPED_TRACE(c.pipeline + " on " + model_name);
      Module original = Load(text);
      std::vector<Tensor> inputs = RandomInputs(original, seed);
      absl::StatusOr<std::vector<Tensor>> want = Run(original, inputs);
      ASSERT_TRUE(want.ok()) << want.status();

      Module optimized = original.Clone();
      absl::StatusOr<passes::Pipeline> pipeline =
          passes::Pipeline::FromString(c.pipeline);
      ASSERT_TRUE(pipeline.ok()) << pipeline.status();
      passes::PassContext ctx;
      ctx.constant_evaluator = interp::EvaluateNode;
      absl::StatusOr<bool> changed = pipeline->Run(optimized, ctx);
      ASSERT_TRUE(changed.ok()) << changed.status();
      changed_any |= *changed;
      absl::StatusOr<std::vector<Tensor>> got = Run(optimized, inputs);
      ASSERT_TRUE(got.ok()) << got.status() << "\n" << PrintModule(optimized);
      ExpectClose(*got, *want, c.tolerance);
    }
    if (c.must_change) {
      EXPECT_TRUE(changed_any) << c.pipeline << " changed none of the models";
    }
  }
}

// Passes one after another, as a user's pipeline would run them.
TEST_F(PassSemanticsTest, FullPipeline) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (const char* text : {kMlp, kConvNet, kChain}) {
    Module original = Load(text);
    std::vector<Tensor> inputs = RandomInputs(original, seed);
    absl::StatusOr<std::vector<Tensor>> want = Run(original, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    Module optimized = original.Clone();
    absl::StatusOr<passes::Pipeline> pipeline = passes::Pipeline::FromString(
        "canonicalize,fold-batchnorm,fold-constants,cse,fuse-linear-activation,"
        "decompose,canonicalize,dce,fuse-elementwise,shape-prop");
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    passes::PassContext ctx;
    ctx.constant_evaluator = interp::EvaluateNode;
    ASSERT_TRUE(pipeline->Run(optimized, ctx).ok());
    absl::StatusOr<std::vector<Tensor>> got = Run(optimized, inputs);
    ASSERT_TRUE(got.ok()) << got.status() << "\n" << PrintModule(optimized);
    ExpectClose(*got, *want, 1e-4);
  }
}

}  // namespace
}  // namespace graft::interp_test
