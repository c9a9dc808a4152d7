#include "cli/input_binding.h"

#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "serialize/npy.h"

namespace graft::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorType Type(DType dtype, Shape shape) { return TensorType{dtype, shape}; }

ValueSignature Placeholder(std::string name, std::optional<TensorType> type) {
  return ValueSignature{std::move(name), std::move(type)};
}

GivenInput Given(std::string name, Tensor tensor) {
  return GivenInput{name, name + ".npy", std::move(tensor)};
}

TEST(ParseInputSpecTest, SplitsAtTheFirstEquals) {
  absl::StatusOr<InputSpec> spec = ParseInputSpec("x=dir/a=b.npy");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "x");
  EXPECT_EQ(spec->path, "dir/a=b.npy");
}

TEST(ParseInputSpecTest, RefusesMissingParts) {
  for (const char* text : {"x", "=a.npy", "x=", ""}) {
    absl::StatusOr<InputSpec> spec = ParseInputSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr("NAME=FILE.npy"));
  }
}

TEST(BindInputsTest, PutsGivenInputsInPlaceholderOrder) {
  const Tensor a = Tensor::FromVector<float>(DType::kF32, {2}, {1, 2});
  const Tensor b = Tensor::FromVector<int>(DType::kI32, {}, {7});
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2})),
      Placeholder("y", Type(DType::kI32, {}))};
  absl::StatusOr<BoundInputs> bound =
      BindInputs(placeholders, {Given("y", b), Given("x", a)}, std::nullopt);
  ASSERT_TRUE(bound.ok()) << bound.status();
  ASSERT_EQ(bound->tensors.size(), 2u);
  EXPECT_TRUE(bound->tensors[0].BitwiseEqual(a));
  EXPECT_TRUE(bound->tensors[1].BitwiseEqual(b));
  EXPECT_THAT(bound->sources, ElementsAre("x.npy", "y.npy"));
}

TEST(BindInputsTest, UnknownNameListsThePlaceholders) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2})),
      Placeholder("y", Type(DType::kF32, {2}))};
  absl::StatusOr<BoundInputs> bound = BindInputs(
      placeholders, {Given("z", Tensor(DType::kF32, {2}))}, std::nullopt);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "input 'z' (z.npy) matches no placeholder; the model has x, y");
}

TEST(BindInputsTest, DtypeMismatchNamesPlaceholderAndFile) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2, 3}))};
  absl::StatusOr<BoundInputs> bound = BindInputs(
      placeholders, {Given("x", Tensor(DType::kF64, {2, 3}))}, std::nullopt);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "input 'x' (x.npy) is f64[2,3], but placeholder x is f32[2,3]: "
            "dtype f64, expected f32");
}

TEST(BindInputsTest, RankAndDimMismatches) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2, 3}))};
  absl::StatusOr<BoundInputs> rank = BindInputs(
      placeholders, {Given("x", Tensor(DType::kF32, {6}))}, std::nullopt);
  ASSERT_FALSE(rank.ok());
  EXPECT_THAT(rank.status().message(),
              HasSubstr("is f32[6], but placeholder x is f32[2,3]: rank 1, "
                        "expected 2"));
  absl::StatusOr<BoundInputs> dim = BindInputs(
      placeholders, {Given("x", Tensor(DType::kF32, {2, 4}))}, std::nullopt);
  ASSERT_FALSE(dim.ok());
  EXPECT_THAT(dim.status().message(), HasSubstr("dim 1 is 4, expected 3"));
}

TEST(BindInputsTest, SymbolicDimsAcceptAnySizeButBindConsistently) {
  const Dim batch = Dim::Symbol("batch");
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {batch, 3})),
      Placeholder("y", Type(DType::kF32, {batch}))};
  absl::StatusOr<BoundInputs> ok =
      BindInputs(placeholders,
                 {Given("x", Tensor(DType::kF32, {5, 3})),
                  Given("y", Tensor(DType::kF32, {5}))},
                 std::nullopt);
  EXPECT_TRUE(ok.ok()) << ok.status();
  absl::StatusOr<BoundInputs> conflict =
      BindInputs(placeholders,
                 {Given("x", Tensor(DType::kF32, {5, 3})),
                  Given("y", Tensor(DType::kF32, {4}))},
                 std::nullopt);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().message(),
            "input 'y' (y.npy): dim 0 (batch) is 4, but input 'x' (x.npy) "
            "binds batch to 5");
}

TEST(BindInputsTest, DerivedSymbolsMustMatchTheirProduct) {
  const Dim batch = Dim::Symbol("batch");
  const Dim twice = Dim::Symbol("2*batch");
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {batch})),
      Placeholder("y", Type(DType::kF32, {twice}))};
  EXPECT_TRUE(BindInputs(placeholders,
                         {Given("x", Tensor(DType::kF32, {3})),
                          Given("y", Tensor(DType::kF32, {6}))},
                         std::nullopt)
                  .ok());
  absl::StatusOr<BoundInputs> bad =
      BindInputs(placeholders,
                 {Given("x", Tensor(DType::kF32, {3})),
                  Given("y", Tensor(DType::kF32, {7}))},
                 std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("dim 0 (2*batch) is 7, but the sizes the other "
                        "inputs bind make 2*batch 6"));
}

TEST(BindInputsTest, MissingInputsAreListed) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2})),
      Placeholder("y", Type(DType::kF32, {2})),
      Placeholder("z", Type(DType::kF32, {2}))};
  absl::StatusOr<BoundInputs> bound = BindInputs(
      placeholders, {Given("y", Tensor(DType::kF32, {2}))}, std::nullopt);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "no input for placeholders x, z: give --input NAME=FILE.npy for "
            "each, or --random-inputs");
}

TEST(BindInputsTest, RandomInputsUseSeedPlusPlaceholderIndex) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {2})),
      Placeholder("y", Type(DType::kI32, {3, 2}))};
  const Tensor x = Tensor::FromVector<float>(DType::kF32, {2}, {4, 5});
  absl::StatusOr<BoundInputs> bound =
      BindInputs(placeholders, {Given("x", x)}, uint64_t{7});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_TRUE(bound->tensors[0].BitwiseEqual(x));
  // y is placeholder 1: seed 7 + 1.
  EXPECT_TRUE(
      bound->tensors[1].BitwiseEqual(RandomTensor(DType::kI32, {3, 2}, 8)));
  EXPECT_THAT(bound->sources, ElementsAre("x.npy", "random(seed=8)"));
  // The same seed gives the same inputs; another seed others.
  absl::StatusOr<BoundInputs> again = BindInputs(placeholders, {}, uint64_t{7});
  absl::StatusOr<BoundInputs> other = BindInputs(placeholders, {}, uint64_t{8});
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_TRUE(again->tensors[1].BitwiseEqual(bound->tensors[1]));
  EXPECT_FALSE(other->tensors[1].BitwiseEqual(bound->tensors[1]));
}

TEST(BindInputsTest, RandomInputsTakeSymbolSizesFromGivenInputs) {
  const Dim batch = Dim::Symbol("batch");
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {batch, 3})),
      Placeholder("y", Type(DType::kF32, {batch, 2}))};
  absl::StatusOr<BoundInputs> bound = BindInputs(
      placeholders, {Given("x", Tensor(DType::kF32, {4, 3}))}, uint64_t{0});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_THAT(bound->tensors[1].dims(), ElementsAre(4, 2));
}

TEST(BindInputsTest, RandomInputsNeedStaticTypes) {
  std::vector<ValueSignature> symbolic = {
      Placeholder("x", Type(DType::kF32, {Dim::Symbol("batch"), 3}))};
  absl::StatusOr<BoundInputs> bound = BindInputs(symbolic, {}, uint64_t{0});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "placeholder x is f32[batch,3]: dim 0 is symbolic (batch) and no "
            "given input fixes its size, so a random input cannot be made for "
            "it; give its size with --dim batch=SIZE, or give it a tensor "
            "with --input x=FILE.npy");
  std::vector<ValueSignature> untyped = {Placeholder("x", std::nullopt)};
  bound = BindInputs(untyped, {}, uint64_t{0});
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(),
              AllOf(HasSubstr("placeholder x has no type"),
                    HasSubstr("--input x=FILE.npy")));
}

TEST(BindInputsTest, DimsSizeSymbolicRandomInputs) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kF32, {Dim::Symbol("batch"), 3})),
      Placeholder("y", Type(DType::kF32, {Dim::Symbol("batch")}))};
  absl::StatusOr<SymbolBindings> dims = ParseDims({"batch=5"});
  ASSERT_TRUE(dims.ok()) << dims.status();
  absl::StatusOr<BoundInputs> bound =
      BindInputs(placeholders, {}, uint64_t{0}, *dims);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_THAT(bound->tensors[0].dims(), ElementsAre(5, 3));
  EXPECT_THAT(bound->tensors[1].dims(), ElementsAre(5));
  // A given input must agree with --dim.
  bound = BindInputs(placeholders, {Given("y", Tensor(DType::kF32, {4}))},
                     uint64_t{0}, *dims);
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(),
              AllOf(HasSubstr("is 4"), HasSubstr("--dim batch=5")));
  // An unknown symbol is named with the known ones.
  dims = ParseDims({"bacth=5"});
  ASSERT_TRUE(dims.ok());
  bound = BindInputs(placeholders, {}, uint64_t{0}, *dims);
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(),
              AllOf(HasSubstr("no input has a dim named bacth"),
                    HasSubstr("symbolic dims: batch")));
}

TEST(ParseDimsTest, RejectsMalformedAndRepeatedDims) {
  for (const char* bad : {"batch", "=3", "batch=", "batch=-1", "batch=x"}) {
    EXPECT_FALSE(ParseDims({bad}).ok()) << bad;
  }
  absl::StatusOr<SymbolBindings> twice = ParseDims({"b=1", "b=2"});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("given twice"));
}

TEST(BindInputsTest, UntypedPlaceholdersAcceptAnyTensor) {
  std::vector<ValueSignature> placeholders = {Placeholder("x", std::nullopt)};
  absl::StatusOr<BoundInputs> bound = BindInputs(
      placeholders, {Given("x", Tensor(DType::kI8, {3, 1}))}, std::nullopt);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(bound->tensors[0].TypeString(), "i8[3,1]");
}

TEST(BindInputsTest, ExactF32FilesFitBFloat16Placeholders) {
  std::vector<ValueSignature> placeholders = {
      Placeholder("x", Type(DType::kBF16, {2}))};
  // 1.5 and -0.25 are bf16 values; 1 + 2^-10 is not (bf16 has 7 fraction
  // bits).
  absl::StatusOr<BoundInputs> exact = BindInputs(
      placeholders,
      {Given("x", Tensor::FromVector<float>(DType::kF32, {2}, {1.5f, -0.25f}))},
      std::nullopt);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->tensors[0].dtype(), DType::kBF16);
  EXPECT_EQ(exact->tensors[0].GetAsDouble(0), 1.5);
  EXPECT_EQ(exact->tensors[0].GetAsDouble(1), -0.25);
  absl::StatusOr<BoundInputs> inexact = BindInputs(
      placeholders,
      {Given("x", Tensor::FromVector<float>(DType::kF32, {2},
                                            {1.0f + 1.0f / 1024, 0.0f}))},
      std::nullopt);
  ASSERT_FALSE(inexact.ok());
  EXPECT_THAT(inexact.status().message(),
              HasSubstr("dtype f32, expected bf16"));
}

class ReadGivenInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "input_binding_test_XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  std::string dir_;
};

TEST_F(ReadGivenInputsTest, ReadsEachFile) {
  const Tensor t = Tensor::FromVector<int>(DType::kI64, {3}, {1, -2, 3});
  const std::string path = dir_ + "/a.npy";
  ASSERT_TRUE(WriteNpy(path, t).ok());
  absl::StatusOr<std::vector<GivenInput>> inputs =
      ReadGivenInputs({std::string("x=") + path});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ((*inputs)[0].name, "x");
  EXPECT_EQ((*inputs)[0].source, path);
  EXPECT_TRUE((*inputs)[0].tensor.BitwiseEqual(t));
}

TEST_F(ReadGivenInputsTest, ErrorsNameTheInputAndFile) {
  const std::string missing = dir_ + "/missing.npy";
  absl::StatusOr<std::vector<GivenInput>> inputs =
      ReadGivenInputs({"x=" + missing});
  ASSERT_FALSE(inputs.ok());
  EXPECT_THAT(inputs.status().message(),
              AllOf(HasSubstr("input 'x': "), HasSubstr(missing)));

  const std::string path = dir_ + "/a.npy";
  ASSERT_TRUE(WriteNpy(path, Tensor(DType::kF32, {1})).ok());
  inputs = ReadGivenInputs({"x=" + path, "x=" + path});
  ASSERT_FALSE(inputs.ok());
  EXPECT_THAT(inputs.status().message(), HasSubstr("input 'x' is given twice"));
}

}  // namespace
}  // namespace graft::cli
