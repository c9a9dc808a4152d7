#include "backends/orc/ir_emitter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "llvm/IR/Intrinsics.h"

namespace graft::orc {
namespace {

bool IsUnsigned(DType dtype) { return dtype == DType::kU8; }

}  // namespace

IrEmitter::IrEmitter(llvm::LLVMContext& context, llvm::Module& module)
    : context_(context), module_(module), b_(context) {
  // A product followed by a sum may become one fused multiply-add (one
  // rounding instead of two; as compilers do by default with
  // -ffp-contract=on). Polynomials (exp, erf, tanh) then take half the
  // instructions.
  llvm::FastMathFlags contract;
  contract.setAllowContract();
  b_.setFastMathFlags(contract);
}

llvm::Type* IrEmitter::StorageType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return b_.getFloatTy();
    case DType::kF64:
      return b_.getDoubleTy();
    case DType::kF16:
      return b_.getHalfTy();
    case DType::kBF16:
      return b_.getBFloatTy();
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
    case DType::kF8E4M3:  // Bytes, moved by views only.
      return b_.getInt8Ty();
    case DType::kI32:
      return b_.getInt32Ty();
    case DType::kI64:
      return b_.getInt64Ty();
  }
  return b_.getFloatTy();
}

llvm::Type* IrEmitter::RegisterType(DType dtype) {
  return dtype == DType::kBool ? b_.getInt1Ty() : StorageType(dtype);
}

llvm::Value* IrEmitter::Constant(DType dtype, double value) {
  llvm::Type* type = RegisterType(dtype);
  if (IsFloatingPoint(dtype)) return llvm::ConstantFP::get(type, value);
  if (dtype == DType::kBool) return b_.getInt1(value != 0);
  return llvm::ConstantInt::get(type, static_cast<int64_t>(value), true);
}

llvm::Value* IrEmitter::Convert(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* target = RegisterType(to);
  if (to == DType::kBool) return AsBool(v);
  if (from == DType::kBool) {
    return IsFloatingPoint(to) ? b_.CreateUIToFP(v, target)
                               : b_.CreateZExt(v, target);
  }
  const bool from_float = IsFloatingPoint(from);
  const bool to_float = IsFloatingPoint(to);
  if (from_float && to_float) return b_.CreateFPCast(v, target);
  if (from_float && DTypeSize(to) <= 4) {
    // Saturating, so an out-of-range value is a defined number, not poison,
    // and NaN is 0 (as llvm.fptosi.sat, which LLVM expands lane by lane:
    // twice a memory-bound loop's time). Every bound of an integer of up
    // to 32 bits is an f64, so the clamp is exact there.
    llvm::Type* f64 = b_.getDoubleTy();
    llvm::Value* x = b_.CreateFPCast(v, f64);
    const double lo = IsUnsigned(to) ? 0.0 : -std::ldexp(1.0, 8 * DTypeSize(to) - 1);
    const double hi = IsUnsigned(to) ? std::ldexp(1.0, 8 * DTypeSize(to)) - 1 : -lo - 1;
    x = b_.CreateBinaryIntrinsic(
        llvm::Intrinsic::minnum,
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, llvm::ConstantFP::get(f64, lo)),
        llvm::ConstantFP::get(f64, hi));
    x = b_.CreateSelect(b_.CreateFCmpUNO(v, v), llvm::ConstantFP::get(f64, 0.0), x);
    // Through i32, which holds every value of these types (graft has no
    // u32): vcvttpd2dq exists on every x86-64, where a vector f64 to i64
    // needs AVX-512DQ.
    return b_.CreateSExtOrTrunc(b_.CreateFPToSI(x, b_.getInt32Ty()), target);
  }
  if (from_float) {
    // 64-bit integers: the saturating intrinsic (their bounds are no f64).
    llvm::Intrinsic::ID id = IsUnsigned(to) ? llvm::Intrinsic::fptoui_sat
                                            : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {target, v->getType()}, {v});
  }
  if (to_float) {
    return IsUnsigned(from) ? b_.CreateUIToFP(v, target)
                            : b_.CreateSIToFP(v, target);
  }
  return b_.CreateIntCast(v, target, !IsUnsigned(from));
}

llvm::Function* IrEmitter::BeginFunction(const std::string& name,
                                         int num_pointers, bool range) {
  std::vector<llvm::Type*> params(num_pointers, b_.getPtrTy());
  if (range) params.insert(params.end(), 2, b_.getInt64Ty());
  auto* type = llvm::FunctionType::get(b_.getInt32Ty(), params, false);
  auto* f = llvm::Function::Create(type, llvm::Function::InternalLinkage,
                                   name, module_);
  for (llvm::Argument& a : f->args()) {
    if (!a.getType()->isPointerTy()) continue;
    a.addAttr(llvm::Attribute::NoAlias);
    a.addAttr(llvm::Attribute::NoCapture);
  }
  f->addFnAttr(llvm::Attribute::NoUnwind);
  b_.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", f));
  return f;
}

void IrEmitter::PartitionNextLoop(llvm::Value* begin, llvm::Value* end) {
  part_begin_ = begin;
  part_end_ = end;
  part_extent_.reset();
  part_broken_ = false;
}

absl::StatusOr<std::optional<int64_t>> IrEmitter::EndPartition() {
  part_begin_ = part_end_ = nullptr;
  if (part_broken_) {
    return absl::InternalError("a step split over threads has two top-level loops");
  }
  return part_extent_;
}

void IrEmitter::Loop(int64_t n, const std::function<void(llvm::Value*)>& body) {
  if (part_begin_ != nullptr && loop_depth_ == 0) {
    if (part_extent_.has_value()) {
      part_broken_ = true;
    } else {
      // The partitioned loop: the caller splits [0, n) into parts.
      part_extent_ = n;
      llvm::Value* begin = part_begin_;
      part_begin_ = nullptr;  // Not a second top-level loop.
      LoopBetween(begin, part_end_, body);
      part_begin_ = begin;
      return;
    }
  }
  ++loop_depth_;
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(context_, "loop", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(context_, "done", f);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(b_.getInt64(0), before);
  body(i);
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(n)), loop, exit);
  b_.SetInsertPoint(exit);
  --loop_depth_;
}

void IrEmitter::LoopBetween(llvm::Value* begin, llvm::Value* end,
                            const std::function<void(llvm::Value*)>& body) {
  if (part_begin_ != nullptr && loop_depth_ == 0) part_broken_ = true;
  ++loop_depth_;
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(context_, "loop", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(context_, "done", f);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop, exit);
  b_.SetInsertPoint(loop);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(begin, before);
  body(i);
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop, exit);
  b_.SetInsertPoint(exit);
  --loop_depth_;
}

void IrEmitter::Loops(
    const std::vector<int64_t>& dims,
    const std::function<void(const std::vector<llvm::Value*>&)>& body) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<llvm::Value*> index;
  std::function<void(size_t)> level = [&](size_t k) {
    if (k == dims.size()) {
      body(index);
      return;
    }
    Loop(dims[k], [&](llvm::Value* i) {
      index.push_back(i);
      level(k + 1);
      index.pop_back();
    });
  };
  level(0);
}

llvm::Value* IrEmitter::Offset(const View& view,
                               const std::vector<llvm::Value*>& index) {
  llvm::Value* offset = b_.getInt64(view.offset);
  for (size_t k = 0; k < index.size(); ++k) {
    if (view.strides[k] == 0) continue;
    offset = b_.CreateAdd(
        offset, b_.CreateMul(index[k], b_.getInt64(view.strides[k]), "", true, true),
        "", true, true);
  }
  return offset;
}

llvm::Value* IrEmitter::LoadAt(llvm::Value* base, DType dtype,
                               llvm::Value* offset) {
  llvm::Type* type = StorageType(dtype);
  llvm::Value* v =
      b_.CreateLoad(type, b_.CreateInBoundsGEP(type, base, offset));
  if (dtype == DType::kBool) v = b_.CreateICmpNE(v, b_.getInt8(0));
  return v;
}

void IrEmitter::StoreAt(llvm::Value* base, DType dtype, llvm::Value* offset,
                        llvm::Value* value) {
  llvm::Type* type = StorageType(dtype);
  if (dtype == DType::kBool) value = b_.CreateZExt(value, b_.getInt8Ty());
  b_.CreateStore(value, b_.CreateInBoundsGEP(type, base, offset));
}

llvm::Value* IrEmitter::Load(const View& view,
                             const std::vector<llvm::Value*>& index) {
  return LoadAt(view.base, view.dtype, Offset(view, index));
}

void IrEmitter::Store(const View& view, const std::vector<llvm::Value*>& index,
                      llvm::Value* value) {
  StoreAt(view.base, view.dtype, Offset(view, index), value);
}

void IrEmitter::Map(
    std::vector<int64_t> dims, View out, std::vector<View> ins,
    const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& f) {
  // Drop size-1 dims, then merge each dim into the one before it when
  // every view steps through both as one.
  std::vector<View*> views{&out};
  for (View& v : ins) views.push_back(&v);
  // Memory order of the output: sort the dims by its strides.
  std::vector<size_t> order(dims.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return out.strides[a] > out.strides[b];
  });
  auto reorder = [&](std::vector<int64_t>& v) {
    std::vector<int64_t> sorted;
    for (size_t k : order) sorted.push_back(v[k]);
    v = std::move(sorted);
  };
  reorder(dims);
  for (View* v : views) reorder(v->strides);
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] != 1 || dims.size() == 1) continue;
    dims.erase(dims.begin() + k);
    for (View* v : views) v->strides.erase(v->strides.begin() + k);
  }
  for (size_t k = dims.size(); k-- > 1;) {
    bool mergeable = true;
    for (View* v : views) {
      mergeable &= v->strides[k - 1] == v->strides[k] * dims[k];
    }
    if (!mergeable) continue;
    dims[k - 1] *= dims[k];
    dims.erase(dims.begin() + k);
    for (View* v : views) {
      v->strides[k - 1] = v->strides[k];
      v->strides.erase(v->strides.begin() + k);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (View* v : views) v->strides.push_back(0);
  }
  auto element = [&](const std::vector<llvm::Value*>& index) {
    std::vector<llvm::Value*> loaded;
    for (const View& v : ins) loaded.push_back(Load(v, index));
    Store(out, index, f(loaded));
  };
  // A short innermost dim (an NHWC image's 3 channels) is written out, so
  // that the loop around it vectorizes, with interleaved loads and
  // stores, instead of a 3-wide loop of gathers.
  constexpr int64_t kUnrollInnermost = 4;
  if (dims.size() >= 2 && dims.back() <= kUnrollInnermost) {
    const int64_t inner = dims.back();
    dims.pop_back();
    Loops(dims, [&](std::vector<llvm::Value*> index) {
      index.push_back(nullptr);
      for (int64_t j = 0; j < inner; ++j) {
        index.back() = b_.getInt64(j);
        element(index);
      }
    });
    return;
  }
  Loops(dims, element);
}

llvm::Value* IrEmitter::Slot(DType dtype, llvm::Value* initial) {
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
  llvm::Value* slot = entry.CreateAlloca(RegisterType(dtype));
  b_.CreateStore(initial, slot);
  return slot;
}

llvm::Value* IrEmitter::AsBool(llvm::Value* v) {
  if (v->getType()->isIntegerTy(1)) return v;
  if (v->getType()->isFloatingPointTy()) {
    return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  }
  return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

llvm::Value* IrEmitter::AsCompute(llvm::Value* v, DType compute) {
  if (v->getType()->isIntegerTy(1) && compute != DType::kBool) {
    return Convert(v, DType::kBool, compute);
  }
  return v;
}

llvm::Value* IrEmitter::Exp(llvm::Value* x) {
  if (!x->getType()->isFloatTy()) {
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  }
  return ExpF32(x);
}

// exp for f32 inline (Cephes' polynomial, as Eigen and XLA use): about one
// ulp of error, and loops with it vectorize at the CPU's full width
// instead of calling a vector library eight lanes at a time.
llvm::Value* IrEmitter::ExpF32(llvm::Value* x) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, add});
  };
  llvm::Value* clamped = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum,
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(-87.3365447504)),
      c(88.72283935546875));
  // x = m ln2 + r, |r| <= ln2 / 2.
  llvm::Value* m = b_.CreateUnaryIntrinsic(
      llvm::Intrinsic::floor, fma(clamped, c(1.44269504088896341), c(0.5)));
  llvm::Value* r = fma(m, c(-0.693359375), clamped);
  r = fma(m, c(2.12194440e-4), r);
  llvm::Value* p = c(1.9875691500e-4);
  for (double k : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                   1.6666665459e-1, 5.0000001201e-1}) {
    p = fma(p, r, c(k));
  }
  llvm::Value* y = fma(p, b_.CreateFMul(r, r), b_.CreateFAdd(r, c(1.0)));
  // 2^m from exponent bits, as 2^(m/2) 2^(m - m/2) so that m = 128
  // (x near ln(FLT_MAX)) does not overflow the exponent field.
  llvm::Value* mi = b_.CreateFPToSI(m, b_.getInt32Ty());
  llvm::Value* half = b_.CreateAShr(mi, 1);
  auto pow2 = [&](llvm::Value* e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt32(127)), 23), t);
  };
  llvm::Value* result = b_.CreateFMul(
      b_.CreateFMul(y, pow2(half)), pow2(b_.CreateSub(mi, half)));
  // Below the clamp the result is 0 (exp(-inf) in a masked softmax must
  // be exactly 0); above it, inf; NaN stays NaN.
  result = b_.CreateSelect(b_.CreateFCmpOLT(x, c(-87.3365447504)), c(0.0), result);
  result = b_.CreateSelect(b_.CreateFCmpOGT(x, c(88.72283935546875)),
                           c(std::numeric_limits<double>::infinity()), result);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result);
}
llvm::Value* IrEmitter::Log(llvm::Value* x) {
  return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
}
llvm::Value* IrEmitter::Sqrt(llvm::Value* x) {
  return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
}

namespace {

void AllowReassoc(llvm::Value* v) {
  if (auto* i = llvm::dyn_cast<llvm::Instruction>(v)) {
    i->setHasAllowReassoc(true);
  }
}

}  // namespace

llvm::Value* IrEmitter::ReassocAdd(llvm::Value* a, llvm::Value* b) {
  if (!a->getType()->isFloatingPointTy()) return b_.CreateAdd(a, b);
  llvm::Value* sum = b_.CreateFAdd(a, b);
  AllowReassoc(sum);
  return sum;
}

llvm::Value* IrEmitter::Maximum(llvm::Value* a, llvm::Value* b, bool reassoc,
                               bool is_unsigned) {
  if (!a->getType()->isFloatingPointTy()) {
    is_unsigned |= a->getType()->isIntegerTy(1);
    return b_.CreateSelect(
        is_unsigned ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b), a, b);
  }
  // NaN-propagating, as torch.maximum.
  llvm::Value* v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, b);
  if (reassoc) AllowReassoc(v);
  return v;
}

llvm::Value* IrEmitter::MaximumAnyZero(llvm::Value* a, llvm::Value* b,
                                       bool is_unsigned) {
  if (!a->getType()->isFloatingPointTy()) return Maximum(a, b, false, is_unsigned);
  // (a > b ? a : b) is vmaxps, which yields b when either is NaN; a NaN a
  // is then taken explicitly.
  llvm::Value* max = b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
  return b_.CreateSelect(b_.CreateFCmpUNO(a, a), a, max);
}

llvm::Value* IrEmitter::Minimum(llvm::Value* a, llvm::Value* b, bool reassoc,
                               bool is_unsigned) {
  if (!a->getType()->isFloatingPointTy()) {
    is_unsigned |= a->getType()->isIntegerTy(1);
    return b_.CreateSelect(
        is_unsigned ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b), a, b);
  }
  llvm::Value* v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, b);
  if (reassoc) AllowReassoc(v);
  return v;
}

llvm::Value* IrEmitter::LibmCall(const std::string& name, llvm::Value* x) {
  const bool is_float = x->getType()->isFloatTy();
  llvm::FunctionCallee callee = module_.getOrInsertFunction(
      is_float ? name + "f" : name, x->getType(), x->getType());
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotAccessMemory();
  }
  llvm::CallInst* call = b_.CreateCall(callee, {x});
  call->setDoesNotAccessMemory();
  return call;
}

// Rational approximations of tanh and erf for f32 (Eigen's, also XLA's):
// a few ulp of error, no branches and no library calls, so loops with them
// vectorize. glibc's tanhf costs ~15 ns an element here. Beyond
// `saturate`, where the function rounds to +-1 in f32, the result is +-1
// exactly (as libm's), so that, say, GELU of -inf is -inf * 0 = NaN in
// both.
llvm::Value* IrEmitter::OddRational(llvm::Value* x, double clamp, double saturate,
                                    const std::vector<double>& numerator,
                                    const std::vector<double>& denominator) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* clamped = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum,
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(-clamp)), c(clamp));
  llvm::Value* x2 = b_.CreateFMul(clamped, clamped);
  auto horner = [&](const std::vector<double>& coefficients) {
    llvm::Value* p = c(coefficients.back());
    for (size_t k = coefficients.size() - 1; k-- > 0;) {
      p = b_.CreateFAdd(b_.CreateFMul(p, x2), c(coefficients[k]));
    }
    return p;
  };
  llvm::Value* ratio =
      b_.CreateFDiv(b_.CreateFMul(horner(numerator), clamped), horner(denominator));
  // Both sides are finite (x is clamped): the division may be a
  // reciprocal estimate (see "reciprocal-estimates" in lowering.cc).
  if (auto* division = llvm::dyn_cast<llvm::Instruction>(ratio)) {
    division->setHasAllowReciprocal(true);
    division->setHasNoInfs(true);
  }
  llvm::Value* beyond =
      b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), c(saturate));
  ratio = b_.CreateSelect(beyond, b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, c(1), x),
                          ratio);
  // NaN in, NaN out (the clamp would have made it a number).
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, ratio);
}

llvm::Value* IrEmitter::TanhF32(llvm::Value* x) {
  llvm::Value* r = OddRational(
      x, 7.90531110763549805, 9.02,
      {4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05,
       5.12229709037114e-08, -8.60467152213735e-11, 2.00018790482477e-13,
       -2.76076847742355e-16},
      {4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04,
       1.19825839466702e-06});
  // Below 4e-4, tanh(x) is x to within f32's precision.
  llvm::Value* tiny = b_.CreateFCmpOLT(
      b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
      llvm::ConstantFP::get(x->getType(), 0.0004));
  return b_.CreateSelect(tiny, x, r);
}

llvm::Value* IrEmitter::ErfF32(llvm::Value* x) {
  return OddRational(
      x, 4.0, 3.92,
      {-1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04,
       -5.69250639462346e-05, -2.10102402082508e-06, 2.77068142495902e-08,
       -2.72614225801306e-10},
      {-1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03,
       -2.13374055278905e-04, -1.45660718464996e-05});
}

// pow with a small whole exponent (GELU's x^3) as multiplications: powf
// is a library call that keeps the loop scalar.
llvm::Value* IrEmitter::Pow(llvm::Value* x, llvm::Value* y) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantFP>(y)) {
    const double e = c->getValueAPF().convertToDouble();
    if (e == 0.5) return Sqrt(x);
    if (e == std::floor(e) && std::abs(e) <= 4 && e != 0) {
      llvm::Value* p = x;
      for (int i = 1; i < std::abs(e); ++i) p = b_.CreateFMul(p, x);
      return e > 0 ? p : b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), p);
    }
  }
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
}

llvm::Value* IrEmitter::IntPow(llvm::Value* x, llvm::Value* y, bool is_unsigned) {
  llvm::Type* t = x->getType();
  llvm::Value* zero = llvm::ConstantInt::get(t, 0);
  llvm::Value* one = llvm::ConstantInt::get(t, 1);
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(context_, "ipow", f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "ipow_done", f);
  // y <= 0 skips the loop: x^0 = 1; a negative y (which the interpreter
  // refuses) gives 0.
  llvm::Value* positive =
      is_unsigned ? b_.CreateICmpNE(y, zero) : b_.CreateICmpSGT(y, zero);
  llvm::Value* skipped = b_.CreateSelect(b_.CreateICmpEQ(y, zero), one, zero);
  b_.CreateCondBr(positive, loop, done);
  b_.SetInsertPoint(loop);
  llvm::PHINode* result = b_.CreatePHI(t, 2);
  llvm::PHINode* base = b_.CreatePHI(t, 2);
  llvm::PHINode* e = b_.CreatePHI(t, 2);
  llvm::Value* odd = b_.CreateICmpNE(b_.CreateAnd(e, one), zero);
  llvm::Value* next_result = b_.CreateSelect(odd, b_.CreateMul(result, base), result);
  llvm::Value* next_base = b_.CreateMul(base, base);
  llvm::Value* next_e = b_.CreateLShr(e, one);
  result->addIncoming(one, before);
  result->addIncoming(next_result, loop);
  base->addIncoming(x, before);
  base->addIncoming(next_base, loop);
  e->addIncoming(y, before);
  e->addIncoming(next_e, loop);
  b_.CreateCondBr(b_.CreateICmpNE(next_e, zero), loop, done);
  b_.SetInsertPoint(done);
  llvm::PHINode* out = b_.CreatePHI(t, 2);
  out->addIncoming(skipped, before);
  out->addIncoming(next_result, loop);
  return out;
}

llvm::Value* IrEmitter::Call(const std::string& function, DType compute,
                             std::vector<llvm::Value*> args) {
  for (llvm::Value*& a : args) a = AsCompute(a, compute);
  if (!IsFloatingPoint(compute)) {
    const bool u = IsUnsigned(compute);
    if (function == "max") return Maximum(args[0], args[1], false, u);
    if (function == "min") return Minimum(args[0], args[1], false, u);
    if ((function == "abs" && u) || function == "floor" || function == "ceil" ||
        function == "round") {
      return args[0];  // Integers are whole already.
    }
    if (function == "abs") {
      return b_.CreateSelect(
          b_.CreateICmpSLT(args[0], llvm::ConstantInt::get(args[0]->getType(), 0)),
          b_.CreateNeg(args[0]), args[0]);
    }
    if (function == "pow" && compute != DType::kBool) {
      return IntPow(args[0], args[1], u);
    }
    // Other functions of integers: in double, back to the integer type.
    for (llvm::Value*& a : args) a = Convert(a, compute, DType::kF64);
    return Convert(Call(function, DType::kF64, args), DType::kF64, compute);
  }
  llvm::Value* x = args[0];
  if (function == "exp") return Exp(x);
  if (function == "log") return Log(x);
  if (function == "sqrt") return Sqrt(x);
  if (function == "sin") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
  if (function == "cos") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
  if (function == "abs") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  if (function == "floor") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  if (function == "ceil") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  if (function == "round") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
  const bool f32 = x->getType()->isFloatTy();
  if (function == "tanh") return f32 ? TanhF32(x) : LibmCall("tanh", x);
  if (function == "erf") return f32 ? ErfF32(x) : LibmCall("erf", x);
  // The rest have no intrinsic: libm's (asinf, ..., or the double ones),
  // called one element at a time. Not a builtin, so that the vectorizer
  // does not swap in libmvec's variants, some of which only newer glibcs
  // have (a compiled model file must load where libm has the scalar ones).
  if (function == "tan" || function == "asin" || function == "acos" || function == "atan" ||
      function == "sinh" || function == "cosh" || function == "asinh" ||
      function == "acosh" || function == "atanh") {
    llvm::Value* call = LibmCall(function, x);
    llvm::cast<llvm::CallInst>(call)->addFnAttr(llvm::Attribute::NoBuiltin);
    return call;
  }
  if (function == "pow") return Pow(x, args[1]);
  if (function == "max") return Maximum(x, args[1]);
  if (function == "min") return Minimum(x, args[1]);
  // The formula parser admits only the functions above.
  return llvm::PoisonValue::get(x->getType());
}

llvm::Value* IrEmitter::Formula(
    const ScalarExpr& expr, DType compute,
    const absl::flat_hash_map<std::string, llvm::Value*>& env) {
  const bool fp = IsFloatingPoint(compute);
  auto operand = [&](size_t i) {
    return Formula(*expr.operands[i], compute, env);
  };
  switch (expr.kind) {
    case ScalarExpr::Kind::kNumber:
      return Constant(compute, expr.number);
    case ScalarExpr::Kind::kName:
      return env.at(expr.name);
    case ScalarExpr::Kind::kUnary: {
      llvm::Value* a = operand(0);
      if (expr.name == "!") return b_.CreateNot(AsBool(a));
      a = AsCompute(a, compute);
      return fp ? b_.CreateFNeg(a) : b_.CreateNeg(a);
    }
    case ScalarExpr::Kind::kBinary: {
      const std::string& op = expr.name;
      llvm::Value* a = operand(0);
      llvm::Value* c = operand(1);
      if (op == "&&") return b_.CreateAnd(AsBool(a), AsBool(c));
      if (op == "||") return b_.CreateOr(AsBool(a), AsBool(c));
      a = AsCompute(a, compute);
      c = AsCompute(c, compute);
      if (op == "+") return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      if (op == "-") return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      if (op == "*") return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      if (op == "/") return fp ? b_.CreateFDiv(a, c) : b_.CreateSDiv(a, c);
      const bool u = IsUnsigned(compute);
      if (op == "==") return fp ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
      if (op == "!=") return fp ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
      if (op == "<") {
        return fp ? b_.CreateFCmpOLT(a, c)
                  : (u ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c));
      }
      if (op == "<=") {
        return fp ? b_.CreateFCmpOLE(a, c)
                  : (u ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c));
      }
      if (op == ">") {
        return fp ? b_.CreateFCmpOGT(a, c)
                  : (u ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c));
      }
      return fp ? b_.CreateFCmpOGE(a, c)
                : (u ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c));
    }
    case ScalarExpr::Kind::kCall: {
      std::vector<llvm::Value*> args;
      for (size_t i = 0; i < expr.operands.size(); ++i) args.push_back(operand(i));
      return Call(expr.name, compute, std::move(args));
    }
    case ScalarExpr::Kind::kSelect: {
      llvm::Value* c = AsBool(operand(0));
      llvm::Value* a = operand(1);
      llvm::Value* e = operand(2);
      if (a->getType() != e->getType()) {
        a = AsCompute(a, compute);
        e = AsCompute(e, compute);
      }
      return b_.CreateSelect(c, a, e);
    }
  }
  return nullptr;
}

}  // namespace graft::orc
