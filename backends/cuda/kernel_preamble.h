#ifndef GRAFT_BACKENDS_CUDA_KERNEL_PREAMBLE_H_
#define GRAFT_BACKENDS_CUDA_KERNEL_PREAMBLE_H_

namespace graft::cuda {

// The start of every generated translation unit: half-precision storage
// types and their conversions (by PTX, so NVRTC needs no headers), the
// scalar functions of the formulas with PyTorch's NaN rules, and block
// reductions.
inline constexpr char kKernelPreamble[] = R"CUDA(
struct g_half { unsigned short bits; };
struct g_bfloat { unsigned short bits; };
__device__ __forceinline__ float g_h2f(g_half h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f;
}
__device__ __forceinline__ g_half g_f2h(float f) {
  g_half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h;
}
__device__ __forceinline__ float g_b2f(g_bfloat b) {
  return __uint_as_float(((unsigned int)b.bits) << 16);
}
__device__ __forceinline__ g_bfloat g_f2b(float f) {
  g_bfloat b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b.bits) : "f"(f)); return b;
}

// Every operand load of a generated kernel: ld.global.ca, cached in L1 and
// coherent with what the kernel before wrote once griddepcontrol.wait has
// returned. `const __restrict__` alone would let the compiler use the
// non-coherent path (ld.global.nc), which PTX allows only for data left
// unchanged for the kernel's whole life; with programmatic dependent
// launch that life begins while the kernel before still writes, and on an
// H100 such loads returned the previous run's values (bench/cuda_kernels/
// skinny_chain.cu stress).
template <class B, class T> __device__ __forceinline__ T g_ld_as(const T* p) {
  union { B bits; T value; } u;
  u.bits = __ldca((const B*)p);
  return u.value;
}
template <class T> __device__ __forceinline__ T g_ld(const T* p) {
  if constexpr (sizeof(T) == 1) return g_ld_as<unsigned char>(p);
  else if constexpr (sizeof(T) == 2) return g_ld_as<unsigned short>(p);
  else if constexpr (sizeof(T) == 4) return g_ld_as<unsigned int>(p);
  else return g_ld_as<unsigned long long>(p);
}

// V consecutive elements at p, loaded (g_ldv) or stored (g_stv) in the
// widest aligned pieces of up to 16 bytes: one 16-byte access per thread
// is what keeps enough bytes in flight to stream at HBM speed, where an
// access of 2 bytes per thread (a bf16) reaches about a third of it. An
// address not aligned for those pieces (an offset view) takes one element
// at a time.
template <int V, class T> struct g_piece {
  static constexpr int bytes = (V * (int)sizeof(T)) % 16 == 0 ? 16
                             : (V * (int)sizeof(T)) % 8 == 0  ? 8
                             : (V * (int)sizeof(T)) % 4 == 0  ? 4 : 0;
};
template <int V, class T> __device__ __forceinline__ void g_ldv(T (&dst)[V], const T* p) {
  constexpr int b = g_piece<V, T>::bytes;
  if (b != 0 && ((unsigned long long)p & (unsigned long long)(b - 1)) == 0) {
    #pragma unroll
    for (int k = 0; k < (b == 0 ? 1 : V * (int)sizeof(T) / b); ++k) {
      if constexpr (b == 16) ((uint4*)dst)[k] = __ldca((const uint4*)p + k);
      else if constexpr (b == 8) ((uint2*)dst)[k] = __ldca((const uint2*)p + k);
      else if constexpr (b == 4) ((unsigned int*)dst)[k] = __ldca((const unsigned int*)p + k);
    }
  } else {
    #pragma unroll
    for (int e = 0; e < V; ++e) dst[e] = g_ld(p + e);
  }
}
template <int V, class T> __device__ __forceinline__ void g_stv(T* p, const T (&src)[V]) {
  constexpr int b = g_piece<V, T>::bytes;
  if (b != 0 && ((unsigned long long)p & (unsigned long long)(b - 1)) == 0) {
    #pragma unroll
    for (int k = 0; k < (b == 0 ? 1 : V * (int)sizeof(T) / b); ++k) {
      if constexpr (b == 16) ((uint4*)p)[k] = ((const uint4*)src)[k];
      else if constexpr (b == 8) ((uint2*)p)[k] = ((const uint2*)src)[k];
      else if constexpr (b == 4) ((unsigned int*)p)[k] = ((const unsigned int*)src)[k];
    }
  } else {
    #pragma unroll
    for (int e = 0; e < V; ++e) p[e] = src[e];
  }
}

template <class T> __device__ __forceinline__ T g_exp(T x) { return (T)exp((double)x); }
template <> __device__ __forceinline__ float g_exp(float x) { return expf(x); }
template <class T> __device__ __forceinline__ T g_log(T x) { return (T)log((double)x); }
template <> __device__ __forceinline__ float g_log(float x) { return logf(x); }
template <class T> __device__ __forceinline__ T g_sqrt(T x) { return (T)sqrt((double)x); }
template <> __device__ __forceinline__ float g_sqrt(float x) { return sqrtf(x); }
template <class T> __device__ __forceinline__ T g_sin(T x) { return (T)sin((double)x); }
template <> __device__ __forceinline__ float g_sin(float x) { return sinf(x); }
template <class T> __device__ __forceinline__ T g_cos(T x) { return (T)cos((double)x); }
template <> __device__ __forceinline__ float g_cos(float x) { return cosf(x); }
template <class T> __device__ __forceinline__ T g_tanh(T x) { return (T)tanh((double)x); }
template <> __device__ __forceinline__ float g_tanh(float x) { return tanhf(x); }
template <class T> __device__ __forceinline__ T g_erf(T x) { return (T)erf((double)x); }
// tan, the inverse and hyperbolic functions: CUDA's math library, f32 in
// f32 and every other type through double, as the functions above.
#define G_MATH_FUNCTION(name)                                                             \
  template <class T> __device__ __forceinline__ T g_##name(T x) { return (T)name((double)x); } \
  template <> __device__ __forceinline__ float g_##name(float x) { return name##f(x); }
G_MATH_FUNCTION(tan)
G_MATH_FUNCTION(asin)
G_MATH_FUNCTION(acos)
G_MATH_FUNCTION(atan)
G_MATH_FUNCTION(sinh)
G_MATH_FUNCTION(cosh)
G_MATH_FUNCTION(asinh)
G_MATH_FUNCTION(acosh)
G_MATH_FUNCTION(atanh)
#undef G_MATH_FUNCTION
template <> __device__ __forceinline__ float g_erf(float x) { return erff(x); }
template <class T> __device__ __forceinline__ T g_abs(T x) { return x < (T)0 ? (T)-x : x; }
template <> __device__ __forceinline__ float g_abs(float x) { return fabsf(x); }
template <> __device__ __forceinline__ double g_abs(double x) { return fabs(x); }
// Integers are whole already; round halves to even (rint), as torch.round.
template <class T> __device__ __forceinline__ T g_floor(T x) { return x; }
template <> __device__ __forceinline__ float g_floor(float x) { return floorf(x); }
template <> __device__ __forceinline__ double g_floor(double x) { return floor(x); }
template <class T> __device__ __forceinline__ T g_ceil(T x) { return x; }
template <> __device__ __forceinline__ float g_ceil(float x) { return ceilf(x); }
template <> __device__ __forceinline__ double g_ceil(double x) { return ceil(x); }
template <class T> __device__ __forceinline__ T g_round(T x) { return x; }
template <> __device__ __forceinline__ float g_round(float x) { return rintf(x); }
template <> __device__ __forceinline__ double g_round(double x) { return rint(x); }
template <class T> __device__ __forceinline__ T g_pow(T a, T b) {
  // Integers: repeated squaring; a negative exponent gives 0 unless |a| is 1.
  if (b < (T)0) return a == (T)1 ? (T)1 : (a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0);
  T r = 1;
  while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
  return r;
}
template <> __device__ __forceinline__ float g_pow(float a, float b) { return powf(a, b); }
template <> __device__ __forceinline__ double g_pow(double a, double b) { return pow(a, b); }
// max and min return NaN when either operand is NaN (torch.maximum).
template <class T> __device__ __forceinline__ T g_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}
template <class T> __device__ __forceinline__ T g_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}

struct g_sum_op { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct g_max_op { template <class T> __device__ T operator()(T a, T b) const { return g_max(a, b); } };
struct g_min_op { template <class T> __device__ T operator()(T a, T b) const { return g_min(a, b); } };

// Reduces one value per lane over the warp; every lane gets the result.
template <class T, class Op>
__device__ __forceinline__ T g_warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduces one value per thread over the block; every thread gets the
// result. blockDim.x is a multiple of 32.
template <class T, class Op>
__device__ __forceinline__ T g_block_reduce(T v, T identity, Op op) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = (int)threadIdx.x < (int)(blockDim.x >> 5) ? part[threadIdx.x] : identity;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  return part[0];
}

// The start of every generated kernel, launched as a programmatic
// dependent of the kernel before it (Hopper on): wait until that kernel has
// finished and its writes are visible, then let the next kernel launch, so
// that its blocks are resident and waiting when this one ends instead of
// being launched after it.
__device__ __forceinline__ void g_pdl_begin() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// pad's index into a dim of n elements for output position i - before:
// mirrored at the edges without repeating them (reflect; PyTorch's pads
// are shorter than the dim) or the edge repeated (replicate), then clamped
// so that a load stays inside either way.
__device__ __forceinline__ long long g_pad_replicate(long long i, long long n) {
  return i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
}
__device__ __forceinline__ long long g_pad_reflect(long long i, long long n) {
  i = i < 0 ? -i : i;
  return g_pad_replicate(i > n - 1 ? 2 * (n - 1) - i : i, n);
}

// Copies `n` bytes with the threads of the grid, 16 at a time where the
// pointers and the size allow.
__device__ __forceinline__ void g_copy_bytes(char* dst, const char* src, unsigned long long n) {
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  if ((((unsigned long long)src | (unsigned long long)dst | n) & 15ull) == 0) {
    const uint4* s = (const uint4*)src;
    uint4* d = (uint4*)dst;
    for (unsigned long long i = tid; i < n / 16; i += stride) d[i] = s[i];
  } else {
    for (unsigned long long i = tid; i < n; i += stride) dst[i] = src[i];
  }
}

// An int8 product's (quantized_linear, quantized_conv2d) result before it
// is stored: the int32 sum times `scale` (input scale times the output's
// weight scale, in double), plus the bias, ReLU; in double and rounded
// step by step (no fused multiply-add), as the interpreter computes it
// (backends/interp/kernels_quant.cc).
__device__ __forceinline__ double g_int8_value(int sum, double scale, bool has_bias, float bias,
                                               bool relu) {
  double v = __dmul_rn(scale, (double)sum);
  if (has_bias) v = __dadd_rn(v, (double)bias);
  return relu && v < 0.0 ? 0.0 : v;
}

// That value quantized again: clamp(round_half_even(float(v) / scale) +
// zero_point), NaN to the zero point. The division is a multiply by the
// reciprocal `r` corrected by one fused multiply-add (Markstein): the
// correctly rounded quotient without a call to the division routine.
__device__ __forceinline__ int g_requantize(double v, double scale, double r, int zero_point,
                                            int qmin, int qmax) {
  const double f = (double)(float)v;
  if (f != f) return zero_point;
  const double y0 = __dmul_rn(f, r);
  // An infinite quotient (f infinite, or f * r past the double range)
  // clamps as it is; the correction would make it NaN.
  const double quotient = isinf(y0) ? y0 : __fma_rn(__fma_rn(-y0, scale, f), r, y0);
  return (int)fmin(fmax(rint(quotient) + (double)zero_point, (double)qmin), (double)qmax);
}

// 2^e as a double, for e in double's normal range.
__device__ __forceinline__ double g_pow2(int e) {
  return __longlong_as_double((long long)(e + 1023) << 52);
}

// An f8e4m3 (e4m3fn) code's value, exactly: graph/tensor.cc's
// Float8E4M3ToFloat.
__device__ __forceinline__ double g_f8_to_double(unsigned char b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  double magnitude;
  if (exponent == 15 && mantissa == 7) {
    magnitude = __longlong_as_double(0x7ff8000000000000ULL);
  } else if (exponent == 0) {
    magnitude = mantissa * (1.0 / 512);  // Subnormal: a multiple of 2^-9.
  } else {
    magnitude = (8 + mantissa) * g_pow2(exponent - 10);
  }
  return (b & 0x80) ? -magnitude : magnitude;
}

// The f8e4m3 code nearest v (ties to even), saturating at 448, NaN to
// NaN: graph/tensor.cc's DoubleToFloat8E4M3, step by step.
__device__ __forceinline__ unsigned char g_double_to_f8(double v) {
  if (v != v) return signbit(v) ? 0xff : 0x7f;
  const unsigned char sign = signbit(v) ? 0x80 : 0;
  const double a = fabs(v);
  if (a >= 448.0) return sign | 0x7e;
  int e = 0;
  frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a = 1.m * 2^(e - 1).
  if (a == 0.0 || e - 1 < -6) {
    // Subnormal (or zero): a multiple of 2^-9; 8 of them is the smallest
    // normal, whose bits are 0x08 as well.
    return sign | (unsigned char)rint(ldexp(a, 9));
  }
  int exponent = e - 1;
  int mantissa = (int)rint((ldexp(a, -exponent) - 1.0) * 8.0);
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent > 8 || (exponent == 8 && mantissa == 7)) return sign | 0x7e;
  return sign | (unsigned char)(((exponent + 7) << 3) | mantissa);
}
)CUDA";

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_KERNEL_PREAMBLE_H_
