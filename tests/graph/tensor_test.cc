#include "graph/tensor.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "graph/dtype.h"
#include "graph/shape.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::ElementsAre;

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- Storage ----

TEST(StorageTest, AllocationsAreAlignedAndZeroed) {
  for (size_t bytes : {0, 1, 3, 63, 64, 65, 1000, 4096 + 7}) {
    std::shared_ptr<Storage> s = Storage::Allocate(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u) << bytes;
    EXPECT_EQ(s->size(), bytes);
    EXPECT_TRUE(s->owned());
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(s->data()[i], std::byte{0});
  }
  // Tensors of every dtype get aligned data too.
  for (int d = 0; d < kNumDTypes; ++d) {
    Tensor t(static_cast<DType>(d), {3, 5});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

TEST(StorageTest, WrapKeepsItsOwnerAliveUntilTheLastTensorGoes) {
  auto buffer =
      std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  std::weak_ptr<std::vector<float>> watch = buffer;
  float* data = buffer->data();
  Tensor a;
  {
    std::shared_ptr<Storage> s =
        Storage::Wrap(data, 4 * sizeof(float), std::move(buffer));
    EXPECT_FALSE(s->owned());
    EXPECT_EQ(s->data(), reinterpret_cast<std::byte*>(data));
    a = Tensor(DType::kF32, {2, 2}, s);
  }
  EXPECT_FALSE(watch.expired());  // The tensor holds the storage.
  Tensor b = a.Reshaped({4});
  Tensor view(DType::kF32, {2}, a.storage(), 2 * sizeof(float));
  EXPECT_EQ(view.GetAsDouble(0), 3.0);  // No copy: reads the buffer.
  a = Tensor();
  b = Tensor();
  EXPECT_FALSE(watch.expired());
  view = Tensor();
  EXPECT_TRUE(watch.expired());
}

// ---- Tensor ----

TEST(TensorTest, BasicProperties) {
  Tensor t(DType::kI32, {2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.NumElements(), 24);
  EXPECT_EQ(t.NumBytes(), 96u);
  EXPECT_EQ(t.TypeString(), "i32[2,3,4]");
  EXPECT_EQ(t.type(), (TensorType{DType::kI32, {2, 3, 4}}));
  for (double v : t.ToDoubles()) EXPECT_EQ(v, 0.0);
  Tensor s = Tensor::Scalar(DType::kF64, 2.5);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.NumElements(), 1);
  EXPECT_EQ(s.GetAsDouble(0), 2.5);
  EXPECT_EQ(s.TypeString(), "f64[]");
  Tensor empty(DType::kF32, {0, 4});
  EXPECT_EQ(empty.NumElements(), 0);
  EXPECT_EQ(empty.NumBytes(), 0u);
  EXPECT_FALSE(Tensor().defined());
}

TEST(TensorTest, BytesPerElement) {
  EXPECT_EQ(Tensor(DType::kF16, {3}).NumBytes(), 6u);
  EXPECT_EQ(Tensor(DType::kBF16, {3}).NumBytes(), 6u);
  EXPECT_EQ(Tensor(DType::kF64, {3}).NumBytes(), 24u);
  EXPECT_EQ(Tensor(DType::kI8, {3}).NumBytes(), 3u);
  EXPECT_EQ(Tensor(DType::kU8, {3}).NumBytes(), 3u);
  EXPECT_EQ(Tensor(DType::kI64, {3}).NumBytes(), 24u);
  EXPECT_EQ(Tensor(DType::kBool, {3}).NumBytes(), 3u);
}

TEST(TensorTest, FromVectorCopiesAndSharesOnCopy) {
  Tensor t = Tensor::FromVector<int>(DType::kF32, {2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(t.ToDoubles(), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(t.data<float>()[3], 4.0f);
  Tensor shared = t;  // Same storage.
  shared.SetFromDouble(0, 9);
  EXPECT_EQ(t.GetAsDouble(0), 9.0);
  Tensor copy = t.Clone();
  copy.SetFromDouble(1, -1);
  EXPECT_EQ(t.GetAsDouble(1), 2.0);
  EXPECT_NE(copy.storage(), t.storage());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.raw_data()) % 64, 0u);
  Tensor r = t.Reshaped({4});
  EXPECT_EQ(r.storage(), t.storage());
  EXPECT_EQ(r.TypeString(), "f32[4]");
}

TEST(TensorTest, CloneOfUndefinedTensorIsUndefined) {
  Tensor none;
  Tensor clone = none.Clone();
  EXPECT_FALSE(clone.defined());
  EXPECT_TRUE(clone.BitwiseEqual(none));
}

TEST(TensorTest, BitwiseEqual) {
  Tensor a = Tensor::FromVector<double>(DType::kF32, {2}, {1.5, -0.0});
  Tensor b = Tensor::FromVector<double>(DType::kF32, {2}, {1.5, -0.0});
  Tensor c = Tensor::FromVector<double>(DType::kF32, {2}, {1.5, 0.0});
  EXPECT_TRUE(a.BitwiseEqual(b));
  EXPECT_FALSE(a.BitwiseEqual(c));  // -0 and +0 differ in bits.
  EXPECT_FALSE(a.BitwiseEqual(a.Reshaped({1, 2})));
  EXPECT_FALSE(a.BitwiseEqual(Tensor(DType::kI32, {2})));
  EXPECT_FALSE(a.BitwiseEqual(Tensor()));
  EXPECT_TRUE(Tensor().BitwiseEqual(Tensor()));
}

TEST(TensorTest, RoundTripsThroughDoublesForEveryDType) {
  const std::vector<double> values = {0, 1, -2, 7, 100};
  for (int d = 0; d < kNumDTypes; ++d) {
    DType dtype = static_cast<DType>(d);
    if (dtype == DType::kBool) continue;
    Tensor t(dtype, {5});
    for (int i = 0; i < 5; ++i) {
      double v = dtype == DType::kU8 ? std::abs(values[i]) : values[i];
      if (dtype == DType::kF8E4M3 && v == 100) v = 96;  // 100 is no f8e4m3 value.
      t.SetFromDouble(i, v);
      EXPECT_EQ(t.GetAsDouble(i), v) << DTypeName(dtype) << " " << v;
    }
  }
}

TEST(TensorTest, FloatToIntegerCastsTruncateAndSaturate) {
  Tensor i8(DType::kI8, {7});
  const double in[] = {2.9, -2.9, 300, -300, NAN, 127.5, -128.9};
  for (int i = 0; i < 7; ++i) i8.SetFromDouble(i, in[i]);
  EXPECT_THAT(i8.ToDoubles(), ElementsAre(2, -2, 127, -128, 0, 127, -128));

  Tensor u8(DType::kU8, {5});
  const double uin[] = {-5, 300, 255.9, 0.7, -0.7};
  for (int i = 0; i < 5; ++i) u8.SetFromDouble(i, uin[i]);
  EXPECT_THAT(u8.ToDoubles(), ElementsAre(0, 255, 255, 0, 0));

  Tensor i32(DType::kI32, {4});
  const double iin[] = {1e10, -1e10, INFINITY, -INFINITY};
  for (int i = 0; i < 4; ++i) i32.SetFromDouble(i, iin[i]);
  EXPECT_EQ(i32.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32.data<int32_t>()[2], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32.data<int32_t>()[3], std::numeric_limits<int32_t>::min());

  Tensor i64(DType::kI64, {4});
  const double lin[] = {1e19, -1e19, 9007199254740993.0, NAN};
  for (int i = 0; i < 4; ++i) i64.SetFromDouble(i, lin[i]);
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
  // 2^53 + 1 is not a double: the literal is 2^53.
  EXPECT_EQ(i64.data<int64_t>()[2], int64_t{9007199254740992});
  EXPECT_EQ(i64.data<int64_t>()[3], 0);

  Tensor b(DType::kBool, {4});
  const double bin[] = {0.0, 0.5, -3, NAN};
  for (int i = 0; i < 4; ++i) b.SetFromDouble(i, bin[i]);
  EXPECT_THAT(b.ToDoubles(), ElementsAre(0, 1, 1, 1));
  EXPECT_EQ(b.data<uint8_t>()[2], 1);  // Stored as 0/1 bytes.
}

// ---- Half precision ----

// f8e4m3 (e4m3fn): bias 7, 3 mantissa bits, subnormals m * 2^-9, largest
// 448 (0x7e), NaN 0x7f; no infinities.
TEST(Float8Test, KnownValues) {
  EXPECT_EQ(DoubleToFloat8E4M3(0.0), 0x00);
  EXPECT_EQ(DoubleToFloat8E4M3(-0.0), 0x80);
  EXPECT_EQ(DoubleToFloat8E4M3(1.0), 0x38);
  EXPECT_EQ(DoubleToFloat8E4M3(-2.0), 0xc0);
  EXPECT_EQ(DoubleToFloat8E4M3(448.0), 0x7e);
  EXPECT_EQ(DoubleToFloat8E4M3(0x1p-6), 0x08);   // Smallest normal.
  EXPECT_EQ(DoubleToFloat8E4M3(0x1p-9), 0x01);   // Smallest subnormal.
  EXPECT_EQ(DoubleToFloat8E4M3(0x7p-9), 0x07);   // Largest subnormal.
  EXPECT_EQ(DoubleToFloat8E4M3(1.5 * 0x1p-8), 0x03);  // A subnormal: 3 * 2^-9.
  EXPECT_EQ(DoubleToFloat8E4M3(std::nan("")), 0x7f);
  EXPECT_EQ(DoubleToFloat8E4M3(-std::nan("")), 0xff);
  EXPECT_EQ(Float8E4M3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Float8E4M3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(Float8E4M3ToFloat(0x3b), 1.375f);
  EXPECT_TRUE(std::isnan(Float8E4M3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(Float8E4M3ToFloat(0xff)));
}

TEST(Float8Test, RoundsToNearestEvenAndSaturates) {
  // 1 + 1/16 lies halfway between 1 (mantissa 0) and 1.125 (1): to 0.
  EXPECT_EQ(DoubleToFloat8E4M3(1.0625), 0x38);
  // 1 + 3/16 lies halfway between mantissas 1 and 2: to 2.
  EXPECT_EQ(DoubleToFloat8E4M3(1.1875), 0x3a);
  EXPECT_EQ(DoubleToFloat8E4M3(1.0626), 0x39);  // Just above halfway.
  // Halfway between subnormals 0 and 2^-9: to 0; 3 * 2^-10 to 2 * 2^-9.
  EXPECT_EQ(DoubleToFloat8E4M3(0x1p-10), 0x00);
  EXPECT_EQ(DoubleToFloat8E4M3(0x3p-10), 0x02);
  // 15.5 * 2^-10 lies between 7 * 2^-9 and the smallest normal 2^-6: up.
  EXPECT_EQ(DoubleToFloat8E4M3(15.5 * 0x1p-10), 0x08);
  // Past the largest: 448, never NaN (the e4m3fn saturating conversion).
  EXPECT_EQ(DoubleToFloat8E4M3(464.0), 0x7e);
  EXPECT_EQ(DoubleToFloat8E4M3(1e9), 0x7e);
  EXPECT_EQ(DoubleToFloat8E4M3(-std::numeric_limits<double>::infinity()), 0xfe);
}

TEST(Float8Test, EveryValueRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const float v = Float8E4M3ToFloat(static_cast<uint8_t>(b));
    EXPECT_EQ(DoubleToFloat8E4M3(v), b) << b << " " << v;
  }
}

TEST(HalfTest, FloatToHalfKnownValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);  // Largest half.
  EXPECT_EQ(FloatToHalf(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);
}

TEST(HalfTest, FloatToHalfRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between mantissas 1 and 2: to even (2).
  EXPECT_EQ(FloatToHalf(1.0f + 0x3p-11f), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  // Just below halfway rounds down.
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f - 0x1p-20f), 0x3c00);
  // Rounding can carry into the exponent: 2 - 2^-12 -> 2.
  EXPECT_EQ(FloatToHalf(2.0f - 0x1p-12f), 0x4000);
}

TEST(HalfTest, FloatToHalfOverflowInfAndNan) {
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);  // Below the halfway point.
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // Halfway to 2^16: to inf.
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(kInf), 0x7c00);
  EXPECT_EQ(FloatToHalf(-kInf), 0xfc00);
  uint16_t nan = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(HalfTest, FloatToHalfSubnormals) {
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);  // Smallest subnormal.
  EXPECT_EQ(FloatToHalf(-0x1p-24f), 0x8001);
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);         // Halfway to 0: even.
  EXPECT_EQ(FloatToHalf(0x1.000002p-25f), 0x0001);  // Just above halfway.
  EXPECT_EQ(FloatToHalf(0x3p-25f), 0x0002);         // 1.5 ulp: to even 2.
  EXPECT_EQ(FloatToHalf(0x3ffp-24f), 0x03ff);       // Largest subnormal.
  EXPECT_EQ(FloatToHalf(0x7ffp-25f), 0x0400);       // Rounds up to normal.
  EXPECT_EQ(FloatToHalf(0x1p-14f), 0x0400);         // Smallest normal.
  EXPECT_EQ(FloatToHalf(1e-30f), 0x0000);
}

TEST(HalfTest, HalfToFloatKnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfToFloat(0x03ff), 0x3ffp-24f);
  EXPECT_EQ(HalfToFloat(0x0400), 0x1p-14f);
  EXPECT_EQ(HalfToFloat(0x8001), -0x1p-24f);
  EXPECT_EQ(HalfToFloat(0x7c00), kInf);
  EXPECT_EQ(HalfToFloat(0xfc00), -kInf);
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  EXPECT_EQ(HalfToFloat(0x8000), 0.0f);
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(BFloat16Test, KnownValues) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBFloat16(kInf), 0x7f80);
  EXPECT_EQ(FloatToBFloat16(-kInf), 0xff80);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(FloatToBFloat16(3.14159265f), 0x4049);
}

TEST(BFloat16Test, RoundsToNearestEven) {
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x3p-8f), 0x3f82);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  // The largest float rounds up to infinity.
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(BFloat16Test, SubnormalsAndNan) {
  // Float subnormals keep their top bits: 2^-133 is bf16 0x0001.
  EXPECT_EQ(FloatToBFloat16(0x1p-133f), 0x0001);
  EXPECT_EQ(BFloat16ToFloat(0x0001), 0x1p-133f);
  // Halfway between 0 and 2^-133 goes to even (0); 1.5 ulp goes to 2.
  EXPECT_EQ(FloatToBFloat16(0x1p-134f), 0x0000);
  EXPECT_EQ(FloatToBFloat16(0x3p-134f), 0x0002);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
  uint16_t nan = FloatToBFloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(nan)));
  // A signalling NaN whose payload sits in the dropped bits stays a NaN.
  float snan = std::bit_cast<float>(uint32_t{0x7f800001});
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(snan))));
}

TEST(HalfTest, TensorsStoreHalfBits) {
  Tensor h(DType::kF16, {3});
  h.SetFromDouble(0, 1.0);
  h.SetFromDouble(1, 70000.0);
  h.SetFromDouble(2, 0x1p-24);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h.data<uint16_t>()[1], 0x7c00);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x0001);
  EXPECT_EQ(h.GetAsDouble(2), 0x1p-24);
  Tensor b(DType::kBF16, {1});
  b.SetFromDouble(0, 1.0 + 0x3p-8);
  EXPECT_EQ(b.data<uint16_t>()[0], 0x3f82);
  EXPECT_EQ(b.GetAsDouble(0), 1.0 + 0x1p-6);
}

// ---- DType ----

TEST(DTypeTest, NamesSizesAndKinds) {
  const char* names[] = {"f32", "f16", "bf16", "f64", "i8",
                         "u8",  "i32", "i64",  "bool", "f8e4m3"};
  const int64_t sizes[] = {4, 2, 2, 8, 1, 1, 4, 8, 1, 1};
  static_assert(std::size(names) == kNumDTypes);
  for (int d = 0; d < kNumDTypes; ++d) {
    DType dtype = static_cast<DType>(d);
    EXPECT_EQ(DTypeName(dtype), names[d]);
    EXPECT_EQ(ParseDType(names[d]), dtype);
    EXPECT_EQ(DTypeSize(dtype), sizes[d]);
  }
  EXPECT_EQ(ParseDType("float32"), std::nullopt);
  EXPECT_TRUE(IsFloatingPoint(DType::kBF16));
  EXPECT_FALSE(IsFloatingPoint(DType::kI64));
  EXPECT_TRUE(IsInteger(DType::kU8));
  EXPECT_FALSE(IsInteger(DType::kBool));
  EXPECT_FALSE(IsFloatingPoint(DType::kBool));
  // A storage type: neither, so no arithmetic rule takes it.
  EXPECT_FALSE(IsFloatingPoint(DType::kF8E4M3));
  EXPECT_FALSE(IsInteger(DType::kF8E4M3));
  EXPECT_TRUE(IsFloat8(DType::kF8E4M3));
}

TEST(DTypeTest, PromotionFollowsPyTorch) {
  using D = DType;
  struct Case {
    D a, b, want;
  };
  const Case cases[] = {
      {D::kBool, D::kBool, D::kBool}, {D::kBool, D::kI8, D::kI8},
      {D::kBool, D::kU8, D::kU8},     {D::kBool, D::kF16, D::kF16},
      {D::kI8, D::kU8, D::kI32},  // torch gives i16; i32 is the nearest we have
      {D::kI8, D::kI32, D::kI32},     {D::kU8, D::kI32, D::kI32},
      {D::kI32, D::kI64, D::kI64},    {D::kI64, D::kF16, D::kF16},
      {D::kU8, D::kBF16, D::kBF16},   {D::kF16, D::kBF16, D::kF32},
      {D::kF16, D::kF32, D::kF32},    {D::kBF16, D::kF32, D::kF32},
      {D::kF32, D::kF64, D::kF64},    {D::kI64, D::kF64, D::kF64},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PromoteTypes(c.a, c.b), c.want)
        << DTypeName(c.a) << " + " << DTypeName(c.b);
  }
  // Symmetric and idempotent for every pair.
  for (int i = 0; i < kNumDTypes; ++i) {
    for (int j = 0; j < kNumDTypes; ++j) {
      D a = static_cast<D>(i), b = static_cast<D>(j);
      EXPECT_EQ(PromoteTypes(a, b), PromoteTypes(b, a));
      D p = PromoteTypes(a, b);
      EXPECT_EQ(PromoteTypes(p, a), p);  // The result absorbs its inputs.
    }
    EXPECT_EQ(PromoteTypes(static_cast<D>(i), static_cast<D>(i)),
              static_cast<D>(i));
  }
}

// ---- Shapes ----

TEST(ShapeTest, DimsAndSymbols) {
  Dim c(3);
  Dim s = Dim::Symbol("batch");
  EXPECT_TRUE(c.is_constant());
  EXPECT_EQ(c.value(), 3);
  EXPECT_TRUE(s.is_symbolic());
  EXPECT_EQ(s.symbol(), "batch");
  EXPECT_EQ(s, Dim::Symbol("batch"));  // Interned.
  EXPECT_NE(s, Dim::Symbol("seq"));
  EXPECT_EQ(sizeof(Dim), 8u);
  Shape shape = {Dim(2), s, Dim(0)};
  EXPECT_EQ(ShapeToString(shape), "[2,batch,0]");
  EXPECT_FALSE(IsStatic(shape));
  Shape fixed = ShapeFromDims({2, 3, 4});
  EXPECT_TRUE(IsStatic(fixed));
  EXPECT_EQ(NumElements(fixed), 24);
  EXPECT_THAT(StaticDims(fixed), ElementsAre(2, 3, 4));
  EXPECT_EQ(ShapeToString({}), "[]");
  EXPECT_EQ((TensorType{DType::kF32, shape}).ToString(), "f32[2,batch,0]");
  EXPECT_EQ((TensorType{DType::kI64, {}}).rank(), 0);
}

}  // namespace
}  // namespace graft
