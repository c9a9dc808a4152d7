#ifndef GRAFT_GRAPH_BOXED_H_
#define GRAFT_GRAPH_BOXED_H_

#include <memory>
#include <utility>

namespace graft {

// A value kept on the heap behind one pointer, with value semantics (deep
// copy, deep equality). Keeps rarely-set or large members of hot structures
// (node arguments, node meta) to 8 bytes. Empty means "no value", so it
// doubles as a compact std::optional.
template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(T value) : ptr_(std::make_unique<T>(std::move(value))) {}  // NOLINT
  Boxed(const Boxed& other)
      : ptr_(other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) ptr_ = other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(T value) {
    ptr_ = std::make_unique<T>(std::move(value));
    return *this;
  }

  bool has_value() const { return ptr_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  void reset() { ptr_.reset(); }
  T& operator*() { return *ptr_; }
  const T& operator*() const { return *ptr_; }
  T* operator->() { return ptr_.get(); }
  const T* operator->() const { return ptr_.get(); }
  // Lets a boxed value stand where a `const T&` is expected (std::visit).
  operator const T&() const { return *ptr_; }  // NOLINT

  friend bool operator==(const Boxed& a, const Boxed& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || *a.ptr_ == *b.ptr_;
  }

 private:
  std::unique_ptr<T> ptr_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_BOXED_H_
