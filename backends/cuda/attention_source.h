#ifndef GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_
#define GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_

namespace graft::cuda {

// graft::attention on the tensor cores (bf16 or f16 operands, f32 sums),
// flash-attention style: a block of 4 warps takes 64 queries of one matrix
// of the leading dims, each warp 16 of them held in registers; the keys
// and values pass through shared memory 64 at a time; each warp keeps its
// rows' running maximum and sum (online softmax) and its output in
// registers, so the scores never reach memory. With `Causal`, the key
// tiles after a block's last query are never read.
//
// Fragments follow PTX's mma.m16n8k16 layouts: lane = 4 g + t; A holds
// rows g and g + 8, columns 2t, 2t + 1 (+8); B columns g, rows 2t, 2t + 1
// (+8); C rows g and g + 8, columns 2t, 2t + 1. A score tile (C) is the
// next product's A operand without leaving registers.
inline constexpr char kAttentionSource[] = R"CUDA(
namespace g_attention {

template <class T> struct mma_op;
// m16n8k16 with f32 sums; pack: two floats as a pair, `lo` in the low half.
#define G_ATTENTION_MMA_OP(T, PTX)                                                          \
  template <> struct mma_op<T> {                                                            \
    static __device__ __forceinline__ void run(float (&c)[4], const unsigned (&a)[4],        \
                                               unsigned b0, unsigned b1) {                  \
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX "." PTX                     \
                   ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"             \
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                         \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));         \
    }                                                                                       \
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {                   \
      unsigned r;                                                                           \
      asm("cvt.rn." PTX "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));                 \
      return r;                                                                             \
    }                                                                                       \
  };
G_ATTENTION_MMA_OP(g_bfloat, "bf16")
G_ATTENTION_MMA_OP(g_half, "f16")
#undef G_ATTENTION_MMA_OP

constexpr int kRows = 64;  // Queries per block (16 per warp).
constexpr int kKeys = 64;  // Keys per tile.
__device__ __forceinline__ float minus_inf() { return __int_as_float(0xff800000); }

// Rows [0, n) of a [*, width] matrix into shared memory (row pitch
// `pitch`), 16 bytes at a time; rows past `valid` are zeros.
template <class T, int Width, int Pitch>
__device__ __forceinline__ void load_tile(T* dst, const T* src, int valid) {
  constexpr int chunks = Width * (int)sizeof(T) / 16;
  for (int c = threadIdx.x; c < kKeys * chunks; c += blockDim.x) {
    const int r = c / chunks, e = (c % chunks) * (16 / (int)sizeof(T));
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid) value = __ldca((const uint4*)(src + (long long)r * Width + e));
    *(uint4*)(dst + r * Pitch + e) = value;
  }
}

__device__ __forceinline__ float quad_max(float x) {
  x = g_max(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return g_max(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// out[b] = softmax(scores) v[b] for the block's 64 queries of matrix b,
// scores = q[b] k[b]^T * scale, then masked_value where masked(b, i, j),
// then -inf after the query when Causal, and -inf past the keys.
template <class T, int D, int DV, bool Causal, bool HasMask, class Masked>
__device__ __forceinline__ void run(T* out, const T* q, const T* k, const T* v, int t_len,
                                    int s_len, int tiles, float scale, float masked_value,
                                    Masked masked) {
  static_assert(D % 16 == 0 && DV % 16 == 0, "head dims are multiples of 16");
  constexpr int KP = D + 8, VP = DV + 8;  // Padded pitches: no bank conflicts.
  __shared__ __align__(16) T ks[kKeys * KP];
  __shared__ __align__(16) T vs[kKeys * VP];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long b = blockIdx.x / tiles;
  const int q0 = (int)(blockIdx.x % tiles) * kRows;
  const int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
  const T* qb = q + b * t_len * (long long)D;
  const T* kb = k + b * s_len * (long long)D;
  const T* vb = v + b * s_len * (long long)DV;

  unsigned qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int col = kk * 16 + 2 * t;
    qf[kk][0] = row0 < t_len ? g_ld((const unsigned*)(qb + (long long)row0 * D + col)) : 0u;
    qf[kk][1] = row1 < t_len ? g_ld((const unsigned*)(qb + (long long)row1 * D + col)) : 0u;
    qf[kk][2] = row0 < t_len ? g_ld((const unsigned*)(qb + (long long)row0 * D + col + 8)) : 0u;
    qf[kk][3] = row1 < t_len ? g_ld((const unsigned*)(qb + (long long)row1 * D + col + 8)) : 0u;
  }
  float o[DV / 8][4];
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m0 = minus_inf(), m1 = minus_inf(), l0 = 0.f, l1 = 0.f;
  const int key_end = Causal ? min(s_len, q0 + kRows) : s_len;
  const bool warp_has_rows = q0 + warp * 16 < t_len;

  for (int k0 = 0; k0 < key_end; k0 += kKeys) {
    __syncthreads();  // The tiles before are read.
    load_tile<T, D, KP>(ks, kb + (long long)k0 * D, s_len - k0);
    load_tile<T, DV, VP>(vs, vb + (long long)k0 * DV, s_len - k0);
    __syncthreads();
    if (!warp_has_rows || (Causal && k0 > q0 + warp * 16 + 15)) continue;

    float s[kKeys / 8][4];
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
      const T* krow = ks + (nt * 8 + g) * KP + 2 * t;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        mma_op<T>::run(s[nt], qf[kk], *(const unsigned*)(krow + kk * 16),
                       *(const unsigned*)(krow + kk * 16 + 8));
      }
    }
    float tm0 = minus_inf(), tm1 = minus_inf();
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = k0 + nt * 8 + 2 * t + e;
        float x0 = s[nt][e] * scale, x1 = s[nt][2 + e] * scale;
        if (HasMask && j < s_len) {
          if (row0 < t_len && masked(b, row0, j)) x0 = masked_value;
          if (row1 < t_len && masked(b, row1, j)) x1 = masked_value;
        }
        if (Causal && j > row0) x0 = minus_inf();
        if (Causal && j > row1) x1 = minus_inf();
        if (j >= s_len) x0 = x1 = minus_inf();
        s[nt][e] = x0;
        s[nt][2 + e] = x1;
        tm0 = g_max(tm0, x0);
        tm1 = g_max(tm1, x1);
      }
    }
    const float mn0 = g_max(m0, quad_max(tm0)), mn1 = g_max(m1, quad_max(tm1));
    // Exponents are taken against the new maximum, or 0 while every score
    // seen is -inf (exp(-inf - -inf) would be NaN).
    const float ref0 = mn0 == minus_inf() ? 0.f : mn0, ref1 = mn1 == minus_inf() ? 0.f : mn1;
    const float c0 = __expf(m0 - ref0), c1 = __expf(m1 - ref1);
    m0 = mn0;
    m1 = mn1;
    l0 *= c0;
    l1 *= c1;
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      o[n][0] *= c0;
      o[n][1] *= c0;
      o[n][2] *= c1;
      o[n][3] *= c1;
    }
    unsigned pf[kKeys / 16][4];
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt) {
      const float p00 = __expf(s[nt][0] - ref0), p01 = __expf(s[nt][1] - ref0);
      const float p10 = __expf(s[nt][2] - ref1), p11 = __expf(s[nt][3] - ref1);
      l0 += p00 + p01;
      l1 += p10 + p11;
      pf[nt / 2][(nt % 2) * 2] = mma_op<T>::pack(p00, p01);
      pf[nt / 2][(nt % 2) * 2 + 1] = mma_op<T>::pack(p10, p11);
    }
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const unsigned short* v0 = (const unsigned short*)(vs + (kk * 16 + 2 * t) * VP + g);
#pragma unroll
      for (int n = 0; n < DV / 8; ++n) {
        const unsigned short* vn = v0 + n * 8;
        const unsigned b0 = (unsigned)vn[0] | ((unsigned)vn[VP] << 16);
        const unsigned b1 = (unsigned)vn[8 * VP] | ((unsigned)vn[9 * VP] << 16);
        mma_op<T>::run(o[n], pf[kk], b0, b1);
      }
    }
  }
  if (!warp_has_rows) return;
  // A row with every score -inf sums to 0: 0 * inf is NaN, as softmax.
  const float inv0 = 1.f / quad_sum(l0), inv1 = 1.f / quad_sum(l1);
  T* ob = out + b * t_len * (long long)DV;
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) {
    const int col = n * 8 + 2 * t;
    if (row0 < t_len) {
      *(unsigned*)(ob + (long long)row0 * DV + col) = mma_op<T>::pack(o[n][0] * inv0, o[n][1] * inv0);
    }
    if (row1 < t_len) {
      *(unsigned*)(ob + (long long)row1 * DV + col) = mma_op<T>::pack(o[n][2] * inv1, o[n][3] * inv1);
    }
  }
}

}  // namespace g_attention
)CUDA";

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_
