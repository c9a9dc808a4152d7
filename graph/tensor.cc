#include "graph/tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace graft {

std::shared_ptr<Storage> Storage::Allocate(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment, and at least one block
  // so that empty tensors still have a valid pointer.
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
  if (data == nullptr) throw std::bad_alloc();
  std::memset(data, 0, rounded);
  return std::shared_ptr<Storage>(new Storage(data, bytes, nullptr));
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t bytes,
                                       std::shared_ptr<void> keep_alive) {
  if (keep_alive == nullptr) keep_alive = std::make_shared<int>(0);
  return std::shared_ptr<Storage>(
      new Storage(static_cast<std::byte*>(data), bytes, std::move(keep_alive)));
}

std::shared_ptr<Storage> Storage::WrapWithKnownContent(
    void* data, size_t bytes, std::shared_ptr<void> keep_alive,
    const Fingerprint& content) {
  std::shared_ptr<Storage> storage = Wrap(data, bytes, std::move(keep_alive));
  std::call_once(storage->hashed_,
                 [&storage, &content] { storage->content_ = content; });
  return storage;
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::AllocateOn(
    std::shared_ptr<DeviceAllocator> allocator, size_t bytes) {
  ASSIGN_OR_RETURN(void* data, allocator->Allocate(bytes));
  // The keep-alive frees the buffer through the allocator it came from.
  DeviceAllocator* raw = allocator.get();
  std::shared_ptr<void> owner(data, [raw](void* p) { raw->Free(p); });
  std::shared_ptr<Storage> storage(
      new Storage(static_cast<std::byte*>(data), bytes, std::move(owner)));
  storage->device_ = allocator->device();
  storage->allocator_ = std::move(allocator);
  return storage;
}

Tensor UninitializedTensor(DType dtype, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const size_t bytes = static_cast<size_t>(n) * DTypeSize(dtype);
  const size_t rounded = std::max<size_t>(
      (bytes + Storage::kAlignment - 1) / Storage::kAlignment * Storage::kAlignment,
      Storage::kAlignment);
  void* data = std::aligned_alloc(Storage::kAlignment, rounded);
  if (data == nullptr) throw std::bad_alloc();
  return Tensor(dtype, dims, Storage::Wrap(data, bytes, std::shared_ptr<void>(data, std::free)));
}

namespace {

// Bytes hashed as fixed chunks, each on its own core where there are
// several, and then the chunks' hashes: one thread hashes about 8 GB/s,
// and a compile cache hit hashes every weight of an in-memory model. The
// chunk size is fixed, so the hash does not depend on the machine.
constexpr size_t kHashChunkBytes = size_t{4} << 20;

}  // namespace

Fingerprint ContentHashOf(const std::byte* data, size_t size) {
  if (size <= kHashChunkBytes) return FingerprintBuilder().AddBytes(data, size).Finish();
  const int64_t chunks = static_cast<int64_t>((size + kHashChunkBytes - 1) / kHashChunkBytes);
  std::vector<Fingerprint> parts(static_cast<size_t>(chunks));
  ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t offset = static_cast<size_t>(c) * kHashChunkBytes;
      parts[c] = FingerprintBuilder()
                     .AddBytes(data + offset, std::min(kHashChunkBytes, size - offset))
                     .Finish();
    }
  });
  FingerprintBuilder all;
  all.AddString("chunks").AddInt(static_cast<int64_t>(size)).AddInt(chunks);
  for (const Fingerprint& part : parts) {
    all.AddInt(static_cast<int64_t>(part.high)).AddInt(static_cast<int64_t>(part.low));
  }
  return all.Finish();
}

const Fingerprint& Storage::ContentFingerprint() const {
  std::call_once(hashed_, [this] {
    content_ = ContentHashOf(data_, size_);
    if (on_hashed_) on_hashed_(content_);
  });
  return content_;
}

std::shared_ptr<Storage> Storage::WrapWithHashHook(
    void* data, size_t bytes, std::shared_ptr<void> keep_alive,
    std::function<void(const Fingerprint&)> on_hashed) {
  std::shared_ptr<Storage> storage = Wrap(data, bytes, std::move(keep_alive));
  storage->on_hashed_ = std::move(on_hashed);
  return storage;
}

Storage::~Storage() {
  if (owned()) {
    std::free(data_);
    return;
  }
  // Frees a device buffer while its allocator is still alive.
  keep_alive_.reset();
}

std::string Device::ToString() const {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return absl::StrCat("cuda:", index);
  }
  return "unknown";
}

absl::StatusOr<Tensor> CopyToHost(const Tensor& tensor) {
  if (!tensor.defined() || tensor.on_host()) return tensor;
  Tensor host(tensor.dtype(), tensor.dims());
  absl::Status s = tensor.storage()->allocator()->CopyToHost(
      tensor.raw_data(), host.raw_data(), tensor.NumBytes());
  if (!s.ok()) return s;
  return host;
}

absl::StatusOr<Tensor> CopyToDevice(
    const Tensor& tensor, const std::shared_ptr<DeviceAllocator>& allocator) {
  if (!tensor.defined() || tensor.device() == allocator->device()) {
    return tensor;
  }
  ASSIGN_OR_RETURN(Tensor host, CopyToHost(tensor));
  ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                   Storage::AllocateOn(allocator, host.NumBytes()));
  absl::Status s = allocator->CopyFromHost(host.raw_data(), storage->data(),
                                           host.NumBytes());
  if (!s.ok()) return s;
  return Tensor(host.dtype(), host.dims(), std::move(storage));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)) {
  storage_ = Storage::Allocate(NumBytes());
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims,
               std::shared_ptr<Storage> storage, size_t offset)
    : dtype_(dtype),
      dims_(std::move(dims)),
      storage_(std::move(storage)),
      offset_(offset) {}

Tensor Tensor::Scalar(DType dtype, double value) {
  Tensor t(dtype, {});
  t.SetFromDouble(0, value);
  return t;
}

int64_t Tensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

TensorType Tensor::type() const {
  return TensorType{dtype_, ShapeFromDims(dims_)};
}

double Tensor::GetAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kF32: return data<float>()[i];
    case DType::kF64: return data<double>()[i];
    case DType::kF16: return HalfToFloat(data<uint16_t>()[i]);
    case DType::kBF16: return BFloat16ToFloat(data<uint16_t>()[i]);
    case DType::kI8: return data<int8_t>()[i];
    case DType::kU8: return data<uint8_t>()[i];
    case DType::kI32: return data<int32_t>()[i];
    case DType::kI64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kBool: return data<uint8_t>()[i] != 0 ? 1.0 : 0.0;
    case DType::kF8E4M3: return Float8E4M3ToFloat(data<uint8_t>()[i]);
  }
  return 0;
}

namespace {

// Float to integer conversion that saturates instead of invoking undefined
// behaviour on out-of-range values and NaN.
template <typename T>
T SaturatingCast(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

void Tensor::SetFromDouble(int64_t i, double v) {
  switch (dtype_) {
    case DType::kF32: data<float>()[i] = static_cast<float>(v); return;
    case DType::kF64: data<double>()[i] = v; return;
    case DType::kF16: data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); return;
    case DType::kBF16: data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v)); return;
    case DType::kI8: data<int8_t>()[i] = SaturatingCast<int8_t>(v); return;
    case DType::kU8: data<uint8_t>()[i] = SaturatingCast<uint8_t>(v); return;
    case DType::kI32: data<int32_t>()[i] = SaturatingCast<int32_t>(v); return;
    case DType::kI64: data<int64_t>()[i] = SaturatingCast<int64_t>(v); return;
    case DType::kBool: data<uint8_t>()[i] = v != 0 ? 1 : 0; return;
    case DType::kF8E4M3: data<uint8_t>()[i] = DoubleToFloat8E4M3(v); return;
  }
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(NumElements());
  for (int64_t i = 0; i < NumElements(); ++i) out[i] = GetAsDouble(i);
  return out;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();  // Nothing to copy (and no data to read).
  Tensor t(dtype_, dims_);
  if (NumBytes() > 0) std::memcpy(t.raw_data(), raw_data(), NumBytes());
  return t;
}

Tensor Tensor::Reshaped(std::vector<int64_t> dims) const {
  return Tensor(dtype_, std::move(dims), storage_, offset_);
}

bool Tensor::BitwiseEqual(const Tensor& other) const {
  if (dtype_ != other.dtype_ || dims_ != other.dims_) return false;
  if (defined() != other.defined()) return false;
  return !defined() || NumBytes() == 0 ||
         std::memcmp(raw_data(), other.raw_data(), NumBytes()) == 0;
}

std::string Tensor::TypeString() const {
  return absl::StrCat(DTypeName(dtype_), "[", absl::StrJoin(dims_, ","), "]");
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // Subnormal: normalize.
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN.
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // Overflow.
  if (abs < 0x38800000u) {  // Subnormal or zero in half.
    float magnitude = std::bit_cast<float>(abs);
    // 2^-24 is the smallest half subnormal; round to nearest even.
    float scaled = magnitude * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // Re-bias exponent and round to nearest even.
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float BFloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

float Float8E4M3ToFloat(uint8_t b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  float magnitude;
  if (exponent == 15 && mantissa == 7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
  }
  return std::copysign(magnitude, (b & 0x80) != 0 ? -1.0f : 1.0f);
}

uint8_t DoubleToFloat8E4M3(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xff : 0x7f;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fabs(v);
  if (a >= 448) return sign | 0x7e;
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a = 1.m * 2^(e - 1).
  if (a == 0 || e - 1 < -6) {
    // Subnormal (or zero): a multiple of 2^-9; 8 of them is the smallest
    // normal, whose bits are 0x08 as well.
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  int exponent = e - 1;
  int mantissa = static_cast<int>(std::nearbyint((std::ldexp(a, -exponent) - 1) * 8));
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  // 448 = 1.75 * 2^8 is the largest; a value rounding past it saturates.
  if (exponent > 8 || (exponent == 8 && mantissa == 7)) return sign | 0x7e;
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) | mantissa);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // Round to nearest even.
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace graft
