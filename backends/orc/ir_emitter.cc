#include "backends/orc/ir_emitter.h"

#include <cmath>
#include <limits>
#include <utility>

#include "llvm/IR/Intrinsics.h"

namespace graft::orc {
namespace {

bool IsUnsigned(DType dtype) { return dtype == DType::kU8; }

}  // namespace

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = s;
    s *= dims[k];
  }
  return strides;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> own = ContiguousStrides(dims);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t shift = out.size() - dims.size();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] != 1) strides[shift + k] = own[k];
  }
  return strides;
}

IrEmitter::IrEmitter(llvm::LLVMContext& context, llvm::Module& module)
    : context_(context), module_(module), b_(context) {}

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
  if (from_float) {
    // Saturating, so an out-of-range value is a defined number, not poison.
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
                                         int num_pointers) {
  std::vector<llvm::Type*> params(num_pointers, b_.getPtrTy());
  auto* type = llvm::FunctionType::get(b_.getInt32Ty(), params, false);
  auto* f = llvm::Function::Create(type, llvm::Function::InternalLinkage,
                                   name, module_);
  for (llvm::Argument& a : f->args()) {
    a.addAttr(llvm::Attribute::NoAlias);
    a.addAttr(llvm::Attribute::NoCapture);
  }
  f->addFnAttr(llvm::Attribute::NoUnwind);
  b_.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", f));
  return f;
}

void IrEmitter::Loop(int64_t n, const std::function<void(llvm::Value*)>& body) {
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
  Loops(dims, [&](const std::vector<llvm::Value*>& index) {
    std::vector<llvm::Value*> loaded;
    for (const View& v : ins) loaded.push_back(Load(v, index));
    Store(out, index, f(loaded));
  });
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
  return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
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
    llvm::FastMathFlags flags;
    flags.setAllowReassoc();
    i->setFastMathFlags(flags);
  }
}

}  // namespace

llvm::Value* IrEmitter::ReassocAdd(llvm::Value* a, llvm::Value* b) {
  if (!a->getType()->isFloatingPointTy()) return b_.CreateAdd(a, b);
  llvm::Value* sum = b_.CreateFAdd(a, b);
  AllowReassoc(sum);
  return sum;
}

llvm::Value* IrEmitter::Maximum(llvm::Value* a, llvm::Value* b, bool reassoc) {
  if (!a->getType()->isFloatingPointTy()) {
    return b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b);
  }
  // NaN-propagating, as torch.maximum.
  llvm::Value* v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, b);
  if (reassoc) AllowReassoc(v);
  return v;
}

llvm::Value* IrEmitter::Minimum(llvm::Value* a, llvm::Value* b, bool reassoc) {
  if (!a->getType()->isFloatingPointTy()) {
    return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b);
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

llvm::Value* IrEmitter::Call(const std::string& function, DType compute,
                             std::vector<llvm::Value*> args) {
  for (llvm::Value*& a : args) a = AsCompute(a, compute);
  if (!IsFloatingPoint(compute)) {
    if (function == "max") return Maximum(args[0], args[1]);
    if (function == "min") return Minimum(args[0], args[1]);
    if (function == "abs") {
      return b_.CreateSelect(
          b_.CreateICmpSLT(args[0], llvm::ConstantInt::get(args[0]->getType(), 0)),
          b_.CreateNeg(args[0]), args[0]);
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
  if (function == "tanh") return LibmCall("tanh", x);
  if (function == "erf") return LibmCall("erf", x);
  if (function == "pow") {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, args[1]);
  }
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
