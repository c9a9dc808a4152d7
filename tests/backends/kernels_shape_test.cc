// Shape, data-movement, creation and structural kernels.

#include <limits>

#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

Tensor M23() { return F32({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(ShapeKernels, Reshape) {
  GRAFT_ASSERT_OK_AND_ASSIGN(a, RunUnary("reshape", M23(), {Ints({3, 2})}));
  ExpectTensor(a, DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(b, RunUnary("reshape", M23(), {Ints({-1})}));
  ExpectTensor(b, DType::kF32, {6}, {1, 2, 3, 4, 5, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(c, RunUnary("reshape", M23(), {Ints({1, -1, 2})}));
  ExpectTensor(c, DType::kF32, {1, 3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(RunUnary("reshape", M23(), {Ints({-1, -1})}).ok());
  absl::StatusOr<Tensor> bad = RunUnary("reshape", M23(), {Ints({4, 2})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node %reshape (reshape)"));
  EXPECT_FALSE(RunUnary("reshape", F32({0, 2}, {}), {Ints({0, -1})}).ok());
}

TEST(ShapeKernels, PermuteAndTranspose) {
  // in[i][j][k] = 100 i + 10 j + k; permute(2, 0, 1) puts k first.
  std::vector<double> in, expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) in.push_back(100 * i + 10 * j + k);
    }
  }
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) expected.push_back(100 * i + 10 * j + k);
    }
  }
  GRAFT_ASSERT_OK_AND_ASSIGN(
      p, RunUnary("permute", F32({2, 3, 4}, in), {Ints({2, 0, 1})}));
  ExpectTensor(p, DType::kF32, {4, 2, 3}, expected);
  GRAFT_ASSERT_OK_AND_ASSIGN(t, RunUnary("transpose", M23(), {0, 1}));
  ExpectTensor(t, DType::kF32, {3, 2}, {1, 4, 2, 5, 3, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      t16,
      RunUnary("transpose", T(DType::kF16, {2, 2}, {1, 2, 3, 4}), {-1, -2}));
  ExpectTensor(t16, DType::kF16, {2, 2}, {1, 3, 2, 4});
  EXPECT_FALSE(RunUnary("permute", M23(), {Ints({0, 0})}).ok());
  EXPECT_FALSE(RunUnary("permute", M23(), {Ints({0})}).ok());
}

TEST(ShapeKernels, FlattenSqueezeUnsqueeze) {
  const Tensor x = F32({2, 3, 4}, std::vector<double>(24, 1));
  GRAFT_ASSERT_OK_AND_ASSIGN(f1, RunUnary("flatten", x, {1}));
  EXPECT_EQ(f1.dims(), (std::vector<int64_t>{2, 12}));
  GRAFT_ASSERT_OK_AND_ASSIGN(f0, RunUnary("flatten", x));
  EXPECT_EQ(f0.dims(), (std::vector<int64_t>{24}));
  GRAFT_ASSERT_OK_AND_ASSIGN(fs, RunUnary("flatten", F32({}, {5})));
  ExpectTensor(fs, DType::kF32, {1}, {5});
  EXPECT_FALSE(RunUnary("flatten", x, {2, 1}).ok());

  const Tensor y = F32({1, 3, 1}, {1, 2, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(s_all, RunUnary("squeeze", y));
  ExpectTensor(s_all, DType::kF32, {3}, {1, 2, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(s0, RunUnary("squeeze", y, {0}));
  EXPECT_EQ(s0.dims(), (std::vector<int64_t>{3, 1}));
  GRAFT_ASSERT_OK_AND_ASSIGN(s1, RunUnary("squeeze", y, {1}));  // Size 3: kept.
  EXPECT_EQ(s1.dims(), (std::vector<int64_t>{1, 3, 1}));
  GRAFT_ASSERT_OK_AND_ASSIGN(u0,
                             RunUnary("unsqueeze", F32({3}, {1, 2, 3}), {0}));
  EXPECT_EQ(u0.dims(), (std::vector<int64_t>{1, 3}));
  GRAFT_ASSERT_OK_AND_ASSIGN(u1,
                             RunUnary("unsqueeze", F32({3}, {1, 2, 3}), {-1}));
  ExpectTensor(u1, DType::kF32, {3, 1}, {1, 2, 3});
  EXPECT_FALSE(RunUnary("unsqueeze", F32({3}, {1, 2, 3}), {2}).ok());
}

TEST(ShapeKernels, Expand) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      e, RunUnary("expand", F32({3, 1}, {1, 2, 3}), {Ints({2, 3, 2})}));
  ExpectTensor(e, DType::kF32, {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      keep, RunUnary("expand", F32({3, 1}, {1, 2, 3}), {Ints({-1, 2})}));
  ExpectTensor(keep, DType::kF32, {3, 2}, {1, 1, 2, 2, 3, 3});
  absl::StatusOr<Tensor> bad =
      RunUnary("expand", F32({3, 1}, {1, 2, 3}), {Ints({4, 1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("cannot expand"));
}

TEST(ShapeKernels, Concat) {
  {
    OpRunner r;
    Argument list = ArgumentList{r.In(F32({1, 2}, {1, 2})),
                                 r.In(F32({2, 2}, {3, 4, 5, 6}))};
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("concat", {list}));
    ExpectTensor(out, DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  }
  {  // Along dim 1, with dtype promotion i32 + f32 -> f32.
    OpRunner r;
    Argument list = ArgumentList{r.In(T(DType::kI32, {2, 1}, {1, 2})),
                                 r.In(F32({2, 2}, {3.5, 4, 5, 6}))};
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("concat", {list, -1}));
    ExpectTensor(out, DType::kF32, {2, 3}, {1, 3.5, 4, 2, 5, 6});
  }
  {
    OpRunner r;
    Argument list =
        ArgumentList{r.In(F32({1, 2}, {1, 2})), r.In(F32({1, 3}, {3, 4, 5}))};
    absl::StatusOr<Tensor> bad = r.Run("concat", {list});
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("node %concat (concat)"));
  }
}

TEST(ShapeKernels, SplitIntoChunksAndSections) {
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        parts, r.RunAll("split", {r.In(F32({5}, {0, 1, 2, 3, 4})), 2}));
    ASSERT_EQ(parts.size(), 3u);
    ExpectTensor(parts[0], DType::kF32, {2}, {0, 1});
    ExpectTensor(parts[1], DType::kF32, {2}, {2, 3});
    ExpectTensor(parts[2], DType::kF32, {1}, {4});
  }
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        parts, r.RunAll("split", {r.In(M23()), Ints({1, 2}), 1}));
    ASSERT_EQ(parts.size(), 2u);
    ExpectTensor(parts[0], DType::kF32, {2, 1}, {1, 4});
    ExpectTensor(parts[1], DType::kF32, {2, 2}, {2, 3, 5, 6});
  }
  {
    OpRunner r;
    absl::StatusOr<std::vector<Tensor>> bad =
        r.RunAll("split", {r.In(M23()), Ints({1, 1}), 1});
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("add up to"));
  }
  {  // Huge sizes and chunks neither overflow nor crash.
    OpRunner r;
    EXPECT_FALSE(
        r.RunAll("split", {r.In(M23()),
                           Ints({std::numeric_limits<int64_t>::max(), 2}), 1})
            .ok());
    OpRunner r2;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        one, r2.RunAll("split",
                       {r2.In(M23()), std::numeric_limits<int64_t>::max(), 1}));
    ASSERT_EQ(one.size(), 1u);
    ExpectTensor(one[0], DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  }
}

TEST(ShapeKernels, SplitThenGetitem) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", M23().type());
  Node* split = g.CallFunction("split", {x, 1, 1});
  Node* second = g.CallFunction("getitem", {split, 1});
  Node* last = g.CallFunction("getitem", {split, -1});
  Node* sum = g.CallFunction("add", {second, last});
  g.Output(sum);
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({M23()}));
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 1}, {2 + 3, 5 + 6});

  Module bad;
  Node* bx = bad.graph().Placeholder("x", M23().type());
  Node* bs = bad.graph().CallFunction("split", {bx, 1, 1});
  bad.graph().Output(bad.graph().CallFunction("getitem", {bs, 3}));
  interp::Interpreter bad_interp(bad);
  absl::StatusOr<std::vector<Tensor>> err = bad_interp.Run({M23()});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("node %getitem (getitem)"));
  EXPECT_THAT(err.status().message(), HasSubstr("out of range"));
}

TEST(ShapeKernels, Slice) {
  const Tensor x = F32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(a, RunUnary("slice", x, {0, 2, 8, 3}));
  ExpectTensor(a, DType::kF32, {2}, {2, 5});
  GRAFT_ASSERT_OK_AND_ASSIGN(b, RunUnary("slice", x, {}, {{"start", -3}}));
  ExpectTensor(b, DType::kF32, {3}, {7, 8, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      c, RunUnary("slice", x, {}, {{"end", 100}, {"step", 4}}));
  ExpectTensor(c, DType::kF32, {3}, {0, 4, 8});
  GRAFT_ASSERT_OK_AND_ASSIGN(d, RunUnary("slice", x, {0, 7, 3}));
  ExpectTensor(d, DType::kF32, {0}, {});
  GRAFT_ASSERT_OK_AND_ASSIGN(e, RunUnary("slice", M23(), {1, 1}));
  ExpectTensor(e, DType::kF32, {2, 2}, {2, 3, 5, 6});
  EXPECT_FALSE(RunUnary("slice", x, {}, {{"step", 0}}).ok());
  // A huge step takes the first element only (no overflow).
  GRAFT_ASSERT_OK_AND_ASSIGN(
      huge, RunUnary("slice", x, {0, 1},
                     {{"step", std::numeric_limits<int64_t>::max()}}));
  ExpectTensor(huge, DType::kF32, {1}, {1});
}

// torch.scatter's and scatter_reduce's documented behaviour: src written
// along dim at index, in index order; reductions combine with what is
// there; a negative index counts from the end; one out of range fails.
TEST(ShapeKernels, Scatter) {
  const Tensor zeros = F32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor index = I64({2, 3}, {0, 1, 0, 3, -1, 3});
  const Tensor src = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    const char* reduce;
    Tensor input;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"none", zeros, {3, 2, 0, 0, 0, 0, 0, 6}},
      {"add", zeros, {4, 2, 0, 0, 0, 0, 0, 15}},
      {"mul", F32({2, 4}, {2, 2, 2, 2, 2, 2, 2, 2}), {6, 4, 2, 2, 2, 2, 2, 240}},
      {"max", F32({2, 4}, {2, 2, 2, 2, 2, 2, 2, 5.5}), {3, 2, 2, 2, 2, 2, 2, 6}},
      {"min", F32({2, 4}, {2, 2, 2, 2, 2, 2, 2, 5.5}), {1, 2, 2, 2, 2, 2, 2, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reduce);
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("scatter", {r.In(c.input), 1, r.In(index), r.In(src), c.reduce}));
    ExpectTensor(out, DType::kF32, {2, 4}, c.want);
  }
  OpRunner ints;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      counts, ints.Run("scatter", {ints.In(T(DType::kI64, {3}, {0, 0, 0})), 0, ints.In(I64({4}, {2, 0, 2, 2})),
                                   ints.In(T(DType::kI64, {4}, {1, 1, 1, 1})), "add"}));
  ExpectTensor(counts, DType::kI64, {3}, {1, 0, 3});
  // Sums stay wide until the end: 300 ones in bf16 (whose integers are
  // exact to 256 only), and i64 products wrap rather than overflow.
  OpRunner wide;
  Tensor ones(DType::kBF16, {300});
  for (int64_t i = 0; i < 300; ++i) ones.SetFromDouble(i, 1);
  GRAFT_ASSERT_OK_AND_ASSIGN(
      degree, wide.Run("scatter", {wide.In(Tensor(DType::kBF16, {1})), 0, wide.In(I64({300}, std::vector<double>(300, 0))),
                                   wide.In(ones), "add"}));
  ExpectTensor(degree, DType::kBF16, {1}, {300});
  OpRunner wrap;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      wrapped, wrap.Run("scatter", {wrap.In(T(DType::kI64, {1}, {int64_t{1} << 62})), 0, wrap.In(I64({1}, {0})),
                                    wrap.In(T(DType::kI64, {1}, {4})), "mul"}));
  ExpectTensor(wrapped, DType::kI64, {1}, {0});
  OpRunner bad;
  absl::StatusOr<Tensor> err =
      bad.Run("scatter", {bad.In(zeros), 1, bad.In(I64({1, 1}, {4})), bad.In(F32({1, 1}, {1})), "add"});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("index 4 at position 0 is out of range for dim 1 of size 4"));
}

// ONNX ScatterND's examples: index tuples naming rows (a slice) or
// elements, with and without a reduction.
TEST(ShapeKernels, ScatterNd) {
  OpRunner rows;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      by_row, rows.Run("scatter_nd", {rows.In(M23()), rows.In(I64({2, 1}, {-1, 1})),
                                      rows.In(F32({2, 3}, {7, 8, 9, 10, 20, 30})), "add"}));
  ExpectTensor(by_row, DType::kF32, {2, 3}, {1, 2, 3, 21, 33, 45});
  OpRunner elements;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      by_element, elements.Run("scatter_nd", {elements.In(M23()), elements.In(I64({2, 2}, {0, 2, 1, 0})),
                                              elements.In(F32({2}, {-1, -2}))}));
  ExpectTensor(by_element, DType::kF32, {2, 3}, {1, 2, -1, -2, 5, 6});
  OpRunner bad;
  absl::StatusOr<Tensor> err =
      bad.Run("scatter_nd", {bad.In(M23()), bad.In(I64({1, 2}, {2, 0})), bad.In(F32({1}, {1}))});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("index 2 of tuple 0 is out of range for dim 0 of size 2"));
}

TEST(ShapeKernels, Gather) {
  // torch.gather's documented example.
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, r.Run("gather", {r.In(F32({2, 2}, {1, 2, 3, 4})), 1,
                            r.In(I64({2, 2}, {0, 0, 1, 0}))}));
  ExpectTensor(out, DType::kF32, {2, 2}, {1, 1, 4, 3});
  OpRunner r0;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out0, r0.Run("gather", {r0.In(M23()), 0,
                              r0.In(T(DType::kI32, {1, 3}, {1, 0, 1}))}));
  ExpectTensor(out0, DType::kF32, {1, 3}, {4, 2, 6});
  OpRunner bad;
  absl::StatusOr<Tensor> err =
      bad.Run("gather",
              {bad.In(F32({2, 2}, {1, 2, 3, 4})), 1, bad.In(I64({1, 1}, {2}))});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("node %gather (gather)"));
  EXPECT_THAT(err.status().message(), HasSubstr("index 2"));
  OpRunner neg;
  EXPECT_FALSE(
      neg.Run("gather", {neg.In(F32({2}, {1, 2})), 0, neg.In(I64({1}, {-1}))})
          .ok());
  OpRunner fidx;
  EXPECT_FALSE(
      fidx.Run("gather", {fidx.In(F32({2}, {1, 2})), 0, fidx.In(F32({1}, {0}))})
          .ok());
}

TEST(ShapeKernels, IndexSelectAndEmbedding) {
  const Tensor x = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("index_select", {r.In(x), 0, r.In(I64({2}, {2, 0}))}));
    ExpectTensor(out, DType::kF32, {2, 2}, {5, 6, 1, 2});
  }
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("index_select", {r.In(x), 1, r.In(I64({1}, {1}))}));
    ExpectTensor(out, DType::kF32, {3, 1}, {2, 4, 6});
  }
  {
    OpRunner r;
    absl::StatusOr<Tensor> err =
        r.Run("index_select", {r.In(x), 0, r.In(I64({1}, {3}))});
    ASSERT_FALSE(err.ok());
    EXPECT_THAT(err.status().message(),
                HasSubstr("node %index_select (index_select)"));
  }
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("embedding", {r.In(I64({1, 2}, {2, 0})),
                                 r.In(F32({3, 2}, {0, 1, 10, 11, 20, 21}))}));
    ExpectTensor(out, DType::kF32, {1, 2, 2}, {20, 21, 0, 1});
  }
  {
    OpRunner r;
    absl::StatusOr<Tensor> err = r.Run(
        "embedding",
        {r.In(I64({1}, {-1})), r.In(F32({3, 2}, {0, 1, 10, 11, 20, 21}))});
    ASSERT_FALSE(err.ok());
    EXPECT_THAT(err.status().message(),
                HasSubstr("node %embedding (embedding)"));
  }
}

TEST(ShapeKernels, PadModes) {
  const Tensor x = F32({1, 3}, {1, 2, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      c, RunUnary("pad", x, {Ints({2, 1})}, {{"value", 9.0}}));
  ExpectTensor(c, DType::kF32, {1, 6}, {9, 9, 1, 2, 3, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(r, RunUnary("pad", x, {Ints({2, 2}), "reflect"}));
  ExpectTensor(r, DType::kF32, {1, 7}, {3, 2, 1, 2, 3, 2, 1});
  GRAFT_ASSERT_OK_AND_ASSIGN(p,
                             RunUnary("pad", x, {Ints({2, 1}), "replicate"}));
  ExpectTensor(p, DType::kF32, {1, 6}, {1, 1, 1, 2, 3, 3});
  // Two dims: the last gets (1, 1), the first (1, 0).
  GRAFT_ASSERT_OK_AND_ASSIGN(
      two, RunUnary("pad", F32({2, 2}, {1, 2, 3, 4}), {Ints({1, 1, 1, 0})}));
  ExpectTensor(two, DType::kF32, {3, 4}, {0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0});
  // Reflect on both dims at once.
  GRAFT_ASSERT_OK_AND_ASSIGN(refl2, RunUnary("pad", F32({2, 2}, {1, 2, 3, 4}),
                                             {Ints({1, 0, 1, 0}), "reflect"}));
  ExpectTensor(refl2, DType::kF32, {3, 3}, {4, 3, 4, 2, 1, 2, 4, 3, 4});
  // Negative constant padding crops.
  GRAFT_ASSERT_OK_AND_ASSIGN(crop, RunUnary("pad", x, {Ints({-1, 0})}));
  ExpectTensor(crop, DType::kF32, {1, 2}, {2, 3});
  // Integer tensors take the value converted.
  GRAFT_ASSERT_OK_AND_ASSIGN(ints, RunUnary("pad", I64({2}, {5, 6}),
                                            {Ints({1, 0})}, {{"value", 7.0}}));
  ExpectTensor(ints, DType::kI64, {3}, {7, 5, 6});
  EXPECT_FALSE(RunUnary("pad", x, {Ints({3, 0}), "reflect"}).ok());
  EXPECT_FALSE(RunUnary("pad", x, {Ints({1})}).ok());
  EXPECT_FALSE(RunUnary("pad", x, {Ints({1, 1}), "circular"}).ok());
  EXPECT_FALSE(
      RunUnary("pad", x, {Ints({std::numeric_limits<int64_t>::min(), 0})})
          .ok());
  EXPECT_FALSE(
      RunUnary("pad", x, {Ints({std::numeric_limits<int64_t>::max(), 1})})
          .ok());
}

TEST(CreationKernels, FullAndZeros) {
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(f, r.Run("full", {Ints({2, 2}), 1.5}));
  ExpectTensor(f, DType::kF32, {2, 2}, {1.5, 1.5, 1.5, 1.5});
  OpRunner r2;
  GRAFT_ASSERT_OK_AND_ASSIGN(i, r2.Run("full", {Ints({3}), 7, DType::kI32}));
  ExpectTensor(i, DType::kI32, {3}, {7, 7, 7});
  OpRunner r3;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      b, r3.Run("full", {Ints({2}), true}, {{"dtype", DType::kBool}}));
  ExpectTensor(b, DType::kBool, {2}, {1, 1});
  OpRunner r4;
  GRAFT_ASSERT_OK_AND_ASSIGN(z, r4.Run("zeros", {Ints({2, 0})}));
  ExpectTensor(z, DType::kF32, {2, 0}, {});
  OpRunner r5;
  GRAFT_ASSERT_OK_AND_ASSIGN(zi, r5.Run("zeros", {Ints({2}), DType::kI64}));
  ExpectTensor(zi, DType::kI64, {2}, {0, 0});
  OpRunner r6;
  EXPECT_FALSE(r6.Run("zeros", {Ints({-1})}).ok());
  OpRunner r7;
  EXPECT_FALSE(
      r7.Run("zeros", {Ints({int64_t{1} << 40, int64_t{1} << 40})}).ok());
}

TEST(CreationKernels, Arange) {
  struct Case {
    std::vector<Argument> args;
    Kwargs kwargs;
    DType dtype;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {{0, 5}, {}, DType::kI64, {0, 1, 2, 3, 4}},
      {{0, 1, 0.25}, {}, DType::kF32, {0, 0.25, 0.5, 0.75}},
      {{5, 0, -2}, {}, DType::kI64, {5, 3, 1}},
      {{0, 10, 3}, {{"dtype", DType::kF64}}, DType::kF64, {0, 3, 6, 9}},
      {{1.5, 3}, {}, DType::kF32, {1.5, 2.5}},
      {{0, 0}, {}, DType::kI64, {}},
  };
  for (const Case& c : cases) {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("arange", c.args, c.kwargs));
    ExpectTensor(out, c.dtype, {static_cast<int64_t>(c.values.size())},
                 c.values);
  }
  OpRunner zero_step;
  EXPECT_FALSE(zero_step.Run("arange", {0, 5, 0}).ok());
  OpRunner wrong_sign;
  absl::StatusOr<Tensor> err = wrong_sign.Run("arange", {0, 5, -1});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("node %arange (arange)"));
}

TEST(StructureKernels, IdentityAndDropout) {
  GRAFT_ASSERT_OK_AND_ASSIGN(i, RunUnary("identity", M23()));
  ExpectTensor(i, DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(d, RunUnary("dropout", M23(), {0.5}));
  ExpectTensor(d, DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<Tensor> train = RunUnary("dropout", M23(), {0.5, true});
  ASSERT_FALSE(train.ok());
  EXPECT_THAT(train.status().message(), HasSubstr("training"));
  absl::StatusOr<Tensor> not_tuple = RunUnary("getitem", M23(), {0});
  ASSERT_FALSE(not_tuple.ok());
  EXPECT_THAT(not_tuple.status().message(), HasSubstr("not a tuple"));
}

}  // namespace
}  // namespace graft::interp_test
