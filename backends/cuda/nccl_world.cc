#include "backends/cuda/nccl_world.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "support/status_macros.h"

#ifdef GRAFT_CUDA_WITH_NCCL
#include <nccl.h>
#endif

namespace graft::cuda {

#ifdef GRAFT_CUDA_WITH_NCCL
namespace {

// The NCCL functions graft calls, from the library dlopen found.
struct NcclApi {
  decltype(&::ncclCommInitAll) comm_init_all = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
};

absl::StatusOr<const NcclApi*> LoadNccl() {
  static const absl::StatusOr<NcclApi> api = []() -> absl::StatusOr<NcclApi> {
    std::vector<std::string> candidates;
    if (const char* path = std::getenv("GRAFT_NCCL_LIBRARY")) candidates.push_back(path);
    candidates.push_back("libnccl.so.2");
#ifdef GRAFT_NCCL_DEFAULT_LIBRARY
    candidates.push_back(GRAFT_NCCL_DEFAULT_LIBRARY);
#endif
    void* library = nullptr;
    std::string tried;
    for (const std::string& c : candidates) {
      library = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) break;
      absl::StrAppend(&tried, tried.empty() ? "" : "; ", dlerror());
    }
    if (library == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "NCCL is not loadable (set GRAFT_NCCL_LIBRARY to libnccl.so.2): ", tried));
    }
    NcclApi a;
    bool all = true;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library, name));
      all = all && fn != nullptr;
    };
    load(a.comm_init_all, "ncclCommInitAll");
    load(a.comm_destroy, "ncclCommDestroy");
    load(a.comm_abort, "ncclCommAbort");
    load(a.all_reduce, "ncclAllReduce");
    load(a.all_gather, "ncclAllGather");
    load(a.error_string, "ncclGetErrorString");
    load(a.group_start, "ncclGroupStart");
    load(a.group_end, "ncclGroupEnd");
    if (!all) return absl::FailedPreconditionError("the NCCL library lacks a function graft calls");
    return a;
  }();
  if (!api.ok()) return api.status();
  return &*api;
}

absl::Status CheckNccl(ncclResult_t result, absl::string_view call) {
  if (result == ncclSuccess) return absl::OkStatus();
  const NcclApi* api = *LoadNccl();
  return absl::InternalError(absl::StrCat(call, " failed: ", api->error_string(result)));
}

absl::StatusOr<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI32: return ncclInt32;
    case DType::kI64: return ncclInt64;
    case DType::kI8: return ncclInt8;
    case DType::kU8: return ncclUint8;
    case DType::kBool:
    case DType::kF8E4M3: return ncclUint8;  // One byte each; a gather moves them as they are.
    default:
      return absl::UnimplementedError(
          absl::StrCat("NCCL has no collectives on ", DTypeName(dtype)));
  }
}

ncclComm_t Comm(void* comm) { return static_cast<ncclComm_t>(comm); }

// One small all-reduce on every rank at once (a group call: one thread
// drives every GPU here). NCCL connects its ranks at their first
// collective, which cannot happen while a run's CUDA graph is captured.
absl::Status WarmUp(const NcclApi& api, const std::vector<ncclComm_t>& comms) {
  const int world = static_cast<int>(comms.size());
  std::vector<void*> buffers(world, nullptr);
  absl::Status status;
  for (int r = 0; r < world && status.ok(); ++r) {
    status = GRAFT_CUDA(cudaSetDevice(r));
    if (status.ok()) status = GRAFT_CUDA(cudaMalloc(&buffers[r], 256));
    if (status.ok()) status = GRAFT_CUDA(cudaMemset(buffers[r], 0, 256));
  }
  if (status.ok()) {
    status = CheckNccl(api.group_start(), "ncclGroupStart");
    for (int r = 0; r < world && status.ok(); ++r) {
      status = GRAFT_CUDA(cudaSetDevice(r));
      if (status.ok()) {
        status = CheckNccl(api.all_reduce(buffers[r], buffers[r], 64, ncclFloat32, ncclSum,
                                          comms[r], nullptr),
                           "ncclAllReduce");
      }
    }
    absl::Status ended = CheckNccl(api.group_end(), "ncclGroupEnd");
    if (status.ok()) status = ended;
  }
  for (int r = 0; r < world; ++r) {
    (void)cudaSetDevice(r);
    if (status.ok()) status = GRAFT_CUDA(cudaDeviceSynchronize());
    if (buffers[r] != nullptr) (void)cudaFree(buffers[r]);
  }
  return status;
}

}  // namespace

NcclCommunicator::NcclCommunicator(int rank, int world_size, void* comm)
    : Communicator(rank, world_size), comm_(comm), device_(rank) {}

NcclCommunicator::~NcclCommunicator() {
  void* comm = comm_.load();
  if (comm != nullptr) (void)(*LoadNccl())->comm_destroy(Comm(comm));
}

template <typename Enqueue>
absl::Status NcclCommunicator::EnqueueWith(Enqueue enqueue) {
  // Counted before the handle is read: an Abort that takes the handle
  // after this read sees the count and waits (both sequentially
  // consistent).
  enqueuing_.fetch_add(1);
  void* comm = comm_.load();
  absl::Status status =
      comm == nullptr ? absl::AbortedError("the NCCL world was aborted") : enqueue(comm);
  enqueuing_.fetch_sub(1);
  return status;
}

absl::Status NcclCommunicator::AllReduceSum(const void* in, void* out, size_t count, DType dtype,
                                            cudaStream_t stream) {
  ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(dtype));
  ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  return EnqueueWith([&](void* comm) {
    return CheckNccl(api->all_reduce(in, out, count, type, ncclSum, Comm(comm), stream),
                     "ncclAllReduce");
  });
}

absl::Status NcclCommunicator::AllGather(const void* in, void* out, size_t count, DType dtype,
                                         cudaStream_t stream) {
  ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(dtype));
  ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  return EnqueueWith([&](void* comm) {
    return CheckNccl(api->all_gather(in, out, count, type, Comm(comm), stream), "ncclAllGather");
  });
}

absl::StatusOr<Tensor> NcclCommunicator::OnDevice(const Tensor& tensor,
                                                  std::vector<int64_t> out_dims, bool gather) {
  RETURN_IF_ERROR(GRAFT_CUDA(cudaSetDevice(device_)));
  Tensor out(tensor.dtype(), std::move(out_dims));
  void* in_device = nullptr;
  void* out_device = nullptr;
  cudaStream_t stream = nullptr;
  absl::Status status = GRAFT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (status.ok()) status = GRAFT_CUDA(cudaMalloc(&in_device, tensor.NumBytes() + 1));
  if (status.ok()) status = GRAFT_CUDA(cudaMalloc(&out_device, out.NumBytes() + 1));
  if (status.ok()) {
    status = GRAFT_CUDA(cudaMemcpy(in_device, tensor.raw_data(), tensor.NumBytes(),
                                   cudaMemcpyHostToDevice));
  }
  if (status.ok()) {
    status = gather ? AllGather(in_device, out_device, tensor.NumElements(), tensor.dtype(), stream)
                    : AllReduceSum(in_device, out_device, tensor.NumElements(), tensor.dtype(),
                                   stream);
  }
  if (status.ok()) status = GRAFT_CUDA(cudaStreamSynchronize(stream));
  if (status.ok()) {
    status = GRAFT_CUDA(cudaMemcpy(out.raw_data(), out_device, out.NumBytes(),
                                   cudaMemcpyDeviceToHost));
  }
  if (in_device != nullptr) (void)cudaFree(in_device);
  if (out_device != nullptr) (void)cudaFree(out_device);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  RETURN_IF_ERROR(status);
  return out;
}

absl::StatusOr<Tensor> NcclCommunicator::AllReduceSum(const Tensor& tensor) {
  ASSIGN_OR_RETURN(Tensor host, CopyToHost(tensor));
  return OnDevice(host, host.dims(), /*gather=*/false);
}

absl::StatusOr<Tensor> NcclCommunicator::AllGather(const Tensor& tensor, int64_t dim) {
  ASSIGN_OR_RETURN(Tensor host, CopyToHost(tensor));
  for (int64_t d = 0; d < dim; ++d) {
    if (host.dim(d) != 1) {
      return absl::UnimplementedError(absl::StrCat(
          "NCCL gathers along the first dim larger than 1; got dim ", dim, " of ",
          host.TypeString()));
    }
  }
  std::vector<int64_t> dims = host.dims();
  dims[dim] *= world_size();
  return OnDevice(host, dims, /*gather=*/true);
}

absl::Status NcclCommunicator::Revive() {
  if (comm_ != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "a failed run aborted the NCCL world (NCCL communicators end with an abort): "
      "compile the model again");
}

void NcclCommunicator::Abort() {
  // Taken once: a second Abort, or a rank's next collective, sees null.
  void* comm = comm_.exchange(nullptr);
  if (comm == nullptr) return;
  // A rank's thread that read the handle before it was taken may be in
  // the middle of enqueuing on it: let that call end before the abort
  // frees the communicator. One that blocks on a dead peer ends only by
  // the abort, so the wait is bounded (100 ms).
  for (int i = 0; i < 1000 && enqueuing_.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  (void)(*LoadNccl())->comm_abort(Comm(comm));
}

absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateNcclWorld(int world_size) {
  // The probe's message says plainly when there is no driver or GPU.
  RETURN_IF_ERROR(ProbeGpu(0).status());
  int devices = 0;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaGetDeviceCount(&devices)));
  if (world_size < 1 || world_size > devices) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a world of ", world_size, " GPUs needs as many; this machine has ", devices));
  }
  ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  std::vector<ncclComm_t> comms(world_size);
  std::vector<int> list(world_size);
  for (int r = 0; r < world_size; ++r) list[r] = r;
  RETURN_IF_ERROR(CheckNccl(api->comm_init_all(comms.data(), world_size, list.data()),
                            "ncclCommInitAll"));
  absl::Status warm = WarmUp(*api, comms);
  if (!warm.ok()) {
    for (ncclComm_t comm : comms) (void)api->comm_destroy(comm);
    return warm;
  }
  std::vector<std::shared_ptr<Communicator>> world;
  for (int r = 0; r < world_size; ++r) {
    world.push_back(std::shared_ptr<Communicator>(new NcclCommunicator(r, world_size, comms[r])));
  }
  return world;
}

#else  // !GRAFT_CUDA_WITH_NCCL: no world is ever made, so no communicator exists.

namespace {
absl::Status NoNccl() {
  return absl::UnimplementedError("graft was built without NCCL's header (nccl.h)");
}
}  // namespace

NcclCommunicator::NcclCommunicator(int rank, int world_size, void* comm)
    : Communicator(rank, world_size), comm_(comm), device_(rank) {}
NcclCommunicator::~NcclCommunicator() = default;
absl::Status NcclCommunicator::AllReduceSum(const void*, void*, size_t, DType, cudaStream_t) {
  return NoNccl();
}
absl::Status NcclCommunicator::AllGather(const void*, void*, size_t, DType, cudaStream_t) {
  return NoNccl();
}
absl::StatusOr<Tensor> NcclCommunicator::AllReduceSum(const Tensor&) { return NoNccl(); }
absl::StatusOr<Tensor> NcclCommunicator::AllGather(const Tensor&, int64_t) { return NoNccl(); }
void NcclCommunicator::Abort() {}
absl::Status NcclCommunicator::Revive() { return NoNccl(); }

absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateNcclWorld(int) {
  return NoNccl();
}

#endif

}  // namespace graft::cuda
