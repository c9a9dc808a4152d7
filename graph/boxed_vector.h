#ifndef GRAFT_GRAPH_BOXED_VECTOR_H_
#define GRAFT_GRAPH_BOXED_VECTOR_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace graft {

// A std::vector kept behind one pointer, allocated on first insert: 8 bytes
// instead of 24 where the vector is usually empty (a node's keyword
// arguments, a node's tuple types). Reads see a const std::vector<T>& (an
// empty one while nothing is stored), so callers keep the vector API. Unlike
// a plain member vector, a reference taken while nothing is stored goes on
// seeing an empty vector after the first insert: take it again after a
// change. Once allocated, the box stays until the BoxedVector goes.
template <typename T>
class BoxedVector {
 public:
  using Vector = std::vector<T>;
  using const_iterator = typename Vector::const_iterator;

  BoxedVector() = default;
  BoxedVector(Vector values) { *this = std::move(values); }  // NOLINT
  BoxedVector(const BoxedVector& o) { *this = o.get(); }
  BoxedVector(BoxedVector&&) noexcept = default;
  BoxedVector& operator=(const BoxedVector& o) {
    if (this != &o) *this = o.get();
    return *this;
  }
  BoxedVector& operator=(BoxedVector&&) noexcept = default;
  // Allocates no box for an empty vector; an existing box is kept, so that
  // references to it stay valid.
  BoxedVector& operator=(Vector values) {
    if (box_) {
      *box_ = std::move(values);
    } else if (!values.empty()) {
      box_ = std::make_unique<Vector>(std::move(values));
    }
    return *this;
  }

  const Vector& get() const { return box_ ? *box_ : Empty(); }
  operator const Vector&() const { return get(); }  // NOLINT

  bool empty() const { return !box_ || box_->empty(); }
  size_t size() const { return box_ ? box_->size() : 0; }
  const T& operator[](size_t i) const { return (*box_)[i]; }
  T& operator[](size_t i) { return (*box_)[i]; }
  const T& back() const { return box_->back(); }
  T& back() { return box_->back(); }
  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  // Writable iteration walks the elements in place and never allocates.
  T* begin() { return box_ ? box_->data() : nullptr; }
  T* end() { return box_ ? box_->data() + box_->size() : nullptr; }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    return Mutable().emplace_back(std::forward<Args>(args)...);
  }
  void push_back(T value) { Mutable().push_back(std::move(value)); }
  void reserve(size_t n) {
    if (n > 0) Mutable().reserve(n);
  }
  void clear() {
    if (box_) box_->clear();
  }

  friend bool operator==(const BoxedVector& a, const BoxedVector& b) {
    return a.get() == b.get();
  }
  friend bool operator==(const BoxedVector& a, const Vector& b) { return a.get() == b; }

 private:
  static const Vector& Empty() {
    static const Vector* empty = new Vector();
    return *empty;
  }
  Vector& Mutable() {
    if (!box_) box_ = std::make_unique<Vector>();
    return *box_;
  }
  std::unique_ptr<Vector> box_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_BOXED_VECTOR_H_
