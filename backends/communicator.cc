#include "backends/communicator.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft {
namespace {

uint64_t NextCommunicatorId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

// What the ranks of an in-process world share: a barrier, and one slot per
// rank for the tensor of the collective in progress.
struct SharedWorld {
  explicit SharedWorld(int world_size) : slots(world_size, nullptr) {}

  // Waits until every rank has arrived; fails once any rank aborted.
  absl::Status Arrive() {
    std::unique_lock<std::mutex> lock(mu);
    if (aborted) return Aborted();
    const uint64_t generation_now = generation;
    if (++arrived == static_cast<int>(slots.size())) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return absl::OkStatus();
    }
    cv.wait(lock, [&] { return generation != generation_now || aborted; });
    return generation != generation_now ? absl::OkStatus() : Aborted();
  }

  void Abort() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = true;
    cv.notify_all();
  }

  void Revive() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = false;
    arrived = 0;
  }

  static absl::Status Aborted() {
    return absl::AbortedError("another rank of the world failed and left it");
  }

  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
  std::vector<const Tensor*> slots;
};

// Every rank's tensor must have rank 0's dtype and dims.
absl::Status CheckAgree(const std::vector<const Tensor*>& slots, absl::string_view what) {
  const Tensor& first = *slots[0];
  for (size_t r = 1; r < slots.size(); ++r) {
    if (slots[r]->dtype() != first.dtype() || slots[r]->dims() != first.dims()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": rank 0 gives ", first.TypeString(), " but rank ", r,
                       " gives ", slots[r]->TypeString()));
    }
  }
  return absl::OkStatus();
}

// The sum of the tensors in rank order, so every rank gets the same bits.
Tensor SumInRankOrder(const std::vector<const Tensor*>& slots) {
  Tensor sum = slots[0]->Clone();
  const int64_t n = sum.NumElements();
  if (sum.dtype() == DType::kF32) {
    float* out = sum.data<float>();
    for (size_t r = 1; r < slots.size(); ++r) {
      const float* in = slots[r]->data<float>();
      for (int64_t i = 0; i < n; ++i) out[i] += in[i];
    }
    return sum;
  }
  // Other dtypes through doubles: exact for every integer the sum of a
  // few ranks reaches in practice, and rounded once for f16 and bf16.
  std::vector<double> acc = slots[0]->ToDoubles();
  for (size_t r = 1; r < slots.size(); ++r) {
    for (int64_t i = 0; i < n; ++i) acc[i] += slots[r]->GetAsDouble(i);
  }
  for (int64_t i = 0; i < n; ++i) sum.SetFromDouble(i, acc[i]);
  return sum;
}

Tensor ConcatInRankOrder(const std::vector<const Tensor*>& slots, int64_t dim) {
  const Tensor& first = *slots[0];
  std::vector<int64_t> dims = first.dims();
  dims[dim] *= static_cast<int64_t>(slots.size());
  Tensor out(first.dtype(), dims);
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= first.dim(d);
  const size_t chunk = outer == 0 ? 0 : first.NumBytes() / outer;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : slots) {
      std::memcpy(dst, static_cast<const std::byte*>(t->raw_data()) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return out;
}

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(int rank, std::shared_ptr<SharedWorld> world)
      : Communicator(rank, static_cast<int>(world->slots.size())), world_(std::move(world)) {}

  absl::StatusOr<Tensor> AllReduceSum(const Tensor& tensor) override {
    return Exchange(tensor, "all_reduce", [](const std::vector<const Tensor*>& slots) {
      return SumInRankOrder(slots);
    });
  }

  absl::StatusOr<Tensor> AllGather(const Tensor& tensor, int64_t dim) override {
    if (dim < 0 || dim >= tensor.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("all_gather: dim ", dim, " is out of range for ", tensor.TypeString()));
    }
    return Exchange(tensor, "all_gather", [dim](const std::vector<const Tensor*>& slots) {
      return ConcatInRankOrder(slots, dim);
    });
  }

  void Abort() override { world_->Abort(); }
  absl::Status Revive() override {
    world_->Revive();
    return absl::OkStatus();
  }

 private:
  // Publishes `tensor`, waits for every rank's, computes the result from
  // all of them, and waits again so that no rank overwrites its slot
  // while another still reads it.
  template <typename Combine>
  absl::StatusOr<Tensor> Exchange(const Tensor& tensor, absl::string_view what,
                                  Combine combine) {
    if (!tensor.on_host()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": an in-process world exchanges host tensors, got one on ",
                       tensor.device().ToString()));
    }
    {
      std::lock_guard<std::mutex> lock(world_->mu);
      world_->slots[rank()] = &tensor;
    }
    RETURN_IF_ERROR(world_->Arrive());
    absl::Status agree = CheckAgree(world_->slots, what);
    Tensor result = agree.ok() ? combine(world_->slots) : Tensor();
    RETURN_IF_ERROR(world_->Arrive());
    RETURN_IF_ERROR(agree);
    return result;
  }

  std::shared_ptr<SharedWorld> world_;
};

}  // namespace

Communicator::Communicator(int rank, int world_size)
    : rank_(rank), world_size_(world_size), id_(NextCommunicatorId()) {}

std::vector<std::shared_ptr<Communicator>> InProcessWorld(int world_size) {
  auto world = std::make_shared<SharedWorld>(world_size);
  std::vector<std::shared_ptr<Communicator>> ranks;
  for (int r = 0; r < world_size; ++r) {
    ranks.push_back(std::make_shared<InProcessCommunicator>(r, world));
  }
  return ranks;
}

}  // namespace graft
