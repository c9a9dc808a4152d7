#ifndef GRAFT_BACKENDS_ORC_IR_EMITTER_H_
#define GRAFT_BACKENDS_ORC_IR_EMITTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/strided_view.h"
#include "graph/dtype.h"
#include "graph/scalar_formula.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

namespace graft::orc {

// Elements of a buffer as seen from an index space: element (i0, i1, ...)
// is at base + offset + sum(ik * strides[k]) (in elements). A stride of 0
// broadcasts.
struct View {
  llvm::Value* base = nullptr;
  DType dtype = DType::kF32;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// The building blocks of generated kernels: loops, element access, dtype
// conversions and scalar formulas. Values in registers: floats as float or
// double, integers as iN of their width, bool as i1.
class IrEmitter {
 public:
  IrEmitter(llvm::LLVMContext& context, llvm::Module& module);

  llvm::IRBuilder<>& b() { return b_; }
  llvm::LLVMContext& context() { return context_; }
  llvm::Module& module() { return module_; }

  llvm::Type* StorageType(DType dtype);   // bool: i8.
  llvm::Type* RegisterType(DType dtype);  // bool: i1.
  llvm::Value* Constant(DType dtype, double value);
  llvm::Value* Convert(llvm::Value* v, DType from, DType to);

  // A new internal function `i32 name(ptr noalias, ...)`, with the
  // builder at its start; `range` adds two i64 parameters after the
  // pointers, the part [begin, end) of its partitioned loop (below).
  llvm::Function* BeginFunction(const std::string& name, int num_pointers,
                                bool range = false);

  // For a step split over threads: the next top-level loop of the function
  // being emitted runs over [begin, end) of its iterations instead of all
  // of them. EndPartition says what came of it: the loop's full trip count
  // (the range the caller splits), nullopt when no loop was emitted (the
  // code ignores the range), or an error when the function had another
  // top-level loop, which every part would run whole.
  void PartitionNextLoop(llvm::Value* begin, llvm::Value* end);
  absl::StatusOr<std::optional<int64_t>> EndPartition();

  // for i in [0, n): body(i). n >= 1.
  void Loop(int64_t n, const std::function<void(llvm::Value*)>& body);
  // for i in [begin, end): body(i); nothing when end <= begin.
  void LoopBetween(llvm::Value* begin, llvm::Value* end,
                   const std::function<void(llvm::Value*)>& body);
  // Nested loops over `dims` (none when any is 0).
  void Loops(const std::vector<int64_t>& dims,
             const std::function<void(const std::vector<llvm::Value*>&)>& body);

  llvm::Value* Offset(const View& view, const std::vector<llvm::Value*>& index);
  llvm::Value* Load(const View& view, const std::vector<llvm::Value*>& index);
  void Store(const View& view, const std::vector<llvm::Value*>& index,
             llvm::Value* value);
  llvm::Value* LoadAt(llvm::Value* base, DType dtype, llvm::Value* offset);
  void StoreAt(llvm::Value* base, DType dtype, llvm::Value* offset,
               llvm::Value* value);

  // out[i] = f(in0[i], in1[i], ...) over `dims`, each value loaded in its
  // register type. The loops go in the order of the output's memory (its
  // strides, largest first), and adjacent dims that every view walks
  // contiguously are merged, so the innermost loop is as long as it can be.
  void Map(std::vector<int64_t> dims, View out, std::vector<View> ins,
           const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& f);

  // A scalar stack slot in the function's entry block.
  llvm::Value* Slot(DType dtype, llvm::Value* initial);

  // Evaluates a pointwise formula in `compute` (its operands in `env`,
  // already in compute's register type); the result is in compute's
  // register type or i1 (comparisons).
  llvm::Value* Formula(const ScalarExpr& expr, DType compute,
                       const absl::flat_hash_map<std::string, llvm::Value*>& env);
  // v (compute type or i1) as compute type / as i1.
  llvm::Value* AsCompute(llvm::Value* v, DType compute);
  llvm::Value* AsBool(llvm::Value* v);

  // Calls of math functions in register types.
  llvm::Value* Exp(llvm::Value* x);
  llvm::Value* Log(llvm::Value* x);
  llvm::Value* Sqrt(llvm::Value* x);
  // Integers compare as signed unless `is_unsigned` (u8); i1 (bool) always
  // compares as unsigned, so that true > false.
  llvm::Value* Maximum(llvm::Value* a, llvm::Value* b, bool reassoc = false,
                       bool is_unsigned = false);
  // NaN-propagating maximum of floats that may return either zero of
  // -0 and +0: x86's vmaxps and a NaN check (three instructions where
  // llvm.maximum, which orders signed zeros, takes six). For pooling
  // windows, where PyTorch's result for mixed zeros depends on the order.
  llvm::Value* MaximumAnyZero(llvm::Value* a, llvm::Value* b, bool is_unsigned);
  llvm::Value* Minimum(llvm::Value* a, llvm::Value* b, bool reassoc = false,
                       bool is_unsigned = false);
  llvm::Value* ReassocAdd(llvm::Value* a, llvm::Value* b);

 private:
  llvm::Value* Call(const std::string& function, DType compute,
                    std::vector<llvm::Value*> args);
  llvm::Value* LibmCall(const std::string& name, llvm::Value* x);
  llvm::Value* OddRational(llvm::Value* x, double clamp, double saturate,
                           const std::vector<double>& numerator,
                           const std::vector<double>& denominator);
  llvm::Value* TanhF32(llvm::Value* x);
  llvm::Value* ExpF32(llvm::Value* x);
  llvm::Value* ErfF32(llvm::Value* x);
  llvm::Value* Pow(llvm::Value* x, llvm::Value* y);
  // x^y of integers by squaring, wrapping on overflow as the interpreter's
  // does (through double it would be inexact past 2^53 and saturate).
  llvm::Value* IntPow(llvm::Value* x, llvm::Value* y, bool is_unsigned);

  llvm::LLVMContext& context_;
  llvm::Module& module_;
  llvm::IRBuilder<> b_;
  // PartitionNextLoop's state: the range, loops open now, the partitioned
  // loop's trip count once emitted, and whether a second top-level loop
  // followed it.
  llvm::Value* part_begin_ = nullptr;
  llvm::Value* part_end_ = nullptr;
  int loop_depth_ = 0;
  std::optional<int64_t> part_extent_;
  bool part_broken_ = false;
};

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_IR_EMITTER_H_
