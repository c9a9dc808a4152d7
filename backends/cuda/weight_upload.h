#ifndef GRAFT_BACKENDS_CUDA_WEIGHT_UPLOAD_H_
#define GRAFT_BACKENDS_CUDA_WEIGHT_UPLOAD_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace graft::cuda {

// One host-to-GPU copy of UploadThroughPinned.
struct HostToDevice {
  void* dst;  // On the calling thread's current GPU.
  const void* src;
  size_t bytes;
};

// The copies, through two pinned buffers that host threads fill while the
// copy engine drains the other, then one wait. A pageable cudaMemcpy
// stages through the driver's buffer on the calling thread alone, about
// 7 GB/s on the device pool's hosts: the weights' upload was most of a
// compile cache hit. The buffers (2 x 8 MiB) are allocated on the first
// upload of more than one chunk and kept for the process; smaller uploads
// copy directly. Call under CaptureExclusion (it allocates pinned memory).
absl::Status UploadThroughPinned(absl::Span<const HostToDevice> copies);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_WEIGHT_UPLOAD_H_
