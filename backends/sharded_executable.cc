#include "backends/sharded_executable.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backends/run_failure.h"
#include "support/status_macros.h"

namespace graft {
namespace {

// A thread that runs one job at a time for one rank, kept for the
// executable's life: starting a thread per run would cost more than a
// small model's run on a GPU.
class RankThread {
 public:
  RankThread() : thread_([this] { Loop(); }) {}
  ~RankThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Start(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = std::move(job);
      done_ = false;
    }
    cv_.notify_all();
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || job_ != nullptr; });
      if (stop_) return;
      std::function<void()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();
      lock.lock();
      done_ = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool done_ = true, stop_ = false;
  std::thread thread_;
};

// Rank `rank`'s rows of `whole` among `world` equal parts along dim 0: a
// view of its bytes (a rank copies an input its program cannot read in
// place, as any caller's).
Tensor RankRows(const Tensor& whole, int rank, int world) {
  std::vector<int64_t> dims = whole.dims();
  const size_t row_bytes = whole.NumBytes() / static_cast<size_t>(dims[0]);
  dims[0] /= world;
  const size_t offset = whole.offset() + row_bytes * static_cast<size_t>(dims[0] * rank);
  return Tensor(whole.dtype(), std::move(dims), whole.storage(), offset);
}

// The ranks' pieces of one output joined along dim 0, in rank order, on
// the host, then on `device` unless that is null.
absl::StatusOr<Tensor> JoinRows(const std::vector<std::vector<Tensor>>& outputs, size_t index,
                                const std::shared_ptr<DeviceAllocator>& device) {
  const Tensor& first = outputs[0][index];
  std::vector<int64_t> dims = first.dims();
  dims[0] = 0;
  for (const auto& rank : outputs) dims[0] += rank[index].dims()[0];
  Tensor whole = UninitializedTensor(first.dtype(), dims);
  std::byte* at = static_cast<std::byte*>(whole.raw_data());
  for (const auto& rank : outputs) {
    const Tensor& piece = rank[index];
    if (piece.on_host()) {
      std::memcpy(at, piece.raw_data(), piece.NumBytes());
    } else {
      RETURN_IF_ERROR(
          piece.storage()->allocator()->CopyToHost(piece.raw_data(), at, piece.NumBytes()));
    }
    at += piece.NumBytes();
  }
  if (device == nullptr) return whole;
  return CopyToDevice(whole, device);
}

// How the module's inputs and outputs map to the ranks' (ShardReport):
// which inputs each rank takes only its rows of, and which outputs each
// rank returns only its rows of.
struct RankRowsPlan {
  std::vector<ValueSignature> inputs, outputs;  // The whole module's.
  std::vector<int> row_inputs, row_outputs;
  // CompileOptions::keep_outputs_on_device: Run joins them on rank 0's
  // device.
  bool keep_on_device = false;
};

// The plan of a world whose rank 0 compiled to `rank0` from a module
// sharded as `shard` says: the module's own input signature, and rank 0's
// outputs with the rows of every rank where they are split by rows.
RankRowsPlan WholeSignatures(std::vector<ValueSignature> inputs, const Executable& rank0,
                             const passes::ShardReport& shard, int world) {
  RankRowsPlan plan{std::move(inputs), rank0.output_signature(), shard.rank_row_inputs,
                    shard.rank_row_outputs};
  for (int i : plan.row_outputs) {
    std::optional<TensorType>& type = plan.outputs[i].type;
    if (type.has_value() && !type->shape.empty() && !type->shape[0].is_symbolic()) {
      type->shape[0] = Dim(type->shape[0].value() * world);
    }
  }
  return plan;
}

class RankGroup : public ShardedExecutable {
 public:
  RankGroup(std::vector<std::unique_ptr<Executable>> ranks,
            std::vector<std::shared_ptr<DeviceAllocator>> homes,
            std::vector<std::shared_ptr<Communicator>> world, RankRowsPlan plan)
      : ranks_(std::move(ranks)),
        homes_(std::move(homes)),
        world_(std::move(world)),
        plan_(std::move(plan)) {
    for (size_t r = 1; r < ranks_.size(); ++r) threads_.push_back(std::make_unique<RankThread>());
  }

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) override {
    ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> outputs,
                     RunEachRank(std::vector<std::vector<Tensor>>(
                         ranks_.size(), std::vector<Tensor>(inputs.begin(), inputs.end()))));
    std::vector<Tensor> joined = outputs[0];
    const std::shared_ptr<DeviceAllocator> device = plan_.keep_on_device ? homes_[0] : nullptr;
    for (int i : plan_.row_outputs) {
      absl::StatusOr<Tensor> whole = JoinRows(outputs, static_cast<size_t>(i), device);
      if (!whole.ok()) {
        return absl::Status(whole.status().code(), absl::StrCat("joining the ranks' rows of output ",
                                                                i, ": ", whole.status().message()));
      }
      joined[i] = *std::move(whole);
    }
    return joined;
  }

  absl::StatusOr<std::vector<std::vector<Tensor>>> RunEachRank(
      const std::vector<std::vector<Tensor>>& inputs) override {
    if (inputs.size() != ranks_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("inputs for ", inputs.size(),
                                                     " ranks; the world has ", ranks_.size()));
    }
    std::lock_guard<std::mutex> lock(run_mu_);
    // Inputs every rank would refuse fail here, before any rank starts and
    // the world has to be aborted.
    for (size_t r = 0; r < ranks_.size(); ++r) {
      absl::Status checked = CheckInputs(plan_.inputs, inputs[r]).status();
      if (!checked.ok()) {
        return absl::Status(checked.code(), absl::StrCat("rank ", r, ": ", checked.message()));
      }
    }
    ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> placed,
                     OnEachRanksDevice(EachRanksRows(inputs)));
    if (aborted_) {
      for (auto& communicator : world_) RETURN_IF_ERROR(communicator->Revive());
      aborted_ = false;
    }
    std::vector<absl::StatusOr<std::vector<Tensor>>> results(ranks_.size(),
                                                             absl::UnknownError("not run"));
    std::atomic<bool> aborted{false};
    auto run_rank = [&](size_t r) {
      results[r] = ranks_[r]->Run(placed[r]);
      // A rank that failed only once its work had ended made all its
      // collectives: its peers end on their own, and the world stays as it
      // is. Any other failure may have stopped the rank before a collective
      // its peers wait in (NCCL's inside their kernels): the world is
      // aborted (once), which frees them.
      if (results[r].ok() || RanToEnd(results[r].status()) || aborted.exchange(true)) return;
      for (auto& communicator : world_) communicator->Abort();
    };
    for (size_t r = 1; r < ranks_.size(); ++r) threads_[r - 1]->Start([&, r] { run_rank(r); });
    run_rank(0);
    for (auto& thread : threads_) thread->Wait();
    aborted_ = aborted.load();
    // The first failure that is not another rank's abort says what went wrong.
    for (size_t r = 0; r < results.size(); ++r) {
      if (!results[r].ok() && !absl::IsAborted(results[r].status())) {
        return absl::Status(results[r].status().code(),
                            absl::StrCat("rank ", r, ": ", results[r].status().message()));
      }
    }
    std::vector<std::vector<Tensor>> outputs;
    for (size_t r = 0; r < results.size(); ++r) {
      if (!results[r].ok()) {
        return absl::Status(results[r].status().code(),
                            absl::StrCat("rank ", r, ": ", results[r].status().message()));
      }
      outputs.push_back(*std::move(results[r]));
    }
    return outputs;
  }

  const std::vector<ValueSignature>& input_signature() const override { return plan_.inputs; }
  const std::vector<ValueSignature>& output_signature() const override { return plan_.outputs; }
  ExecutableInfo info() const override { return ranks_[0]->info(); }
  const std::vector<int>& row_split_outputs() const override { return plan_.row_outputs; }

 private:
  // Each rank's inputs, its rows only of those split by rows.
  std::vector<std::vector<Tensor>> EachRanksRows(
      const std::vector<std::vector<Tensor>>& inputs) const {
    std::vector<std::vector<Tensor>> cut = inputs;
    const int world = static_cast<int>(ranks_.size());
    for (int r = 0; r < world; ++r) {
      for (int i : plan_.row_inputs) cut[r][i] = RankRows(inputs[r][i], r, world);
    }
    return cut;
  }

  // Each rank's inputs that are on another device, copied to its own
  // before any rank starts, through one host copy per tensor (Run gives
  // every rank the same ones). A rank refuses another GPU's tensors, and
  // the abort of the world that followed such a refusal, with the other
  // ranks' collectives queued, hung.
  absl::StatusOr<std::vector<std::vector<Tensor>>> OnEachRanksDevice(
      const std::vector<std::vector<Tensor>>& inputs) const {
    std::vector<std::vector<Tensor>> placed = inputs;
    // Host copies by the device bytes they hold.
    absl::flat_hash_map<std::pair<const void*, size_t>, Tensor> on_host;
    for (size_t r = 0; r < placed.size(); ++r) {
      if (homes_[r] == nullptr) continue;  // A host rank reads any device's tensors.
      for (size_t i = 0; i < placed[r].size(); ++i) {
        Tensor& t = placed[r][i];
        if (t.on_host() || t.device() == homes_[r]->device()) continue;
        auto [host, fresh] = on_host.try_emplace(std::make_pair(t.raw_data(), t.NumBytes()));
        absl::StatusOr<Tensor> copied =
            fresh ? CopyToHost(t)
                  : absl::StatusOr<Tensor>(Tensor(t.dtype(), t.dims(), host->second.storage(),
                                                  host->second.offset()));
        if (copied.ok()) {
          host->second = *copied;
          copied = CopyToDevice(*copied, homes_[r]);
        }
        if (!copied.ok()) {
          return absl::Status(copied.status().code(),
                              absl::StrCat("rank ", r, ": copying input ", i, " to its device: ",
                                           copied.status().message()));
        }
        t = *std::move(copied);
      }
    }
    return placed;
  }

  std::vector<std::unique_ptr<Executable>> ranks_;
  // Each rank's device memory (null for a rank on the host).
  std::vector<std::shared_ptr<DeviceAllocator>> homes_;
  std::vector<std::shared_ptr<Communicator>> world_;
  RankRowsPlan plan_;
  std::vector<std::unique_ptr<RankThread>> threads_;
  std::mutex run_mu_;
  bool aborted_ = false;  // The last run failed and aborted the world.
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedExecutable>> CompileSharded(Backend& backend,
                                                           const Module& module, int world_size,
                                                           const CompileOptions& options,
                                                           ShardedCompileReport* report,
                                                           passes::ShardStrategy strategy) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a world needs at least one rank, got ", world_size));
  }
  // The types the caller promises: a symbolic batch becomes the size it
  // will be, so that it can be split.
  Module typed = module.Clone();
  std::vector<ValueSignature> signature = PlaceholderSignature(typed.graph());
  RETURN_IF_ERROR(NarrowSignature(signature, options.input_types));
  std::vector<Node*> placeholders = typed.graph().placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    if (signature[i].type.has_value()) placeholders[i]->set_type(*signature[i].type);
  }
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Communicator>> world,
                   backend.CreateWorld(world_size));
  const bool on_host = backend.device(options).is_host();
  std::vector<std::unique_ptr<Executable>> ranks;
  std::vector<std::shared_ptr<DeviceAllocator>> homes;
  RankRowsPlan plan;
  for (int r = 0; r < world_size; ++r) {
    passes::ShardReport shard;
    // Split by batch, each rank takes and returns only its rows where it
    // can: no slice of the inputs, no gather of the outputs.
    absl::StatusOr<Module> part = passes::ShardModule(
        typed, passes::ShardOptions{world_size, r, strategy, /*rows_in_place=*/true}, &shard);
    if (!part.ok()) {
      return absl::Status(part.status().code(),
                          absl::StrCat("sharding for rank ", r, ": ", part.status().message()));
    }
    // Ranks on the host share its cores.
    CompileOptions rank_options = on_host ? backend.ForRankOnHost(options, world_size) : options;
    std::vector<Node*> rank_placeholders = part->graph().placeholders();
    for (int i : shard.rank_row_inputs) {
      if (static_cast<size_t>(i) < rank_options.input_types.size()) {
        rank_options.input_types[i] = *rank_placeholders[i]->type();
      }
    }
    rank_options.device_index = on_host ? 0 : r;
    rank_options.communicator = world[r];
    CompileReport compiled;
    absl::StatusOr<std::unique_ptr<Executable>> executable =
        CompileWithFallback(backend, *part, rank_options, &compiled);
    if (!executable.ok()) {
      return absl::Status(executable.status().code(),
                          absl::StrCat("compiling rank ", r, ": ", executable.status().message()));
    }
    ranks.push_back(*std::move(executable));
    homes.push_back(on_host ? nullptr : backend.allocator(rank_options));
    if (r == 0) {
      plan = WholeSignatures(signature, *ranks[0], shard, world_size);
      plan.keep_on_device = options.keep_outputs_on_device && !on_host;
      if (report != nullptr) *report = {shard, compiled};
    }
  }
  return std::unique_ptr<ShardedExecutable>(new RankGroup(
      std::move(ranks), std::move(homes), std::move(world), std::move(plan)));
}

}  // namespace graft
