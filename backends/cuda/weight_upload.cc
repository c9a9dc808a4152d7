#include "backends/cuda/weight_upload.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_status.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;
// Host threads split a chunk's copy into pieces of at least this size.
constexpr int64_t kPieceBytes = int64_t{1} << 20;

// The pinned buffers, one upload at a time.
struct Staging {
  std::mutex mu;
  char* buffers[2] = {nullptr, nullptr};
};

Staging& TheStaging() {
  static Staging* const staging = new Staging();
  return *staging;
}

// A stream and the two buffers' events for one upload, waited for and
// destroyed whatever happens: the copy engine must be done reading the
// buffers before the next upload refills them.
class UploadStream {
 public:
  absl::Status Create() {
    RETURN_IF_ERROR(GRAFT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)));
    for (cudaEvent_t& e : drained_) {
      RETURN_IF_ERROR(GRAFT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)));
    }
    return absl::OkStatus();
  }
  ~UploadStream() {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : drained_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // Buffer b's chunk: wait until its last copy is done, fill, copy.
  absl::Status Send(char* buffer, int b, void* dst, const char* src, size_t n) {
    if (used_[b]) RETURN_IF_ERROR(GRAFT_CUDA(cudaEventSynchronize(drained_[b])));
    ParallelFor(static_cast<int64_t>(n), kPieceBytes, [&](int64_t begin, int64_t end) {
      std::memcpy(buffer + begin, src + begin, static_cast<size_t>(end - begin));
    });
    RETURN_IF_ERROR(
        GRAFT_CUDA(cudaMemcpyAsync(dst, buffer, n, cudaMemcpyHostToDevice, stream_)));
    RETURN_IF_ERROR(GRAFT_CUDA(cudaEventRecord(drained_[b], stream_)));
    used_[b] = true;
    return absl::OkStatus();
  }

  absl::Status Finish() { return GRAFT_CUDA(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t drained_[2] = {nullptr, nullptr};
  bool used_[2] = {false, false};
};

}  // namespace

absl::Status UploadThroughPinned(absl::Span<const HostToDevice> copies) {
  size_t total = 0;
  for (const HostToDevice& c : copies) total += c.bytes;
  if (total <= kChunkBytes) {
    for (const HostToDevice& c : copies) {
      if (c.bytes == 0) continue;
      RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpy(c.dst, c.src, c.bytes, cudaMemcpyHostToDevice)));
    }
    return absl::OkStatus();
  }
  Staging& staging = TheStaging();
  std::lock_guard<std::mutex> lock(staging.mu);
  for (char*& buffer : staging.buffers) {
    if (buffer != nullptr) continue;
    // Portable: pinned for every GPU's uploads.
    RETURN_IF_ERROR(GRAFT_CUDA(
        cudaHostAlloc(reinterpret_cast<void**>(&buffer), kChunkBytes, cudaHostAllocPortable)));
  }
  UploadStream stream;
  RETURN_IF_ERROR(stream.Create());
  int b = 0;
  for (const HostToDevice& c : copies) {
    for (size_t offset = 0; offset < c.bytes; offset += kChunkBytes) {
      const size_t n = std::min(kChunkBytes, c.bytes - offset);
      RETURN_IF_ERROR(stream.Send(staging.buffers[b], b, static_cast<char*>(c.dst) + offset,
                                  static_cast<const char*>(c.src) + offset, n));
      b ^= 1;
    }
  }
  return stream.Finish();
}

}  // namespace graft::cuda
