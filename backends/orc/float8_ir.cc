#include "backends/orc/float8_ir.h"

#include "llvm/IR/Intrinsics.h"

namespace graft::orc {
namespace {

// 2^e for an i64 e in the normal range of double, from its bits.
llvm::Value* PowerOfTwo(llvm::IRBuilder<>& b, llvm::Value* e) {
  llvm::Value* biased = b.CreateAdd(e, b.getInt64(1023));
  return b.CreateBitCast(b.CreateShl(biased, 52), b.getDoubleTy());
}

// floor(log2 a) for a finite double a > 0 of normal range; -1023 for 0.
llvm::Value* Exponent(llvm::IRBuilder<>& b, llvm::Value* a) {
  llvm::Value* bits = b.CreateBitCast(a, b.getInt64Ty());
  return b.CreateSub(b.CreateLShr(bits, 52), b.getInt64(1023));
}

// An exact small integer held in a double, as i8.
llvm::Value* ToByte(llvm::IRBuilder<>& b, llvm::Value* v) {
  return b.CreateIntrinsic(llvm::Intrinsic::fptoui_sat, {b.getInt8Ty(), b.getDoubleTy()}, {v});
}

}  // namespace

llvm::Value* Float8E4M3ToDouble(llvm::IRBuilder<>& b, llvm::Value* bits) {
  llvm::Value* byte = b.CreateZExt(bits, b.getInt64Ty());
  llvm::Value* exponent = b.CreateAnd(b.CreateLShr(byte, 3), b.getInt64(15));
  llvm::Value* mantissa = b.CreateAnd(byte, b.getInt64(7));
  // Subnormal: mantissa * 2^-9; normal: (8 + mantissa) * 2^(exponent - 10).
  llvm::Value* subnormal = b.CreateFMul(b.CreateUIToFP(mantissa, b.getDoubleTy()),
                                        llvm::ConstantFP::get(b.getDoubleTy(), 1.0 / 512));
  llvm::Value* normal =
      b.CreateFMul(b.CreateUIToFP(b.CreateAdd(mantissa, b.getInt64(8)), b.getDoubleTy()),
                   PowerOfTwo(b, b.CreateSub(exponent, b.getInt64(10))));
  llvm::Value* magnitude =
      b.CreateSelect(b.CreateICmpEQ(exponent, b.getInt64(0)), subnormal, normal);
  llvm::Value* nan = b.CreateICmpEQ(b.CreateAnd(byte, b.getInt64(0x7f)), b.getInt64(0x7f));
  magnitude = b.CreateSelect(nan, llvm::ConstantFP::getQNaN(b.getDoubleTy()), magnitude);
  llvm::Value* negative = b.CreateICmpNE(b.CreateAnd(byte, b.getInt64(0x80)), b.getInt64(0));
  return b.CreateSelect(negative, b.CreateFNeg(magnitude), magnitude);
}

llvm::Value* DoubleToFloat8E4M3(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* f64 = b.getDoubleTy();
  llvm::Value* sign = b.CreateSelect(
      b.CreateICmpSLT(b.CreateBitCast(x, b.getInt64Ty()), b.getInt64(0)), b.getInt8(0x80),
      b.getInt8(0));
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Round to the step of a's binade (3 mantissa bits; below 2^-6 the
  // subnormal step 2^-9): a division by a power of two, exact. Rounding up
  // may reach the next binade, whose encoding then follows from the result.
  llvm::Value* e = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, Exponent(b, a), b.getInt64(-6));
  llvm::Value* step = PowerOfTwo(b, b.CreateSub(e, b.getInt64(3)));
  llvm::Value* r = b.CreateFMul(
      b.CreateUnaryIntrinsic(llvm::Intrinsic::nearbyint, b.CreateFDiv(a, step)), step);
  r = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, r, llvm::ConstantFP::get(f64, 448.0));
  // r as bits: below 2^-6 the subnormal r * 2^9; else exponent + 7 and the
  // three bits after the leading one.
  llvm::Value* er = Exponent(b, r);
  llvm::Value* subnormal = ToByte(b, b.CreateFMul(r, llvm::ConstantFP::get(f64, 512.0)));
  llvm::Value* mantissa = b.CreateSub(
      ToByte(b, b.CreateFMul(r, PowerOfTwo(b, b.CreateSub(b.getInt64(3), er)))), b.getInt8(8));
  llvm::Value* exponent = b.CreateTrunc(b.CreateAdd(er, b.getInt64(7)), b.getInt8Ty());
  llvm::Value* normal = b.CreateOr(b.CreateShl(exponent, 3), mantissa);
  llvm::Value* code = b.CreateSelect(
      b.CreateFCmpOLT(r, llvm::ConstantFP::get(f64, 1.0 / 64)), subnormal, normal);
  code = b.CreateSelect(b.CreateFCmpUNO(x, x), b.getInt8(0x7f), code);
  return b.CreateOr(sign, code);
}

}  // namespace graft::orc
