#ifndef GRAFT_BACKENDS_ORC_FLOAT8_IR_H_
#define GRAFT_BACKENDS_ORC_FLOAT8_IR_H_

#include "llvm/IR/IRBuilder.h"

namespace graft::orc {

// f8e4m3 (PyTorch's float8_e4m3fn) in generated code, bit for bit as
// graph/tensor.h's Float8E4M3ToFloat and DoubleToFloat8E4M3: an i8 of
// its bits to a double (0x7f and 0xff are NaN), and a double to the i8
// of the nearest value, ties to even, saturating at +-448, NaN to NaN
// with its sign.
llvm::Value* Float8E4M3ToDouble(llvm::IRBuilder<>& b, llvm::Value* bits);
llvm::Value* DoubleToFloat8E4M3(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_FLOAT8_IR_H_
