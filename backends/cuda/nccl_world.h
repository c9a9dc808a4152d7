#ifndef GRAFT_BACKENDS_CUDA_NCCL_WORLD_H_
#define GRAFT_BACKENDS_CUDA_NCCL_WORLD_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/communicator.h"
#include "graph/dtype.h"

// cudaStream_t, without the CUDA headers (for files that include this one
// without the toolkit on their include path).
struct CUstream_st;

namespace graft::cuda {

// A rank of a world of GPUs in this process, linked by NCCL: rank r on
// GPU r. The CUDA backend enqueues its collectives on a run's stream (and
// so into the run's CUDA graph); the host methods, for the interpreter's
// share of a rank (a graph break), go through the GPU.
//
// NCCL is loaded when a world is first made (dlopen of
// $GRAFT_NCCL_LIBRARY, else libnccl.so.2 from the loader's path or the
// CUDA Toolkit graft was built with), so graft starts on machines without
// it.
class NcclCommunicator : public Communicator {
 public:
  ~NcclCommunicator() override;

  int device() const { return device_; }

  // Sums `count` elements of `dtype` over the ranks into `out` (which may be
  // `in`), on `stream` of this rank's GPU.
  absl::Status AllReduceSum(const void* in, void* out, size_t count, DType dtype,
                            CUstream_st* stream);
  // Every rank's `count` elements, rank after rank, into `out`.
  absl::Status AllGather(const void* in, void* out, size_t count, DType dtype,
                         CUstream_st* stream);

  absl::StatusOr<Tensor> AllReduceSum(const Tensor& tensor) override;
  absl::StatusOr<Tensor> AllGather(const Tensor& tensor, int64_t dim) override;
  void Abort() override;
  absl::Status Revive() override;

 private:
  friend absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateNcclWorld(int);
  NcclCommunicator(int rank, int world_size, void* comm);

  // `enqueue(comm)` with the communicator, counted in enqueuing_; Aborted
  // once the world is.
  template <typename Enqueue>
  absl::Status EnqueueWith(Enqueue enqueue);
  // Runs `collective` on a stream of its own over device copies of
  // `tensor`, into a device buffer of `out_bytes`; returns the bytes.
  absl::StatusOr<Tensor> OnDevice(const Tensor& tensor, std::vector<int64_t> out_dims,
                                  bool gather);

  // ncclComm_t; null once aborted. Atomic: another rank's thread aborts
  // the world (ShardedExecutable) while this rank's thread may enqueue.
  std::atomic<void*> comm_;
  // Collectives being enqueued now, which Abort lets finish before it
  // frees the communicator (EnqueueWith).
  std::atomic<int> enqueuing_{0};
  int device_;
};

// One communicator per GPU 0..world_size-1, or why not (too few GPUs, no
// NCCL, graft built without NCCL's header).
absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateNcclWorld(int world_size);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_NCCL_WORLD_H_
