#ifndef GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_SOURCE_H_
#define GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_SOURCE_H_

namespace graft::cuda {

// The device code of graft's implicit-GEMM convolution (conv_gemm.h says
// when it runs): a bf16 or f16 convolution over channels-last values as
// the product y[M, Cout] = patches[M, K] weight[Cout, K]^T, M = N * Ho * Wo
// output pixels and K = kh * kw * Cin by taps (each tap's channels
// adjacent), where the patches are never written to memory: each block
// gathers its tile of them from the NHWC input straight into shared
// memory. cuBLASLt over a column buffer writes and reads every patch
// (ResNet-18's 56 x 56 layers at batch 32: 115 MB each way a layer).
//
// A block (g_iconv::tile: implicit_conv.h picks it) computes a tile of y,
// BM pixels by BN output channels, over K in steps of BK, through a ring
// of shared-memory stages filled by cp.async (16 bytes, 8 channels of one
// tap of one pixel, a copy; zeros where the tap falls in the padding, by a
// source size of 0) where Cin is a multiple of 8, so that no 16 bytes
// straddle two taps; else each thread reads the 8 elements of its 16
// bytes of a patch row one by one (the weight's rows padded with zeros to
// a multiple of 8, as ConvTapsOuter uploads them). Each warp owns
// BM / WM x BN / WN of the tile: ldmatrix feeds mma.sync.m16n8k16 (f32
// sums). The 16-byte chunks of a stage's rows are swizzled so that
// ldmatrix's 8 rows hit 8 different bank groups. The epilogue adds the
// bias and the residual, applies ReLU (NaN stays NaN), rounds once. The
// stages are the kernel's dynamic shared memory.
//
// Launched as a programmatic dependent: each thread finds its pixels
// before it waits for the kernel that writes x.
static constexpr char kImplicitConvSource[] = R"CUDA(
namespace g_iconv {

// A block's tile: BM pixels by BN output channels, K in steps of BK
// through STAGES shared-memory stages, WM x WN warps (each BM / WM by
// BN / WN of the tile).
template <int BM_, int BN_, int BK_, int STAGES_, int WM_, int WN_> struct tile {
  static constexpr int kBM = BM_, kBN = BN_, kBK = BK_, kStages = STAGES_, kWM = WM_, kWN = WN_;
  static constexpr int kThreads = 32 * WM_ * WN_;
  static constexpr int kStageA = BM_ * BK_, kStageB = BN_ * BK_;  // elements
  static constexpr int kSmemElements = STAGES_ * (kStageA + kStageB);
  static constexpr int kChunks = BK_ / 8;  // 16-byte chunks a stage row
};

__device__ __forceinline__ unsigned smem(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
// The byte offset of 16-byte chunk `c` of row `r` of a stage whose rows
// are kChunks chunks: swizzled so that ldmatrix's 8 rows of one chunk
// column hit 8 different bank groups.
template <int kChunks> __device__ __forceinline__ int swizzled(int r, int c) {
  static_assert(kChunks == 4 || kChunks == 8, "rows of 64 or 128 bytes");
  if (kChunks == 8) return r * 128 + ((c ^ (r & 7)) << 4);
  return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);
}
template <class T> struct mma_op;
// d += a b, m16n8k16 with f32 sums.
#define G_ICONV_MMA_OP(T, PTX)                                                              \
  template <> struct mma_op<T> {                                                            \
    static __device__ __forceinline__ void run(float* d, const unsigned* a, const unsigned* b) { \
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX "." PTX                     \
                   ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"          \
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                         \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));     \
    }                                                                                       \
  };
G_ICONV_MMA_OP(g_bfloat, "bf16")
G_ICONV_MMA_OP(g_half, "f16")
#undef G_ICONV_MMA_OP
__device__ __forceinline__ void ldmatrix4(unsigned* r, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(g_bfloat v) { return g_b2f(v); }
__device__ __forceinline__ float to_float(g_half v) { return g_h2f(v); }
__device__ __forceinline__ unsigned short bits_of(float v, g_bfloat) { return g_f2b(v).bits; }
__device__ __forceinline__ unsigned short bits_of(float v, g_half) { return g_f2h(v).bits; }
template <class T> __device__ __forceinline__ T low_half(unsigned u) {
  T t;
  t.bits = (unsigned short)(u & 0xffffu);
  return t;
}

// T: the values' type; B: the bias's. Geometry as compile-time constants
// (the divisions by them become multiplies). K: the weight's row, KH * KW
// * CIN padded to a multiple of 8. `shared`: Tile::kSmemElements of T.
template <class Tile, class T, class B, bool kBias, bool kResidual, bool kRelu, int N, int H,
          int W, int CIN, int HO, int WO, int COUT, int KH, int KW, int SH, int SW, int PH, int PW,
          int DH, int DW, int K>
__device__ __forceinline__ void conv(const T* __restrict__ x, const T* __restrict__ w,
                                     const B* __restrict__ bias, const T* __restrict__ residual,
                                     T* __restrict__ y, T* shared) {
  constexpr int kBM = Tile::kBM, kBN = Tile::kBN, kBK = Tile::kBK, kStages = Tile::kStages;
  constexpr int kChunks = Tile::kChunks, kThreads = Tile::kThreads;
  constexpr int kRowsA = kThreads / kChunks;            // rows a pass of the block copies
  constexpr int kPassesA = kBM / kRowsA, kPassesB = kBN / kRowsA;
  constexpr int kMI = kBM / Tile::kWM / 16, kNJ = kBN / Tile::kWN / 8;  // a warp's m16, n8 tiles
  static_assert(kBM % kRowsA == 0 && kBN % kRowsA == 0 && kNJ % 2 == 0, "tile");
  constexpr int M = N * HO * WO, TAPS = KH * KW * CIN, KT = (K + kBK - 1) / kBK;
  constexpr int MT = (M + kBM - 1) / kBM;
  T* sa = shared;
  T* sb = shared + kStages * Tile::kStageA;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m0 = (int)(blockIdx.x % MT) * kBM, n0 = (int)(blockIdx.x / MT) * kBN;
  // This thread's copies: chunk kc of rows r0 + kRowsA i.
  const int kc = tid % kChunks, r0 = tid / kChunks;
  int base[kPassesA], ih0[kPassesA], iw0[kPassesA];
  #pragma unroll
  for (int i = 0; i < kPassesA; ++i) {
    const int m = m0 + r0 + kRowsA * i;
    const int ox = m % WO, oy = (m / WO) % HO, n = m / (WO * HO);
    base[i] = m < M ? n * H : -(1 << 30);  // Out of range: every tap invalid.
    ih0[i] = oy * SH - PH;
    iw0[i] = ox * SW - PW;
  }
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  auto load = [&](int stage, int kt) {
    const int kk = kt * kBK + kc * 8;
    const bool k_ok = kk < K;
    const unsigned a = smem(sa + stage * Tile::kStageA);
    if (CIN % 8 == 0) {
      const int tap = kk / CIN, ci = kk - tap * CIN, ky = tap / KW, kx = tap - ky * KW;
      #pragma unroll
      for (int i = 0; i < kPassesA; ++i) {
        const int ih = ih0[i] + ky * DH, iw = iw0[i] + kx * DW;
        const bool ok = k_ok && base[i] >= 0 && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
        const T* src = ok ? x + ((long long)(base[i] + ih) * W + iw) * CIN + ci : x;
        cp16(a + swizzled<kChunks>(r0 + kRowsA * i, kc), src, ok);
      }
    } else {
      // 8 elements of a patch row (ResNet's stem over RGB), each of its
      // own tap and channel, read one by one and stored as 16 bytes.
      int dy[8], dx[8], at[8];
      #pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int tap = (kk + e) / CIN, ci = kk + e - tap * CIN, ky = tap / KW;
        dy[e] = kk + e < TAPS ? ky * DH : -(1 << 30);  // Past the taps: padding.
        dx[e] = (tap - ky * KW) * DW;
        at[e] = ci;
      }
      #pragma unroll
      for (int i = 0; i < kPassesA; ++i) {
        unsigned short v[8];
        #pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int ih = ih0[i] + dy[e], iw = iw0[i] + dx[e];
          const bool ok = base[i] >= 0 && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
          v[e] = ok ? __ldca((const unsigned short*)x + ((long long)(base[i] + ih) * W + iw) * CIN + at[e])
                    : (unsigned short)0;
        }
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(a + swizzled<kChunks>(r0 + kRowsA * i, kc)),
                     "r"(v[0] | ((unsigned)v[1] << 16)), "r"(v[2] | ((unsigned)v[3] << 16)),
                     "r"(v[4] | ((unsigned)v[5] << 16)), "r"(v[6] | ((unsigned)v[7] << 16)));
      }
    }
    const unsigned b = smem(sb + stage * Tile::kStageB);
    #pragma unroll
    for (int j = 0; j < kPassesB; ++j) {
      const int n = n0 + r0 + kRowsA * j;
      const bool ok = k_ok && n < COUT;
      cp16(b + swizzled<kChunks>(r0 + kRowsA * j, kc), ok ? w + (long long)n * K + kk : w, ok);
    }
  };
  #pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load(s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  float acc[kMI][kNJ][4];
  #pragma unroll
  for (int i = 0; i < kMI; ++i)
    #pragma unroll
    for (int j = 0; j < kNJ; ++j)
      #pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  const int wm = (warp % Tile::kWM) * (kBM / Tile::kWM), wn = (warp / Tile::kWM) * (kBN / Tile::kWN);
  for (int kt = 0; kt < KT; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2));
    __syncthreads();
    if (kt + kStages - 1 < KT) load((kt + kStages - 1) % kStages, kt + kStages - 1);
    asm volatile("cp.async.commit_group;\n" ::);
    const int stage = kt % kStages;
    const unsigned a = smem(sa + stage * Tile::kStageA), b = smem(sb + stage * Tile::kStageB);
    #pragma unroll
    for (int ks = 0; ks < kBK / 16; ++ks) {
      unsigned af[kMI][4], bf[kNJ][2];
      #pragma unroll
      for (int i = 0; i < kMI; ++i) {
        const int r = wm + i * 16 + (lane & 15);
        ldmatrix4(af[i], a + swizzled<kChunks>(r, ks * 2 + (lane >> 4)));
      }
      #pragma unroll
      for (int j = 0; j < kNJ / 2; ++j) {
        const int r = wn + j * 16 + (lane & 7) + ((lane >> 4) << 3);
        unsigned t[4];
        ldmatrix4(t, b + swizzled<kChunks>(r, ks * 2 + ((lane >> 3) & 1)));
        bf[2 * j][0] = t[0];
        bf[2 * j][1] = t[1];
        bf[2 * j + 1][0] = t[2];
        bf[2 * j + 1][1] = t[3];
      }
      #pragma unroll
      for (int i = 0; i < kMI; ++i)
        #pragma unroll
        for (int j = 0; j < kNJ; ++j) mma_op<T>::run(acc[i][j], af[i], bf[j]);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int g = lane >> 2, t2 = (lane & 3) * 2;
  #pragma unroll
  for (int j = 0; j < kNJ; ++j) {
    const int col = n0 + wn + j * 8 + t2;
    float b0 = 0.0f, b1 = 0.0f;
    if (kBias) {
      if (col < COUT) b0 = to_float(g_ld(bias + col));
      if (col + 1 < COUT) b1 = to_float(g_ld(bias + col + 1));
    }
    #pragma unroll
    for (int i = 0; i < kMI; ++i) {
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + i * 16 + g + h * 8;
        if (row >= M) continue;
        float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
        const long long at = (long long)row * COUT + col;
        if (COUT % 2 == 0) {
          if (col >= COUT) continue;
          if (kResidual) {
            const unsigned r = __ldca((const unsigned*)(residual + at));
            v0 += to_float(low_half<T>(r));
            v1 += to_float(low_half<T>(r >> 16));
          }
          if (kRelu) {
            v0 = v0 < 0.0f ? 0.0f : v0;
            v1 = v1 < 0.0f ? 0.0f : v1;
          }
          *(unsigned*)(y + at) = (unsigned)bits_of(v0, T()) | ((unsigned)bits_of(v1, T()) << 16);
        } else {
          #pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (col + e >= COUT) continue;
            float v = e == 0 ? v0 : v1;
            if (kResidual) v += to_float(low_half<T>(__ldca((const unsigned short*)(residual + at + e))));
            if (kRelu) v = v < 0.0f ? 0.0f : v;
            y[at + e].bits = bits_of(v, T());
          }
        }
      }
    }
  }
}

}  // namespace g_iconv
)CUDA";

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_SOURCE_H_
