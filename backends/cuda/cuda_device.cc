#include "backends/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_status.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

absl::StatusOr<GpuInfo> Probe(int index) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice ||
      error == cudaErrorInitializationError) {
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        "no usable NVIDIA GPU (", cudaGetErrorString(error),
        "): the CUDA driver is missing or sees no device"));
  }
  RETURN_IF_ERROR(GRAFT_CUDA(error));
  if (count == 0) return absl::FailedPreconditionError("no NVIDIA GPU on this machine");
  if (index < 0 || index >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU ", index, " does not exist; this machine has ", count));
  }
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(GRAFT_CUDA(cudaGetDeviceProperties(&prop, index)));
  GpuInfo info;
  info.index = index;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.memory_bytes = prop.totalGlobalMem;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaDriverGetVersion(&info.driver_version)));
  RETURN_IF_ERROR(GRAFT_CUDA(cudaRuntimeGetVersion(&info.runtime_version)));
  return info;
}

// Sets the calling thread's current device for one allocator call.
absl::Status Use(int index) { return GRAFT_CUDA(cudaSetDevice(index)); }

class CudaAllocator : public DeviceAllocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}

  Device device() const override { return {DeviceKind::kCuda, index_}; }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    RETURN_IF_ERROR(Use(index_));
    void* p = nullptr;
    // A zero-byte allocation still gets an address of its own.
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMalloc(&p, bytes == 0 ? 1 : bytes)));
    return p;
  }
  void Free(void* data) override {
    if (Use(index_).ok()) cudaFree(data);
  }
  absl::Status CopyToHost(const void* device_src, void* host_dst,
                          size_t bytes) override {
    RETURN_IF_ERROR(Use(index_));
    return GRAFT_CUDA(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
  }
  absl::Status CopyFromHost(const void* host_src, void* device_dst,
                            size_t bytes) override {
    RETURN_IF_ERROR(Use(index_));
    return GRAFT_CUDA(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
  }

 private:
  int index_;
};

}  // namespace

std::string GpuInfo::Arch() const { return absl::StrCat("sm_", major, minor); }

std::string GpuInfo::Identity() const {
  return absl::StrCat(name, " ", Arch(), " driver ", driver_version, " runtime ",
                      runtime_version);
}

absl::StatusOr<GpuInfo> ProbeGpu(int index) {
  static std::mutex mu;
  static std::map<int, absl::StatusOr<GpuInfo>>* probed =
      new std::map<int, absl::StatusOr<GpuInfo>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = probed->find(index);
  if (it == probed->end()) it = probed->emplace(index, Probe(index)).first;
  return it->second;
}

std::shared_ptr<DeviceAllocator> GpuAllocator(int index) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<DeviceAllocator>>* allocators =
      new std::map<int, std::shared_ptr<DeviceAllocator>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& a = (*allocators)[index];
  if (a == nullptr) a = std::make_shared<CudaAllocator>(index);
  return a;
}

}  // namespace graft::cuda
