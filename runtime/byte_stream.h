#ifndef GRAFT_RUNTIME_BYTE_STREAM_H_
#define GRAFT_RUNTIME_BYTE_STREAM_H_

// Little-endian fixed-width fields for the metadata of compiled-model files
// (runtime/artifact.h): a writer, and a reader that never trusts its input.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graft::runtime {

// Tensors read from a file hold at most this many elements: larger counts
// are damage, and products of checked counts stay far from overflowing.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// The number of elements of `dims`, or -1 when a dim is negative or the
// count passes kMaxElements.
inline int64_t CheckedElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxElements) return -1;
    if (d != 0 && n > kMaxElements / d) return -1;
    n *= d;
  }
  return n;
}

class ByteWriter {
 public:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void PutString(absl::string_view s) {
    Put<uint64_t>(s.size());
    out_.append(s.data(), s.size());
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    Put<uint64_t>(v.size());
    for (const T& x : v) Put<T>(x);
  }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what ByteWriter wrote. Every read checks the bytes left; a count
// larger than the bytes that could hold it is an error, so damaged input
// never causes a large allocation. Errors name `what` and the offset.
class ByteReader {
 public:
  ByteReader(absl::string_view bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}

  template <typename T>
  absl::StatusOr<T> Get() {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    if (bytes_.size() - pos_ < sizeof(T)) return Truncated();
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  absl::StatusOr<std::string> GetString() {
    absl::StatusOr<uint64_t> size = Get<uint64_t>();
    if (!size.ok()) return size.status();
    if (*size > bytes_.size() - pos_) return Truncated();
    std::string s(bytes_.substr(pos_, *size));
    pos_ += *size;
    return s;
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> GetVector() {
    absl::StatusOr<uint64_t> size = Get<uint64_t>();
    if (!size.ok()) return size.status();
    if (*size > (bytes_.size() - pos_) / sizeof(T)) return Truncated();
    std::vector<T> v(*size);
    for (T& x : v) {
      absl::StatusOr<T> value = Get<T>();
      if (!value.ok()) return value.status();
      x = *value;
    }
    return v;
  }
  // A count of items of at least `min_item_bytes` each still to read.
  absl::StatusOr<uint64_t> GetCount(size_t min_item_bytes) {
    absl::StatusOr<uint64_t> n = Get<uint64_t>();
    if (!n.ok()) return n.status();
    if (*n > (bytes_.size() - pos_) / (min_item_bytes == 0 ? 1 : min_item_bytes)) {
      return Error(absl::StrCat("a count of ", *n, " items is larger than the data"));
    }
    return *n;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }
  size_t position() const { return pos_; }
  absl::Status Error(absl::string_view message) const {
    return absl::DataLossError(absl::StrCat(what_, ", byte ", pos_, ": ", message));
  }

 private:
  absl::Status Truncated() const { return Error("ends early"); }

  absl::string_view bytes_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_BYTE_STREAM_H_
