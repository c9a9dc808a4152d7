#ifndef GRAFT_BACKENDS_INTERP_KERNELS_FUSED_H_
#define GRAFT_BACKENDS_INTERP_KERNELS_FUSED_H_

#include "backends/interp/kernel.h"

namespace graft::interp {

// Adds kernels for the fused ops the passes library defines
// (graph/fused_ops.h, docs/ops.md "Fused ops"): graft::linear_activation.
void RegisterFusedKernels(KernelTable& table);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_KERNELS_FUSED_H_
