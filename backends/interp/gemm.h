#ifndef GRAFT_BACKENDS_INTERP_GEMM_H_
#define GRAFT_BACKENDS_INTERP_GEMM_H_

// Plain matrix products for the interpreter. Correct first: simple loops in
// an order the compiler vectorizes (-O3), with cache blocking that only
// changes the order in which whole rows are visited. T is float, double or
// uint64_t (integer products wrap, as PyTorch's do).

#include <algorithm>
#include <cstdint>

namespace graft::interp {

// C[M,N] += A[M,K] * B[K,N]; row-major with leading dimensions lda, ldb,
// ldc. Loop order i-k-j, so the innermost loop runs along contiguous rows
// of B and C.
template <typename T>
void GemmNN(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
            const T* b, int64_t ldb, T* c, int64_t ldc) {
  // Blocks keep a panel of B in cache while every row of A uses it.
  constexpr int64_t kBlockK = 128;
  constexpr int64_t kBlockN = 1024;
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t j1 = std::min(n, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t k1 = std::min(k, k0 + kBlockK);
      for (int64_t i = 0; i < m; ++i) {
        T* c_row = c + i * ldc;
        for (int64_t p = k0; p < k1; ++p) {
          const T a_ip = a[i * lda + p];
          const T* b_row = b + p * ldb;
          for (int64_t j = j0; j < j1; ++j) c_row[j] += a_ip * b_row[j];
        }
      }
    }
  }
}

// sum_i a[i] * b[i]. Eight independent partial sums let the compiler
// vectorize without reordering one long chain; they are combined in a fixed
// order, so the result is deterministic.
template <typename T>
T Dot(const T* a, const T* b, int64_t n) {
  T acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  T sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
          ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// C[M,N] = A[M,K] * B[N,K]^T (B given row by row, as linear's weight is):
// every output is the dot product of a row of A with a row of B, both
// contiguous.
template <typename T>
void GemmNT(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
            const T* b, int64_t ldb, T* c, int64_t ldc) {
  // Rows of B outer: each is read from memory once and reused for all of A.
  for (int64_t j = 0; j < n; ++j) {
    const T* b_row = b + j * ldb;
    for (int64_t i = 0; i < m; ++i) {
      c[i * ldc + j] = Dot(a + i * lda, b_row, k);
    }
  }
}

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_GEMM_H_
