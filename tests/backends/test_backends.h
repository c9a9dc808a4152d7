#ifndef GRAFT_TESTS_BACKENDS_TEST_BACKENDS_H_
#define GRAFT_TESTS_BACKENDS_TEST_BACKENDS_H_

// Backends for testing the backend layer without a compiler: a fake device
// whose memory is host memory behind a device address, a backend that runs
// only some ops and only on that device, and a backend whose executables
// can be written to disk.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backends/backend.h"
#include "backends/interp/interp_backend.h"
#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "support/status_macros.h"

namespace graft::backend_test {

// "cuda:7", backed by host memory, counting what crosses to it.
class FakeDeviceAllocator : public DeviceAllocator {
 public:
  Device device() const override { return {DeviceKind::kCuda, 7}; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    ++live;
    return std::malloc(bytes == 0 ? 1 : bytes);
  }
  void Free(void* data) override {
    --live;
    std::free(data);
  }
  absl::Status CopyToHost(const void* src, void* dst, size_t bytes) override {
    ++to_host;
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyFromHost(const void* src, void* dst,
                            size_t bytes) override {
    ++to_device;
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }

  std::atomic<int64_t> live{0};
  std::atomic<int64_t> to_host{0};
  std::atomic<int64_t> to_device{0};
};

// Runs the ops it claims (and getitem, which reads the tuples of claimed
// ops), on the fake device: its executables count the inputs they get on
// the host (a partitioned executable should move every input to the device
// first), and leave outputs on the device when asked to. Records the ops of
// every module it runs. The work itself is the interpreter's.
class SubsetBackend : public Backend {
 public:
  explicit SubsetBackend(std::set<std::string> ops)
      : ops_(std::move(ops)),
        allocator_(std::make_shared<FakeDeviceAllocator>()) {}

  absl::string_view name() const override { return "subset"; }
  absl::Status CanRun(const Node& node,
                      const CompileOptions& options) const override {
    if (node.op() != OpCode::kCallFunction || ops_.contains(node.target()) ||
        node.is_call("getitem")) {
      return absl::OkStatus();
    }
    return absl::UnimplementedError(
        absl::StrCat("the subset backend does not claim ", node.target()));
  }
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) override {
    std::vector<std::string> ops;
    for (const Node* n : module.graph().nodes()) {
      RETURN_IF_ERROR(CanRun(*n, options));
      if (n->op() == OpCode::kCallFunction) ops.push_back(n->target());
      if (n->op() == OpCode::kPlaceholder) {
        std::lock_guard<std::mutex> lock(mu_);
        placeholder_types_.push_back(n->type());
      }
    }
    CompileOptions interp_options;
    interp_options.input_types = options.input_types;
    ASSIGN_OR_RETURN(std::unique_ptr<Executable> inner,
                     interp::InterpBackend().Compile(module, interp_options));
    return std::unique_ptr<Executable>(
        new Exec(this, std::move(inner), std::move(ops),
                 options.keep_outputs_on_device));
  }
  Device device(const CompileOptions&) const override {
    return allocator_->device();
  }
  std::shared_ptr<DeviceAllocator> allocator(
      const CompileOptions&) const override {
    return allocator_;
  }

  // Every op run so far, in order.
  std::vector<std::string> ran() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_;
  }
  FakeDeviceAllocator& fake() const { return *allocator_; }
  // The placeholder types of every module compiled so far, in order.
  std::vector<std::optional<TensorType>> placeholder_types() const {
    std::lock_guard<std::mutex> lock(mu_);
    return placeholder_types_;
  }
  std::atomic<int64_t> host_inputs{0};

 private:
  class Exec : public Executable {
   public:
    Exec(SubsetBackend* owner, std::unique_ptr<Executable> inner,
         std::vector<std::string> ops, bool keep)
        : owner_(owner), inner_(std::move(inner)), ops_(std::move(ops)),
          keep_(keep) {}
    absl::StatusOr<std::vector<Tensor>> Run(
        absl::Span<const Tensor> inputs) override {
      std::vector<Tensor> host;
      for (const Tensor& t : inputs) {
        if (t.on_host()) ++owner_->host_inputs;
        ASSIGN_OR_RETURN(Tensor h, CopyToHost(t));
        host.push_back(std::move(h));
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> out, inner_->Run(host));
      {
        std::lock_guard<std::mutex> lock(owner_->mu_);
        owner_->ran_.insert(owner_->ran_.end(), ops_.begin(), ops_.end());
      }
      if (!keep_) return out;
      for (Tensor& t : out) {
        ASSIGN_OR_RETURN(t, CopyToDevice(t, owner_->allocator_));
      }
      return out;
    }
    const std::vector<ValueSignature>& input_signature() const override {
      return inner_->input_signature();
    }
    const std::vector<ValueSignature>& output_signature() const override {
      return inner_->output_signature();
    }

   private:
    SubsetBackend* owner_;
    std::unique_ptr<Executable> inner_;
    std::vector<std::string> ops_;
    bool keep_;
  };

  std::set<std::string> ops_;
  std::shared_ptr<FakeDeviceAllocator> allocator_;
  mutable std::mutex mu_;
  std::vector<std::string> ran_;
  std::vector<std::optional<TensorType>> placeholder_types_;
};

// Writes its executables to disk as the module's text; loading parses the
// text and compiles it on the interpreter. Counts real compiles.
class TextBackend : public Backend {
 public:
  absl::string_view name() const override { return "text"; }
  absl::Status CanRun(const Node&, const CompileOptions&) const override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) override {
    ++compiles;
    return Wrap(module, options);
  }
  std::string CacheIdentity(const CompileOptions&) const override {
    return "text-v1";
  }
  absl::StatusOr<std::string> SerializeExecutable(
      const Executable& executable) const override {
    return static_cast<const Exec&>(executable).text;
  }
  absl::StatusOr<std::unique_ptr<Executable>> DeserializeExecutable(
      absl::string_view bytes, const Module&,
      const CompileOptions& options) const override {
    ASSIGN_OR_RETURN(Module module, ParseModule(bytes));
    return Wrap(module, options);
  }

  std::atomic<int64_t> compiles{0};

 private:
  struct Exec : public Executable {
    std::unique_ptr<Executable> inner;
    std::string text;
    absl::StatusOr<std::vector<Tensor>> Run(
        absl::Span<const Tensor> inputs) override {
      return inner->Run(inputs);
    }
    const std::vector<ValueSignature>& input_signature() const override {
      return inner->input_signature();
    }
    const std::vector<ValueSignature>& output_signature() const override {
      return inner->output_signature();
    }
  };
  static absl::StatusOr<std::unique_ptr<Executable>> Wrap(
      const Module& module, const CompileOptions& options) {
    auto exec = std::make_unique<Exec>();
    PrintOptions print;
    print.max_inline_elements = -1;
    exec->text = PrintModule(module, print);
    ASSIGN_OR_RETURN(exec->inner,
                     interp::InterpBackend().Compile(module, options));
    return std::unique_ptr<Executable>(std::move(exec));
  }
};

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_TEST_BACKENDS_H_
