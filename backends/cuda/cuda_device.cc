#include "backends/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <algorithm>
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
  info.l2_cache_bytes = prop.l2CacheSize;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaDriverGetVersion(&info.driver_version)));
  RETURN_IF_ERROR(GRAFT_CUDA(cudaRuntimeGetVersion(&info.runtime_version)));
  return info;
}

// Sets the calling thread's current device for one allocator call.
absl::Status Use(int index) { return GRAFT_CUDA(cudaSetDevice(index)); }

// Keeps freed blocks by size and hands them out again, as PyTorch's caching
// allocator does: cudaMalloc and cudaFree synchronize the device and cost
// tens of microseconds, more than a small model's whole run.
class CudaAllocator : public DeviceAllocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}

  Device device() const override { return {DeviceKind::kCuda, index_}; }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    const size_t size = RoundUp(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        sizes_[p] = size;
        return p;
      }
    }
    RETURN_IF_ERROR(Use(index_));
    void* p = nullptr;
    {
      std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
      RETURN_IF_ERROR(GRAFT_CUDA(cudaMalloc(&p, size)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[p] = size;
    return p;
  }
  void Free(void* data) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(data);
    if (it == sizes_.end()) return;
    free_.emplace(it->second, data);
    sizes_.erase(it);
  }
  // Both copies go on the device's stream and wait for it: a copy out
  // sees what the runs queued before it wrote, a copy in lands after they
  // read what the block held.
  absl::Status CopyToHost(const void* device_src, void* host_dst,
                          size_t bytes) override {
    return CopyInOrder(host_dst, device_src, bytes, cudaMemcpyDeviceToHost);
  }
  absl::Status CopyFromHost(const void* host_src, void* device_dst,
                            size_t bytes) override {
    return CopyInOrder(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
  }
  // Waits for every run queued on this GPU (torch.cuda.synchronize()).
  absl::Status Synchronize() override {
    return OnDeviceStream(
        [](cudaStream_t stream) { return GRAFT_CUDA(cudaStreamSynchronize(stream)); });
  }

 private:
  // `work(stream)` on this device's stream, the calling thread's current
  // device left as it was.
  template <typename Work>
  absl::Status OnDeviceStream(Work&& work) {
    int current = 0;
    RETURN_IF_ERROR(GRAFT_CUDA(cudaGetDevice(&current)));
    ASSIGN_OR_RETURN(cudaStream_t stream, DeviceStream(index_));
    RETURN_IF_ERROR(Use(index_));
    const absl::Status done = work(stream);
    RETURN_IF_ERROR(Use(current));
    return done;
  }

  // (The device's stream holds no collectives, which wait for other ranks'
  // threads: a copy that waits for it, under CaptureExclusion or not,
  // always ends.)
  absl::Status CopyInOrder(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    return OnDeviceStream([&](cudaStream_t stream) {
      {
        std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
        RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, stream)));
      }
      return GRAFT_CUDA(cudaStreamSynchronize(stream));
    });
  }

  // Sizes in steps of 512 bytes (small) or 2 MiB (large), so blocks fit
  // the next request of about the same size.
  static size_t RoundUp(size_t bytes) {
    const size_t step = bytes < (1u << 20) ? 512 : (2u << 20);
    return std::max<size_t>(step, (bytes + step - 1) / step * step);
  }

  int index_;
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::map<void*, size_t> sizes_;
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

std::recursive_mutex& CaptureExclusion() {
  static std::recursive_mutex* const mu = new std::recursive_mutex();
  return *mu;
}

absl::StatusOr<cudaStream_t> DeviceStream(int index) {
  static std::mutex mu;
  static std::map<int, cudaStream_t>* streams = new std::map<int, cudaStream_t>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams->find(index);
  if (it != streams->end()) return it->second;
  int current = 0;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaGetDevice(&current)));
  RETURN_IF_ERROR(Use(index));
  cudaStream_t stream = nullptr;
  absl::Status made;
  {
    std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
    made = GRAFT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  (void)Use(current);
  RETURN_IF_ERROR(made);
  streams->emplace(index, stream);
  return stream;
}

absl::StatusOr<bool> DeviceIdle(int index) {
  ASSIGN_OR_RETURN(cudaStream_t stream, DeviceStream(index));
  const cudaError_t state = cudaStreamQuery(stream);
  if (state == cudaErrorNotReady) return false;
  RETURN_IF_ERROR(GRAFT_CUDA(state));
  return true;
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
