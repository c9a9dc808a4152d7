#ifndef GRAFT_GRAPH_TENSOR_H_
#define GRAFT_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/device.h"
#include "graph/dtype.h"
#include "graph/tensor_type.h"
#include "support/fingerprint.h"

namespace graft {

// Bytes of tensor data. Either owned (64-byte aligned, from the heap), a
// view of memory kept alive by someone else (a mapped file region), or a
// buffer in a device's memory from that device's allocator. The data of a
// device storage is a device address: host code must not read it.
class Storage {
 public:
  static constexpr size_t kAlignment = 64;

  // Zero-filled, 64-byte aligned.
  static std::shared_ptr<Storage> Allocate(size_t bytes);
  // Wraps `data` without copying; `keep_alive` owns it (an mmap, a buffer).
  static std::shared_ptr<Storage> Wrap(void* data, size_t bytes,
                                       std::shared_ptr<void> keep_alive);
  // The same, for bytes whose content hash is already known (recorded when
  // a file was written, say): ContentFingerprint() returns `content`
  // without reading them. The caller vouches that it is their hash.
  static std::shared_ptr<Storage> WrapWithKnownContent(
      void* data, size_t bytes, std::shared_ptr<void> keep_alive,
      const Fingerprint& content);
  // The same, for bytes whose hash is not known yet: `on_hashed` is called
  // with it when ContentFingerprint() first computes it (to remember it
  // for the file the bytes are mapped from).
  static std::shared_ptr<Storage> WrapWithHashHook(
      void* data, size_t bytes, std::shared_ptr<void> keep_alive,
      std::function<void(const Fingerprint&)> on_hashed);
  // Uninitialized memory of `allocator`'s device, freed through it.
  static absl::StatusOr<std::shared_ptr<Storage>> AllocateOn(
      std::shared_ptr<DeviceAllocator> allocator, size_t bytes);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool owned() const { return keep_alive_ == nullptr; }
  Device device() const { return device_; }
  // The allocator of a device storage; null for host memory.
  DeviceAllocator* allocator() const { return allocator_.get(); }

  // The content hash of all of a host storage's bytes, computed on the
  // first call and remembered: the compile cache looks up a module's
  // fingerprint on every compile, and hashing 100 MB of weights each time
  // would cost milliseconds. So bytes written in place after the first
  // call are not seen: change a module's tensor by writing a Clone() and
  // Module::SetTensor, as every pass does.
  const Fingerprint& ContentFingerprint() const;

 private:
  Storage(std::byte* data, size_t size, std::shared_ptr<void> keep_alive)
      : data_(data), size_(size), keep_alive_(std::move(keep_alive)) {}

  std::byte* data_;
  size_t size_;
  std::shared_ptr<void> keep_alive_;
  Device device_;
  std::shared_ptr<DeviceAllocator> allocator_;
  mutable std::once_flag hashed_;
  mutable Fingerprint content_;
  std::function<void(const Fingerprint&)> on_hashed_;
};

// A dense, C-ordered tensor with a static shape. Copies share storage
// (reference counted, like at::Tensor); Clone() copies the bytes.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // Shares `storage`, which must hold at least NumBytes() from `offset`.
  Tensor(DType dtype, std::vector<int64_t> dims,
         std::shared_ptr<Storage> storage, size_t offset = 0);

  template <typename T>
  static Tensor FromVector(DType dtype, std::vector<int64_t> dims,
                           const std::vector<T>& values);
  // A rank-0 tensor.
  static Tensor Scalar(DType dtype, double value);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t NumElements() const;
  size_t NumBytes() const { return NumElements() * DTypeSize(dtype_); }
  TensorType type() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Where the bytes are; the host for an undefined tensor.
  Device device() const { return storage_ ? storage_->device() : Device{}; }
  bool on_host() const { return device().is_host(); }
  size_t offset() const { return offset_; }

  // On a device tensor: a device address.
  void* raw_data() const { return storage_->data() + offset_; }
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(raw_data());
  }
  template <typename T>
  std::span<T> span() const {
    return {data<T>(), static_cast<size_t>(NumElements())};
  }

  // Element i (flat index) converted to/from double, for any dtype.
  double GetAsDouble(int64_t i) const;
  void SetFromDouble(int64_t i, double value);
  std::vector<double> ToDoubles() const;

  Tensor Clone() const;
  // Same storage, new dims with the same element count.
  Tensor Reshaped(std::vector<int64_t> dims) const;
  // Same dtype, dims and bytes.
  bool BitwiseEqual(const Tensor& other) const;
  // "f32[2,3]".
  std::string TypeString() const;

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

// A host tensor whose bytes are not set, 64-byte aligned, for a result
// every element of is written next: a zero fill first would cost a whole
// extra pass over 100s of MB of weights, on one thread.
Tensor UninitializedTensor(DType dtype, const std::vector<int64_t>& dims);

// The hash Storage::ContentFingerprint takes of host bytes (large ones
// hashed in chunks on several cores).
Fingerprint ContentHashOf(const std::byte* data, size_t size);

// A host copy of `tensor`: the tensor itself when it is on the host.
absl::StatusOr<Tensor> CopyToHost(const Tensor& tensor);
// A copy of `tensor` in `allocator`'s device memory; the tensor itself when
// it is already there. A device tensor of another device goes through the
// host.
absl::StatusOr<Tensor> CopyToDevice(
    const Tensor& tensor, const std::shared_ptr<DeviceAllocator>& allocator);

// Half-precision conversions used for f16 and bf16 storage.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);
// f8e4m3 (e4m3fn): rounded to nearest even, saturating at +-448; NaN stays
// NaN (0x7f with the sign).
float Float8E4M3ToFloat(uint8_t b);
uint8_t DoubleToFloat8E4M3(double v);

template <typename T>
Tensor Tensor::FromVector(DType dtype, std::vector<int64_t> dims,
                          const std::vector<T>& values) {
  Tensor t(dtype, std::move(dims));
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.NumElements()); ++i) {
    t.SetFromDouble(static_cast<int64_t>(i), static_cast<double>(values[i]));
  }
  return t;
}

}  // namespace graft

#endif  // GRAFT_GRAPH_TENSOR_H_
