#ifndef GRAFT_PASSES_CAST_FLOAT_H_
#define GRAFT_PASSES_CAST_FLOAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "graph/dtype.h"
#include "graph/module.h"

namespace graft::passes {

// Runs a float model in a narrower float type (f16 or bf16), as
// `model.to(torch.bfloat16)` does: every f32 tensor of the module becomes
// `dtype` (SaturatedBFloat16, SaturatedHalf), each f32 input is cast to
// `dtype` where it enters, and each f32 output is cast back to f32, so
// callers keep passing and getting f32.
// Weight-only quantization's dequantization (mul(cast(q, f32), scales),
// both module tensors) casts q to `dtype` instead. Values of other dtypes
// are left alone, and so are f32 values other ops make (an explicit cast
// to f32, of positions or of a mask; a `full` of dtype f32) up to the
// first op with a float result where one meets a `dtype` value: it is cast
// to `dtype` there (once; graft's products take one dtype, and an
// elementwise op would promote the rest of the model back to f32), so the
// model's values keep the narrow type. Where values made from integers
// (positions) meet module tensors only, at an elementwise op or a product
// (a rotary embedding's inv_freq times positions), the op stays f32 and
// reads those tensors' f32 values. Comparisons take such a value as it
// is. The casts it inserts saturate (cast's `saturate`): a finite f32
// value past the narrow type's range, such as a mask of f32's lowest
// made from an integer attention mask, becomes the narrow type's lowest
// rather than -inf (which would turn a wholly masked row's softmax into
// NaN where the f32 model gave finite values); only the cast of an input
// that products alone read does not (they round it as they read it).
// Returns whether anything changed.
absl::StatusOr<bool> CastFloatModule(Module& module, DType dtype);

// What an f32 constant of the model becomes: rounded to nearest even as
// FloatToBFloat16 and FloatToHalf round (NaN kept, made quiet), except that
// a finite value past the narrow type's largest saturates to it rather
// than becoming infinite. Masks hold f32's lowest (torch.finfo's min) or
// -1e9, and a mask of -inf times 0 gives NaN where the f32 model gave 0.
uint16_t SaturatedBFloat16(float f);
uint16_t SaturatedHalf(float f);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_CAST_FLOAT_H_
