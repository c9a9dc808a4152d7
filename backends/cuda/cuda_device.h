#ifndef GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_
#define GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "graph/device.h"

// cuda_runtime_api.h's stream, declared as it does: code that includes
// this file need not see the CUDA headers.
typedef struct CUstream_st* cudaStream_t;

namespace graft::cuda {

// What the code generator and the cache key need to know of a GPU.
struct GpuInfo {
  int index = 0;
  std::string name;        // "NVIDIA H100 80GB HBM3".
  int major = 0, minor = 0;  // Compute capability: 9.0 on Hopper.
  int multiprocessors = 0;
  size_t memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int driver_version = 0;  // 13000 for CUDA 13.0.
  int runtime_version = 0;

  // "sm_90": the architecture NVRTC compiles for.
  std::string Arch() const;
  // Everything that decides the compiled code, for cache keys.
  std::string Identity() const;
};

// The GPU `index`, or why there is none: no driver (libcuda.so.1 is
// loaded at run time, so a machine without one runs graft's CPU parts),
// no device, or an index past the last device. The probe runs once per
// index; tests skip with its message.
absl::StatusOr<GpuInfo> ProbeGpu(int index = 0);

// The memory of one GPU: cudaMalloc'd blocks kept for reuse, and copies
// ordered on DeviceStream(index) (each waits for the work queued before it).
std::shared_ptr<DeviceAllocator> GpuAllocator(int index);

// The one stream on which every run on GPU `index` is launched, as
// PyTorch's default stream: runs that keep their outputs on the device
// return once queued, and whatever reads those outputs next (a run, a
// copy to the host) is ordered after them. So a block the allocator hands
// out again is never written while a queued run may still read it.
// (Programs with collectives run on a stream of their own, after what is
// queued here, and wait for it: a collective must never sit here, where
// a copy would wait for other ranks.) Created on first use, never
// destroyed.
absl::StatusOr<cudaStream_t> DeviceStream(int index);
// Whether everything queued on DeviceStream(index) has finished.
absl::StatusOr<bool> DeviceIdle(int index);

// Held while a run is captured as a CUDA graph, and around every call that
// may synchronize the device (cudaMalloc, cudaFree, cudaMallocHost,
// cudaFreeHost, synchronous copies, stream creation): such a call in one
// thread invalidates a capture going on in another, which concurrent runs
// at new sizes (each captured on its first run) would otherwise hit.
// Recursive: a capture may reach code that takes it again.
std::recursive_mutex& CaptureExclusion();

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_
