#ifndef GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_
#define GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_

namespace graft::cuda {

// graft::attention on the tensor cores (bf16 or f16 operands, f32 sums),
// flash-attention style: a block of 4 warps takes 64 queries of one matrix
// of the leading dims, each warp 16 of them held in registers; the keys
// and values pass through shared memory 64 at a time; each warp keeps its
// rows' running maximum and sum (online softmax) and its output in
// registers, so the scores never reach memory. With `Causal`, the key
// tiles after a block's last query are never read, and blocks take their
// query tiles last first (the longest first). Only tiles on the diagonal,
// at the end of the keys or under a mask test each score's position;
// scores are kept in units of log2 so that each exponent is one ex2.
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

// Where matrix b of q, k, v and the output starts (elements).
struct bases {
  long long q, k, v, o;
};

// Starts copying rows [0, 64) of a matrix (`row` elements apart) into
// shared memory (row pitch `Pitch`), 16 bytes per cp.async; rows past
// `valid` become zeros. The copy lands by cp.async.wait_group.
template <class T, int Width, int Pitch>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long long row, int valid) {
  constexpr int chunks = Width * (int)sizeof(T) / 16;
  for (int c = threadIdx.x; c < kKeys * chunks; c += blockDim.x) {
    const int r = c / chunks, e = (c % chunks) * (16 / (int)sizeof(T));
    // A row past the end reads nothing (size 0) from a valid address.
    const T* from = src + (long long)(r < valid ? r : 0) * row + e;
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst + r * Pitch + e);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to), "l"(from),
                 "r"(r < valid ? 16 : 0));
  }
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// The larger of a and b, NaN when either is (as g_max), in one instruction.
__device__ __forceinline__ float nan_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// 2^x as __expf computes e^x: one ex2.approx, subnormal results flushed.
__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float quad_max(float x) {
  x = nan_max(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return nan_max(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Four 8 x 8 matrices of 16-bit elements from shared memory, one row
// address per lane (lanes 8m..8m+7 give matrix m's rows).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// One warp's 16 rows against one tile of 64 keys (k0 on) in shared memory:
// scores, online softmax, output accumulated. Only an `Edge` tile (one
// the causal diagonal, the end of the keys or a mask reaches) looks at
// each score's position.
template <class T, int D, int DV, bool Causal, bool HasMask, bool Edge, class Masked>
__device__ __forceinline__ void tile(const unsigned (&qf)[D / 16][4], float (&o)[DV / 8][4],
                                     float& m0, float& m1, float& l0, float& l1, const T* ks,
                                     const T* vs, long long b, int k0, int row0, int t_len,
                                     int s_len, float scale2, float masked2, Masked& masked) {
  constexpr int KP = D + 8, VP = DV + 8;
  const int lane = threadIdx.x & 31, t = lane & 3;
  const int row1 = row0 + 8;
  float s[kKeys / 8][4];
  // k's fragments by ldmatrix: lanes 8m..8m+7 give the keys of matrix m,
  // 8 dims apart (two k steps of 16 per x4).
  const unsigned k_lane = (unsigned)__cvta_generic_to_shared(ks + (lane & 7) * KP + (lane >> 3) * 8);
#pragma unroll
  for (int nt = 0; nt < kKeys / 8; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2) {
      const unsigned at = k_lane + (unsigned)((nt * 8 * KP + kk * 16) * (int)sizeof(T));
      unsigned kf[4];
      if (kk + 1 < D / 16) {
        ldmatrix_x4(kf, at);
        mma_op<T>::run(s[nt], qf[kk], kf[0], kf[1]);
        mma_op<T>::run(s[nt], qf[kk + 1], kf[2], kf[3]);
      } else {  // The last 16 dims of an odd count: lanes 0-15's rows only.
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                     : "=r"(kf[0]), "=r"(kf[1])
                     : "r"(at));
        mma_op<T>::run(s[nt], qf[kk], kf[0], kf[1]);
      }
    }
  }
  // Scores in units of log2 (scale2 = scale * log2(e)), so that each
  // exponent is one multiply-add and ex2. Maxima and sums are taken as
  // trees: the warp has few neighbours to hide a long chain behind.
  float mx[kKeys / 8][2];
#pragma unroll
  for (int nt = 0; nt < kKeys / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float x0 = s[nt][e] * scale2, x1 = s[nt][2 + e] * scale2;
      if (Edge) {
        const int j = k0 + nt * 8 + 2 * t + e;
        if (HasMask && j < s_len) {
          if (row0 < t_len && masked(b, row0, j)) x0 = masked2;
          if (row1 < t_len && masked(b, row1, j)) x1 = masked2;
        }
        if (Causal && j > row0) x0 = minus_inf();
        if (Causal && j > row1) x1 = minus_inf();
        if (j >= s_len) x0 = x1 = minus_inf();
      }
      s[nt][e] = x0;
      s[nt][2 + e] = x1;
    }
    mx[nt][0] = nan_max(s[nt][0], s[nt][1]);
    mx[nt][1] = nan_max(s[nt][2], s[nt][3]);
  }
#pragma unroll
  for (int w = kKeys / 16; w > 0; w /= 2) {
#pragma unroll
    for (int nt = 0; nt < w; ++nt) {
      mx[nt][0] = nan_max(mx[nt][0], mx[nt + w][0]);
      mx[nt][1] = nan_max(mx[nt][1], mx[nt + w][1]);
    }
  }
  const float mn0 = nan_max(m0, quad_max(mx[0][0])), mn1 = nan_max(m1, quad_max(mx[0][1]));
  // Exponents are taken against the new maximum, or 0 while every score
  // seen is -inf (exp(-inf - -inf) would be NaN).
  const float ref0 = mn0 == minus_inf() ? 0.f : mn0, ref1 = mn1 == minus_inf() ? 0.f : mn1;
  const float c0 = fast_exp2(m0 - ref0), c1 = fast_exp2(m1 - ref1);
  m0 = mn0;
  m1 = mn1;
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) {
    o[n][0] *= c0;
    o[n][1] *= c0;
    o[n][2] *= c1;
    o[n][3] *= c1;
  }
  unsigned pf[kKeys / 16][4];
  float sum[kKeys / 8][2];
#pragma unroll
  for (int nt = 0; nt < kKeys / 8; ++nt) {
    const float p00 = fast_exp2(s[nt][0] - ref0), p01 = fast_exp2(s[nt][1] - ref0);
    const float p10 = fast_exp2(s[nt][2] - ref1), p11 = fast_exp2(s[nt][3] - ref1);
    sum[nt][0] = p00 + p01;
    sum[nt][1] = p10 + p11;
    pf[nt / 2][(nt % 2) * 2] = mma_op<T>::pack(p00, p01);
    pf[nt / 2][(nt % 2) * 2 + 1] = mma_op<T>::pack(p10, p11);
  }
#pragma unroll
  for (int w = kKeys / 16; w > 0; w /= 2) {
#pragma unroll
    for (int nt = 0; nt < w; ++nt) {
      sum[nt][0] += sum[nt + w][0];
      sum[nt][1] += sum[nt + w][1];
    }
  }
  l0 = l0 * c0 + sum[0][0];
  l1 = l1 * c1 + sum[0][1];
  // v's fragments by ldmatrix.trans: lanes 8m..8m+7 give the rows of
  // matrix m (keys +8 for odd m, dims +8 for m >= 2).
  const int m = lane >> 3, r = lane & 7;
  const unsigned v_lane = (unsigned)__cvta_generic_to_shared(
      vs + ((m & 1) * 8 + r) * VP + (m >> 1) * 8);
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
    for (int n2 = 0; n2 < DV / 16; ++n2) {
      unsigned b0, b1, b2, b3;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                   : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                   : "r"(v_lane + (unsigned)((kk * 16 * VP + n2 * 16) * (int)sizeof(T))));
      mma_op<T>::run(o[2 * n2], pf[kk], b0, b1);
      mma_op<T>::run(o[2 * n2 + 1], pf[kk], b2, b3);
    }
  }
}

// out[b] = softmax(scores) v[b] for the block's 64 queries of matrix b,
// scores = q[b] k[b]^T * scale, then masked_value where masked(b, i, j),
// then -inf after the query when Causal, and -inf past the keys. q, k, v
// and out are at at(b), with rows q_row, k_row, v_row and o_row elements
// apart (views of one product read in place; the output written as the
// permute that merges the heads back lays it out). The next key tile is
// copied (cp.async) while this one is used where two fit in shared memory.
template <class T, int D, int DV, bool Causal, bool HasMask, class Masked, class At>
__device__ __forceinline__ void run(T* out, const T* q, const T* k, const T* v, int t_len,
                                    int s_len, int tiles, float scale, float masked_value,
                                    Masked masked, At at, long long q_row, long long k_row,
                                    long long v_row, long long o_row) {
  static_assert(D % 16 == 0 && DV % 16 == 0, "head dims are multiples of 16");
  constexpr int KP = D + 8, VP = DV + 8;  // Padded pitches: no bank conflicts.
  constexpr int kStageBytes = kKeys * (KP + VP) * (int)sizeof(T);
  constexpr int Stages = 2 * kStageBytes <= 48 * 1024 ? 2 : 1;
  __shared__ __align__(16) T ks[Stages][kKeys * KP];
  __shared__ __align__(16) T vs[Stages][kKeys * VP];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // Scores and the masked value in units of log2 (tile). A finite masked
  // value stays finite, so that a row with every score masked averages v
  // as softmax does.
  constexpr float kLog2e = 1.4426950408889634f;
  const float scale2 = scale * kLog2e;
  const float masked2 = isfinite(masked_value)
                            ? fminf(fmaxf(masked_value * kLog2e, -3.402823466e38f), 3.402823466e38f)
                            : masked_value;
  const long long b = blockIdx.x / tiles;
  // The last query tiles first: under Causal they have the most keys.
  const int q0 = (tiles - 1 - (int)(blockIdx.x % tiles)) * kRows;
  const int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
  const bases where = at(b);
  const T* qb = q + where.q;
  const T* kb = k + where.k;
  const T* vb = v + where.v;

  unsigned qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int col = kk * 16 + 2 * t;
    qf[kk][0] = row0 < t_len ? g_ld((const unsigned*)(qb + row0 * q_row + col)) : 0u;
    qf[kk][1] = row1 < t_len ? g_ld((const unsigned*)(qb + row1 * q_row + col)) : 0u;
    qf[kk][2] = row0 < t_len ? g_ld((const unsigned*)(qb + row0 * q_row + col + 8)) : 0u;
    qf[kk][3] = row1 < t_len ? g_ld((const unsigned*)(qb + row1 * q_row + col + 8)) : 0u;
  }
  float o[DV / 8][4];
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m0 = minus_inf(), m1 = minus_inf(), l0 = 0.f, l1 = 0.f;
  const int key_end = Causal ? min(s_len, q0 + kRows) : s_len;
  const int n_tiles = (key_end + kKeys - 1) / kKeys;
  const bool warp_has_rows = q0 + warp * 16 < t_len;
  auto issue = [&](int i) {
    load_tile<T, D, KP>(ks[i % Stages], kb + (long long)i * kKeys * k_row, k_row, s_len - i * kKeys);
    load_tile<T, DV, VP>(vs[i % Stages], vb + (long long)i * kKeys * v_row, v_row,
                         s_len - i * kKeys);
    commit();
  };
  if (n_tiles > 0) issue(0);
  for (int i = 0; i < n_tiles; ++i) {
    if (Stages == 2) {
      if (i + 1 < n_tiles) issue(i + 1);
      else commit();  // An empty group: wait<1> then means tile i.
      wait<1>();
    } else {
      wait<0>();
    }
    __syncthreads();  // Every thread's copies of tile i have landed.
    const int k0 = i * kKeys;
    if (warp_has_rows && !(Causal && k0 > q0 + warp * 16 + 15)) {
      const bool edge = HasMask || k0 + kKeys > s_len || (Causal && k0 + kKeys - 1 > q0 + warp * 16);
      if (edge) {
        tile<T, D, DV, Causal, HasMask, true>(qf, o, m0, m1, l0, l1, ks[i % Stages],
                                              vs[i % Stages], b, k0, row0, t_len, s_len, scale2,
                                              masked2, masked);
      } else {
        tile<T, D, DV, Causal, HasMask, false>(qf, o, m0, m1, l0, l1, ks[i % Stages],
                                               vs[i % Stages], b, k0, row0, t_len, s_len, scale2,
                                               masked2, masked);
      }
    }
    __syncthreads();  // Tile i's buffers are free for tile i + Stages.
    if (Stages == 1 && i + 1 < n_tiles) issue(i + 1);
  }
  if (!warp_has_rows) return;
  // A row with every score -inf sums to 0: 0 * inf is NaN, as softmax.
  const float inv0 = 1.f / quad_sum(l0), inv1 = 1.f / quad_sum(l1);
  T* ob = out + where.o;
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) {
    const int col = n * 8 + 2 * t;
    if (row0 < t_len) {
      *(unsigned*)(ob + row0 * o_row + col) = mma_op<T>::pack(o[n][0] * inv0, o[n][1] * inv0);
    }
    if (row1 < t_len) {
      *(unsigned*)(ob + row1 * o_row + col) = mma_op<T>::pack(o[n][2] * inv1, o[n][3] * inv1);
    }
  }
}

}  // namespace g_attention
)CUDA";

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_ATTENTION_SOURCE_H_
