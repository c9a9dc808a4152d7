#ifndef GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_
#define GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "graph/device.h"

namespace graft::cuda {

// What the code generator and the cache key need to know of a GPU.
struct GpuInfo {
  int index = 0;
  std::string name;        // "NVIDIA H100 80GB HBM3".
  int major = 0, minor = 0;  // Compute capability: 9.0 on Hopper.
  int multiprocessors = 0;
  size_t memory_bytes = 0;
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

// The memory of one GPU, through cudaMalloc and cudaMemcpy.
std::shared_ptr<DeviceAllocator> GpuAllocator(int index);

// Held while a run is captured as a CUDA graph, and around every call that
// may synchronize the device (cudaMalloc, cudaFree, cudaMallocHost,
// cudaFreeHost, synchronous copies, stream creation): such a call in one
// thread invalidates a capture going on in another, which concurrent runs
// at new sizes (each captured on its first run) would otherwise hit.
// Recursive: a capture may reach code that takes it again.
std::recursive_mutex& CaptureExclusion();

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_DEVICE_H_
