#ifndef GRAFT_BACKENDS_CUDA_SKINNY_GEMM_SOURCE_H_
#define GRAFT_BACKENDS_CUDA_SKINNY_GEMM_SOURCE_H_

namespace graft::cuda {

// The device code of graft's own product for few rows (skinny_gemm.h
// says when it runs): y[M, N] = act(x[M, K] w[N, K]^T + bias), M <= 64.
// Such a product reads each weight once and does little with it, so it
// is bound by how fast the weights stream from memory; cuBLASLt's tiles
// leave most multiprocessors idle at these shapes.
//
// Each warp owns 16 weight rows (outputs) and a range of K; the tensor
// cores multiply them by every row of x (mma.sync, weights as the A
// operand, x as B, 8 rows of x per product). Each thread loads 16
// contiguous bytes of a weight row, and the same 16 bytes' positions of
// x: a sum over k may take its terms in any order, so the k positions of
// the fragments are permuted to match what one 16-byte load holds, and
// no shuffle is needed. Weights bypass L1 (read once), two iterations'
// worth of registers, each refilled as soon as its products are issued;
// the
// block's rows of x over its chunk are copied to shared memory once
// (when they fit; else each warp reads them from L2), as its warps all
// read them.
//
// Launched as a programmatic dependent (PDL), the kernel loads its first
// two iterations' weights before it waits for the kernel that writes x,
// and where the layer's weights fit in L2, first asks for all of them.
//
// K is split over blocks too, so that small N still fills the GPU. Each
// block writes its partial sums to a scratch buffer, and the block that
// finishes a tile last adds them up in split order (the same result
// whichever block is last), applies bias and activation, and resets the
// tile's counter for the next run.
//
// Modes: 0 bf16, 1 f16, 2 tf32 (f32 data rounded to tf32), 3 f32 as three
// tf32 products (hi*hi + hi*lo + lo*hi: about f32's precision, as
// CUTLASS's 3xTF32), 4 int8 (graft::quantized_linear: s8 x s8 summed in
// int32 by m16n8k32, whose fragments hold the same bytes where m16n8k16
// holds bf16; s8 x u8 for u8 inputs; a zero point other than 0 subtracts
// zero_point * (the weight row's sum), summed beside the products with
// dp4a), 5 tf32 as f16 (f32 data, each row of the weights and of x scaled
// by a power of two that puts its largest finite value in [2^14, 2^15),
// then rounded to f16: the 10 explicit mantissa bits tf32 keeps, at half
// the weight bytes; f16 products summed in f32, the two scales applied to
// the sum). The weights are converted once (skinny_gemm.h,
// ScaledHalfWeights: the f16 rows, then the scales); x by a kernel before
// the product (SkinnyHalfInputKernel), into the scratch buffer's last
// bytes: the f16 rows, then the scales, which the product reads as mode 1
// reads its f16 x.
//
// More than 64 rows (int8 only) run as row tiles of 64, one more factor
// of the grid: each re-reads the weights (from L2 where they fit).
inline constexpr char kSkinnyGemmSource[] = R"CUDA(
// Partial sums the split-K fix-up loads at once (a benchmark may set it).
#ifndef G_SKINNY_FIXUP_LOADS
#define G_SKINNY_FIXUP_LOADS 16
#endif

namespace g_skinny {

__device__ __forceinline__ uint4 zero4() { uint4 z; z.x = z.y = z.z = z.w = 0u; return z; }

template <bool kFirst, class A, class B> struct pick { typedef A type; };
template <class A, class B> struct pick<false, A, B> { typedef B type; };

// The int8 epilogue's constants: a struct per kernel (skinny_gemm.cc), or
// this one for the float modes.
struct no_quant {
  static constexpr bool unsigned_x = false;
  static constexpr int zero_point = 0;
  static constexpr double input_scale = 1.0;
  static constexpr bool quantized_output = false;
  static constexpr double output_scale = 1.0, output_reciprocal = 1.0;
  static constexpr int output_zero_point = 0, qmin = 0, qmax = 0;
};


// A module weight: read once, so kept out of L1. Not volatile: nothing writes
// the operands while the kernel runs, so the compiler may issue every load
// of an iteration before the first product waits for one.
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}
// x: written by the kernel before, whose run this one's blocks may
// overlap (launched as a programmatic dependent). Read from L2: a
// non-coherent L1 line of x (ld.global.nc) was measured to return the
// previous run's values after the wait.
__device__ __forceinline__ uint4 load_produced(const void* p) {
  uint4 r;
  asm("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}

__device__ __forceinline__ unsigned to_tf32(unsigned bits) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
}
__device__ __forceinline__ uint4 to_tf32(uint4 v) {
  v.x = to_tf32(v.x); v.y = to_tf32(v.y); v.z = to_tf32(v.z); v.w = to_tf32(v.w);
  return v;
}
// 3xTF32's split of an f32 value v into hi + lo in integer and float ops
// rather than conversions (cvt issues at a fraction of their rate, and
// the split sits in the products' loop: the benchmark MLP's f32 products
// ran 16% faster so on an H200): hi is v rounded to tf32's 10 explicit
// mantissa bits, half away from zero as cvt.rna (half a tf32 unit added
// to the magnitude, the 13 low bits dropped), lo = v - hi exactly (at
// most 12 significant bits, either sign), which the tensor cores read as
// a tf32 operand, truncating it to its top 11. Each operand is then
// within 2^-22 of v, and the dropped lo*lo term within 2^-22 of the
// product, signs mixed, about as with lo rounded by cvt. A NaN stays NaN
// in hi or lo (one whose payload lies in the low bits alone rounds to an
// infinite hi, and its lo is NaN), so in the sum; an infinite operand
// gives NaN (its lo is inf - inf), as in other 3xTF32 products, and so
// does a finite one within half a tf32 unit of f32's largest (its hi
// rounds to inf, as cvt.rna's did).
__device__ __forceinline__ unsigned tf32_hi(unsigned bits) { return (bits + 0x1000u) & 0xffffe000u; }
__device__ __forceinline__ uint4 tf32_hi(uint4 v) {
  v.x = tf32_hi(v.x); v.y = tf32_hi(v.y); v.z = tf32_hi(v.z); v.w = tf32_hi(v.w);
  return v;
}
__device__ __forceinline__ uint4 tf32_lo(uint4 v, uint4 hi) {
  v.x = __float_as_uint(__uint_as_float(v.x) - __uint_as_float(hi.x));
  v.y = __float_as_uint(__uint_as_float(v.y) - __uint_as_float(hi.y));
  v.z = __float_as_uint(__uint_as_float(v.z) - __uint_as_float(hi.z));
  v.w = __float_as_uint(__uint_as_float(v.w) - __uint_as_float(hi.w));
  return v;
}

// d += a b on the tensor cores: m16n8k16 (bf16, f16) or m16n8k8 (tf32).
template <int kMode>
__device__ __forceinline__ void mma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
  if (kMode == 0) {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else if (kMode == 1) {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// d += a b on the tensor cores, s8 weights times s8 or u8 x summed in
// s32: m16n8k32.
template <bool kUnsignedX>
__device__ __forceinline__ void mma_s8(int* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                       unsigned b0, unsigned b1) {
  if (kUnsignedX) {
    asm(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// The two products one 16-byte load of each operand holds. Fragment slot
// (row g, k 2t..2t+1) of m16n8k16 takes the load's first word, (row g,
// k 2t+8..2t+9) its second, and x's fragment the same words: a bijection
// of k onto the 16 elements the quad of threads loaded. m16n8k8 (tf32)
// maps k t and t+4 to one load's words 0 and 1 the same way, and
// m16n8k32 (s8) k 4t..4t+3 and 4t+16..4t+19.
template <int kMode>
__device__ __forceinline__ void mma_pair(float* d, uint4 wl, uint4 wh, uint4 xv) {
  mma<kMode>(d, wl.x, wh.x, wl.y, wh.y, xv.x, xv.y);
  mma<kMode>(d, wl.z, wh.z, wl.w, wh.w, xv.z, xv.w);
}

template <int kMode, bool kUnsignedX>
__device__ __forceinline__ void product(int* d, uint4 wl, uint4 wh, uint4 xv) {
  mma_s8<kUnsignedX>(d, wl.x, wh.x, wl.y, wh.y, xv.x, xv.y);
  mma_s8<kUnsignedX>(d, wl.z, wh.z, wl.w, wh.w, xv.z, xv.w);
}

// Two f32 values (bits) as the product's 16-bit type, a at the lower
// address, each rounded to nearest even as a cast would (g_f2b, g_f2h).
template <class T> __device__ __forceinline__ unsigned pack2(unsigned a, unsigned b);
template <> __device__ __forceinline__ unsigned pack2<g_bfloat>(unsigned a, unsigned b) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(__uint_as_float(b)), "f"(__uint_as_float(a)));
  return r;
}
template <> __device__ __forceinline__ unsigned pack2<g_half>(unsigned a, unsigned b) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(__uint_as_float(b)), "f"(__uint_as_float(a)));
  return r;
}
// 16 bytes' worth of x as the product's type T: loaded as they are, or
// from an f32 x (the cast before the product absorbed) 32 bytes rounded.
template <class T, class X>
__device__ __forceinline__ uint4 load_x(const X* p) {
  if constexpr (sizeof(X) == sizeof(T)) {
    return load_produced(p);
  } else {
    const uint4 lo = load_produced(p), hi = load_produced(p + 4);
    uint4 r;
    r.x = pack2<T>(lo.x, lo.y); r.y = pack2<T>(lo.z, lo.w);
    r.z = pack2<T>(hi.x, hi.y); r.w = pack2<T>(hi.z, hi.w);
    return r;
  }
}

// Where mode 5's row scales of x are: the scratch buffer's last bytes
// (partial + kRowScaleOffset floats: the scales, then their inverses).
constexpr long long kRowScaleOffset = (32ll << 20) / 4 - 128;

// Mode 2 rounds x to tf32 once, as it is staged or loaded, rather than in
// every warp's products.
template <int kMode>
__device__ __forceinline__ uint4 x_operand(uint4 v) {
  return kMode == 2 ? to_tf32(v) : v;
}

template <int kMode, bool kUnsignedX>
__device__ __forceinline__ void product(float* d, uint4 wl, uint4 wh, uint4 xv) {
  if (kMode <= 1 || kMode == 5) {
    mma_pair<kMode == 5 ? 1 : kMode>(d, wl, wh, xv);  // Mode 5: f16.
  } else if (kMode == 2) {
    mma_pair<2>(d, to_tf32(wl), to_tf32(wh), xv);  // x rounded already (x_operand).
  } else {
    const uint4 wl_hi = tf32_hi(wl), wh_hi = tf32_hi(wh), x_hi = tf32_hi(xv);
    const uint4 wl_lo = tf32_lo(wl, wl_hi), wh_lo = tf32_lo(wh, wh_hi);
    const uint4 x_lo = tf32_lo(xv, x_hi);
    mma_pair<2>(d, wl_lo, wh_lo, x_hi);
    mma_pair<2>(d, wl_hi, wh_hi, x_lo);
    mma_pair<2>(d, wl_hi, wh_hi, x_hi);
  }
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(g_half v) { return g_h2f(v); }
__device__ __forceinline__ float to_float(g_bfloat v) { return g_b2f(v); }
// One bias value, which a kernel of the run may have written (a cast):
// from L2, as load_produced.
__device__ __forceinline__ float load_produced_value(const float* p) { return __ldcg(p); }
template <class H>
__device__ __forceinline__ float load_produced_value(const H* p) {
  H v;
  v.bits = __ldcg((const unsigned short*)p);
  return to_float(v);
}
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(g_half* p, float v) { *p = g_f2h(v); }
__device__ __forceinline__ void store(g_bfloat* p, float v) { *p = g_f2b(v); }
// A result as the product's type T holds it, for a wider y (the cast after
// the product absorbed): rounded to T, then widened.
template <class T> __device__ __forceinline__ float round_to(float v) { return v; }
template <> __device__ __forceinline__ float round_to<g_half>(float v) { return g_h2f(g_f2h(v)); }
template <> __device__ __forceinline__ float round_to<g_bfloat>(float v) { return g_b2f(g_f2b(v)); }

// kAct: 0 none, 1 relu (NaN stays NaN, as torch.relu), 2 gelu (erf),
// 3 gelu with the tanh approximation.
template <int kAct>
__device__ __forceinline__ float activate(float v) {
  if (kAct == 1) return v < 0.0f ? 0.0f : v;
  if (kAct == 2) return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  if (kAct == 3) {
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

// One iteration's weights: kU 16-byte loads of rows w0 and w1 at k.
// Module weights (kReady) stream past L1; weights a kernel of the run
// computes are read from L2 as x is (load_produced).
template <class T, int kU, bool kReady>
__device__ __forceinline__ void load_weights(const T* w0, const T* w1, int k, int k_end, int t,
                                             uint4 (&l)[kU], uint4 (&h)[kU]) {
  constexpr int kVec = 16 / sizeof(T), kStep = 4 * kVec;
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int kk = k + u * kStep + t * kVec;
    const bool in = kk < k_end;
    l[u] = !in ? zero4() : kReady ? load_stream(w0 + kk) : load_produced(w0 + kk);
    h[u] = !in ? zero4() : kReady ? load_stream(w1 + kk) : load_produced(w1 + kk);
  }
}

// One iteration's products: x's matching 16 bytes for each block of 8
// rows (of `rows`), times the weights loaded. x comes from the block's
// shared copy (`xs`, rows kXStride apart, from k_begin) when there is one,
// else from global memory (L2). With an int8 zero point, ws0 and
// ws1 gather the sums of this thread's bytes of weight rows n0 and n1.
template <class T, class X, class Q, int kMode, int kU, int kMB, int kK, int kXStride, class Acc>
__device__ __forceinline__ void multiply(const X* x, const T* xs, int rows, int k_begin, int k,
                                         int k_end, int g, int t, const uint4 (&l)[kU],
                                         const uint4 (&h)[kU], Acc (&acc)[kMB][4], int& ws0,
                                         int& ws1) {
  constexpr int kVec = 16 / sizeof(T), kStep = 4 * kVec;
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int kk = k + u * kStep + t * kVec;
    uint4 xv[kMB];
#pragma unroll
    for (int b = 0; b < kMB; ++b) {
      const int m = b * 8 + g;
      if (kXStride > 0) {
        xv[b] = kk < k_end && m < rows ? *(const uint4*)(xs + m * kXStride + (kk - k_begin))
                                       : zero4();
      } else {
        xv[b] = kk < k_end && m < rows ? x_operand<kMode>(load_x<T>(x + m * kK + kk))
                                       : zero4();
      }
    }
#pragma unroll
    for (int b = 0; b < kMB; ++b) product<kMode, Q::unsigned_x>(acc[b], l[u], h[u], xv[b]);
    if (Q::zero_point != 0) {
      const int ones = 0x01010101;
      ws0 = __dp4a((int)l[u].x, ones, ws0); ws0 = __dp4a((int)l[u].y, ones, ws0);
      ws0 = __dp4a((int)l[u].z, ones, ws0); ws0 = __dp4a((int)l[u].w, ones, ws0);
      ws1 = __dp4a((int)h[u].x, ones, ws1); ws1 = __dp4a((int)h[u].y, ones, ws1);
      ws1 = __dp4a((int)h[u].z, ones, ws1); ws1 = __dp4a((int)h[u].w, ones, ws1);
    }
  }
}

// The int8 result of one output (kernel_preamble.h): f32, or quantized
// again.
template <class Q, int kAct, bool kBias, class Y>
__device__ __forceinline__ void store_int8(Y* p, int sum, double scale, float bias) {
  const double v = g_int8_value(sum, scale, kBias, bias, kAct == 1);
  if constexpr (Q::quantized_output) {
    *p = (Y)g_requantize(v, Q::output_scale, Q::output_reciprocal, Q::output_zero_point,
                         Q::qmin, Q::qmax);
  } else {
    *(float*)p = (float)v;
  }
}

// Partial sums through the float scratch buffer, ints as their bits.
__device__ __forceinline__ float to_bits(float v) { return v; }
__device__ __forceinline__ float to_bits(int v) { return __int_as_float(v); }
__device__ __forceinline__ void add_bits(float& a, float v) { a += v; }
__device__ __forceinline__ void add_bits(int& a, float v) { a += __float_as_int(v); }

// The block's rows of x over its chunk, copied once to shared memory
// when they fit (each row padded by 64 bytes: the 16-byte reads of 8 rows
// by a quarter warp then fall in distinct banks). (LayOut in
// skinny_gemm.cc picks chunks that fit where it can.)
template <class T, int kM, int kChunk>
struct x_share {
  static constexpr int kPad = 64 / sizeof(T);
  static constexpr bool kFits = (long long)kM * (kChunk + kPad) * sizeof(T) <= 40 * 1024;
  static constexpr int kStride = kFits ? kChunk + kPad : 0;  // 0: x read from L2.
  static constexpr int kElements = kFits ? kM * (kChunk + kPad) : 1;
};

// A block's weights (its 16 * kWarps rows over k_begin..k_end) requested
// from memory into L2 at once, one bulk prefetch a row, before the block
// waits for the kernel before: the layer's weights then stream while the
// blocks of that kernel finish (its split-K fix-up, its last loads) and
// while this one's blocks stage x, rather than only as each register
// buffer is refilled. Only where the layer's weights fit in L2 with room
// to spare (SkinnyGemm::prefetch_weights), or the prefetched lines would
// evict one another before they are read. Rows start 16-byte aligned (K
// is a multiple of one 16-byte load), and chunks are multiples of 512
// bytes, as bulk prefetches need.
template <class T, int kWarps, int kN, int kK>
__device__ __forceinline__ void prefetch_block_weights(const T* w, int tile, int k_begin, int k_end) {
#if __CUDA_ARCH__ >= 900
  const int n = tile * 16 * kWarps + (int)threadIdx.x;
  if (threadIdx.x < 16 * kWarps && n < kN && k_begin < k_end) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
                 :: "l"(w + (long long)n * kK + k_begin), "r"((unsigned)((k_end - k_begin) * sizeof(T)))
                 : "memory");
  }
#endif
}

// What a product waits for before it reads x: the kernel before, when it
// is launched as a programmatic dependent (without that, the wait returns
// at once).
struct wait_for_kernel_before {
  __device__ __forceinline__ void operator()() const {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  }
};

// kWarps warps per block (16 weight rows each), kUnroll 16-byte weight
// loads in flight per row and thread, kM rows of x per row tile (at most
// 64), kRows in all. T: the weights' type and the product's; X and Y: how
// x and y are stored (T, or f32 around a bf16/f16 product). `block` is
// this block's place in the product's grid, `xs` its shared copy of x
// (x_share), `wait` what it waits for once its first weights are loaded.
// kPrefetch (module weights only): the block first asks L2 for all of its
// weights (prefetch_block_weights).
template <class T, class X, class Y, class B, class Q, int kMode, int kAct, bool kBias, bool kWeightsReady,
          int kWarps, int kUnroll, int kM, int kRows, int kN, int kK, int kSplits, int kChunk,
          class Wait, bool kPrefetch = false>
__device__ __forceinline__ void gemm_block(int block, T* __restrict__ xs, Wait wait,
                                           const X* __restrict__ x, const T* __restrict__ w,
                                           const B* __restrict__ bias,
                                           const float* __restrict__ weight_scales,
                                           Y* __restrict__ y, float* __restrict__ partial,
                                           int* __restrict__ counters) {
  typedef typename pick<kMode == 4, int, float>::type Acc;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kVec = 16 / sizeof(T);  // Elements in one 16-byte load.
  constexpr int kStep = 4 * kVec;       // k covered by a quad of threads.
  constexpr int kMB = (kM + 7) / 8;     // Blocks of 8 rows of x.
  constexpr int kTiles = (kN + 16 * kWarps - 1) / (16 * kWarps);
  constexpr int kRowTiles = (kRows + kM - 1) / kM;
  // Fewer weight loads in flight where x's 8 row blocks or the 3xTF32
  // split need the registers.
  constexpr int kU = kMB > 4 || kMode == 3 ? (kUnroll + 1) / 2 : kUnroll;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tile = block % kTiles, split = (block / kTiles) % kSplits;
  const int row_tile = kRowTiles == 1 ? 0 : block / (kTiles * kSplits);
  const int rows = kRowTiles == 1 ? kM : (kRows - row_tile * kM < kM ? kRows - row_tile * kM : kM);
  if (kRowTiles > 1) {
    x += (long long)row_tile * kM * kK;
    y += (long long)row_tile * kM * kN;
  }
  const int counter = row_tile * kTiles + tile;  // This tile's counter and scratch.
  const int n0 = tile * 16 * kWarps + warp * 16 + g, n1 = n0 + 8;
  // Rows past N read the last row (valid memory); their sums are dropped.
  const T* w0 = w + (long long)(n0 < kN ? n0 : kN - 1) * kK;
  const T* w1 = w + (long long)(n1 < kN ? n1 : kN - 1) * kK;
  const int k_begin = split * kChunk;
  const int k_end = k_begin + kChunk < kK ? k_begin + kChunk : kK;
  constexpr int kStride = kStep * kU;  // k per iteration.
  // The next kernel may start its own weight loads while this one ends
  // (it waits for this one before it reads anything this one writes).
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  // Two register buffers of kU loads a row. Module weights depend on no
  // earlier kernel: both buffers fill before the wait for the kernel that
  // writes x (programmatic dependent launch; without it the wait returns
  // at once), so two iterations' weights are in flight while x is staged.
  // Weights a kernel of the run computes load after the wait.
  uint4 al[kU], ah[kU], bl[kU], bh[kU];
  const bool second = k_begin + kStride < k_end;
  if (kWeightsReady && kPrefetch && row_tile == 0) {
    prefetch_block_weights<T, kWarps, kN, kK>(w, tile, k_begin, k_end);
  }
  if (kWeightsReady) {
    load_weights<T, kU, kWeightsReady>(w0, w1, k_begin, k_end, t, al, ah);
    if (second) load_weights<T, kU, kWeightsReady>(w0, w1, k_begin + kStride, k_end, t, bl, bh);
  }
  wait();
  // The loads are asm without side effects, which the compiler may move
  // above the wait: every pointer to what an earlier kernel writes is
  // taken anew after it, so that its loads depend on the wait.
  asm volatile("" : "+l"(x), "+l"(bias), "+l"(weight_scales), "+l"(partial) : : "memory");
  if (!kWeightsReady) asm volatile("" : "+l"(w0), "+l"(w1) : : "memory");
  if (!kWeightsReady) {
    load_weights<T, kU, kWeightsReady>(w0, w1, k_begin, k_end, t, al, ah);
    if (second) load_weights<T, kU, kWeightsReady>(w0, w1, k_begin + kStride, k_end, t, bl, bh);
  }
  // The epilogue's bias and scales for rows n0 and n1, loaded now so that
  // their latency hides behind the products.
  float bias_n[2] = {0.0f, 0.0f};
  double scale_n[2] = {1.0, 1.0};
  float scale_w[2] = {1.0f, 1.0f};  // Mode 5: the weight rows' scales.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = (h == 0 ? n0 : n1) < kN ? (h == 0 ? n0 : n1) : kN - 1;
    if (kBias) bias_n[h] = load_produced_value(bias + n);
    if (kMode == 4) scale_n[h] = __dmul_rn(Q::input_scale, (double)__ldcg(weight_scales + n));
    if (kMode == 5) scale_w[h] = __ldcg(weight_scales + n);
  }
  // Mode 5: x's row scales, which the kernel before wrote.
  const float* row_scales = partial + kRowScaleOffset;
  constexpr bool kShareX = x_share<T, kM, kChunk>::kFits;
  constexpr int kXStride = x_share<T, kM, kChunk>::kStride;
  if (kShareX) {
    // Eight 16-byte loads a thread in flight before their stores.
    constexpr int kPerRow = kChunk / kVec, kCopies = (kM * kPerRow + kThreads - 1) / kThreads;
#pragma unroll 1
    for (int j0 = 0; j0 < kCopies; j0 += 8) {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int i = (j0 + j) * kThreads + threadIdx.x;
        const int m = i / kPerRow, kk = k_begin + (i % kPerRow) * kVec;
        v[j] = j0 + j < kCopies && m < rows && kk < k_end ? load_x<T>(x + m * kK + kk)
                                                          : zero4();
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int i = (j0 + j) * kThreads + threadIdx.x;
        if (j0 + j < kCopies && i < kM * kPerRow) {
          *(uint4*)(xs + (i / kPerRow) * kXStride + (i % kPerRow) * kVec) = x_operand<kMode>(v[j]);
        }
      }
    }
    __syncthreads();
  }
  Acc acc[kMB][4];
#pragma unroll
  for (int b = 0; b < kMB; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0;
  int ws0 = 0, ws1 = 0;
  // Each buffer is refilled two iterations ahead once its products are
  // issued: the other's loads stay in flight meanwhile.
#pragma unroll 1
  for (int k = k_begin; k < k_end; k += 2 * kStride) {
    multiply<T, X, Q, kMode, kU, kMB, kK, kXStride>(x, xs, rows, k_begin, k, k_end, g, t, al, ah,
                                                 acc, ws0, ws1);
    if (k + 2 * kStride < k_end) load_weights<T, kU, kWeightsReady>(w0, w1, k + 2 * kStride, k_end, t, al, ah);
    if (k + kStride >= k_end) break;
    multiply<T, X, Q, kMode, kU, kMB, kK, kXStride>(x, xs, rows, k_begin, k + kStride, k_end, g, t,
                                                 bl, bh, acc, ws0, ws1);
    if (k + 3 * kStride < k_end) load_weights<T, kU, kWeightsReady>(w0, w1, k + 3 * kStride, k_end, t, bl, bh);
  }
  if (Q::zero_point != 0) {
    // The quad's four threads hold the row's bytes between them:
    // sum(x - zp) w = sum x w - zp sum w (mod 2^32, as the sums wrap).
    ws0 += __shfl_xor_sync(0xffffffffu, ws0, 1);
    ws0 += __shfl_xor_sync(0xffffffffu, ws0, 2);
    ws1 += __shfl_xor_sync(0xffffffffu, ws1, 1);
    ws1 += __shfl_xor_sync(0xffffffffu, ws1, 2);
#pragma unroll
    for (int b = 0; b < kMB; ++b) {
      acc[b][0] -= Q::zero_point * ws0; acc[b][1] -= Q::zero_point * ws0;
      acc[b][2] -= Q::zero_point * ws1; acc[b][3] -= Q::zero_point * ws1;
    }
  }
  if (kSplits > 1) {
    float* mine = partial + (long long)(counter * kSplits + split) * kMB * kThreads * 4;
#pragma unroll
    for (int b = 0; b < kMB; ++b) {
      float4 v;
      v.x = to_bits(acc[b][0]); v.y = to_bits(acc[b][1]);
      v.z = to_bits(acc[b][2]); v.w = to_bits(acc[b][3]);
      *(float4*)(mine + (b * kThreads + threadIdx.x) * 4) = v;
    }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (threadIdx.x == 0) last = atomicAdd(counters + counter, 1) == kSplits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const float* all = partial + (long long)counter * kSplits * kMB * kThreads * 4;
    // Every block's partial sums, from L2 (__ldcg: never a stale L1 line),
    // added in split order. The fix-up waits on L2's latency once for each
    // batch of loads, so a batch holds kFixupLoads of them: kPer splits of
    // kG blocks of 8 rows of x at once (all of a few splits' rows, or many
    // splits of one block of rows).
    constexpr int kFixupLoads = G_SKINNY_FIXUP_LOADS;
    static_assert(kFixupLoads > 0, "the fix-up loads at least one partial sum at a time");
    constexpr int kPer = kSplits < kFixupLoads ? kSplits : kFixupLoads;
    constexpr int kG = kFixupLoads / kPer < kMB ? kFixupLoads / kPer : kMB;
#pragma unroll
    for (int b = 0; b < kMB; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0;
#pragma unroll
    for (int b0 = 0; b0 < kMB; b0 += kG) {
#pragma unroll 1
      for (int i0 = 0; i0 < kSplits; i0 += kPer) {
        float4 v[kG][kPer];
#pragma unroll
        for (int g = 0; g < kG; ++g) {
#pragma unroll
          for (int i = 0; i < kPer; ++i) {
            if (b0 + g < kMB && i0 + i < kSplits) {
              v[g][i] = __ldcg((const float4*)(all + ((long long)(i0 + i) * kMB * kThreads +
                                                      (b0 + g) * kThreads + threadIdx.x) * 4));
            }
          }
        }
#pragma unroll
        for (int g = 0; g < kG; ++g) {
#pragma unroll
          for (int i = 0; i < kPer; ++i) {
            if (b0 + g < kMB && i0 + i < kSplits) {
              add_bits(acc[b0 + g][0], v[g][i].x); add_bits(acc[b0 + g][1], v[g][i].y);
              add_bits(acc[b0 + g][2], v[g][i].z); add_bits(acc[b0 + g][3], v[g][i].w);
            }
          }
        }
      }
    }
    if (threadIdx.x == 0) counters[counter] = 0;
  }
  // acc[b]: (row n0, x rows 8b+2t, 8b+2t+1), then (row n1, the same).
#pragma unroll
  for (int b = 0; b < kMB; ++b) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = h == 0 ? n0 : n1;
      if (n >= kN) continue;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int m = b * 8 + 2 * t + j;
        if (m >= rows) continue;
        if constexpr (kMode == 4) {
          store_int8<Q, kAct, kBias>(y + (long long)m * kN + n, (int)acc[b][h * 2 + j],
                                     scale_n[h], bias_n[h]);
        } else {
          float sum = (float)acc[b][h * 2 + j];
          // Mode 5: the sum of scaled operands, scaled back by the two
          // powers of two, the smaller first: the value in between lies
          // between the sum and the result, so it overflows only where
          // the result does (each step exact within f32's normal range).
          if (kMode == 5) {
            const float sx = __ldcg(row_scales + m), sw = scale_w[h];
            sum = sx < sw ? sum * sx * sw : sum * sw * sx;
          }
          const float v = activate<kAct>(sum + bias_n[h]);
          // A wider y rounds to T first (an absorbed cast), except in
          // mode 5, whose f16 is only the operands' form.
          if constexpr (sizeof(Y) == sizeof(T) || kMode == 5) {
            store(y + (long long)m * kN + n, v);
          } else {
            store(y + (long long)m * kN + n, round_to<T>(v));
          }
        }
      }
    }
  }
}

// The product as a kernel of its own: one block per place in its grid.
template <class T, class X, class Y, class B, class Q, int kMode, int kAct, bool kBias, bool kWeightsReady,
          int kWarps, int kUnroll, int kM, int kRows, int kN, int kK, int kSplits, int kChunk,
          bool kPrefetch = false>
__device__ __forceinline__ void gemm(const X* __restrict__ x, const T* __restrict__ w,
                                     const B* __restrict__ bias,
                                     const float* __restrict__ weight_scales, Y* __restrict__ y,
                                     float* __restrict__ partial, int* __restrict__ counters) {
  __shared__ __align__(16) T xs[x_share<T, kM, kChunk>::kElements];
  gemm_block<T, X, Y, B, Q, kMode, kAct, kBias, kWeightsReady, kWarps, kUnroll, kM, kRows, kN, kK,
             kSplits, kChunk, wait_for_kernel_before, kPrefetch>(blockIdx.x, xs, wait_for_kernel_before(),
                                                                 x, w, bias, weight_scales, y, partial,
                                                                 counters);
}

}  // namespace g_skinny
)CUDA";

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_SKINNY_GEMM_SOURCE_H_
