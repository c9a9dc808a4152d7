#ifndef GRAFT_GRAPH_DEVICE_H_
#define GRAFT_GRAPH_DEVICE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graft {

enum class DeviceKind : unsigned char { kCpu, kCuda };

// Where a tensor's bytes live: the host (kCpu, index 0) or one device of a
// backend's kind ("cuda:1"). Host code may read only host tensors; bytes move
// between devices by explicit copies (CopyToHost, CopyToDevice).
struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  bool is_host() const { return kind == DeviceKind::kCpu; }
  // "cpu", "cuda:0".
  std::string ToString() const;
  bool operator==(const Device&) const = default;
};

// The memory of one device, provided by the backend that owns the device
// (the CUDA backend's allocator calls cudaMalloc and cudaMemcpy). Storage
// allocated through it frees through it. Implementations are thread-safe.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;

  virtual Device device() const = 0;
  // `bytes` may be 0; the result is then still a valid, unique pointer.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* data) = 0;
  virtual absl::Status CopyToHost(const void* device_src, void* host_dst,
                                  size_t bytes) = 0;
  virtual absl::Status CopyFromHost(const void* host_src, void* device_dst,
                                    size_t bytes) = 0;
  // Waits until the device has done the work queued on it (a CUDA run that
  // keeps its outputs on the device may return before they are computed;
  // copies wait by themselves). For timing, as torch.cuda.synchronize().
  virtual absl::Status Synchronize() { return absl::OkStatus(); }
};

}  // namespace graft

#endif  // GRAFT_GRAPH_DEVICE_H_
