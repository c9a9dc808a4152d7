// What the programs beside this share: the int8 layers' constants, a
// plain streaming read (the floor any weight-streaming kernel is held to),
// CHECK, CHECK_BLAS and the launch timer.
#ifndef GRAFT_BENCH_CUDA_KERNELS_BENCH_KERNELS_H_
#define GRAFT_BENCH_CUDA_KERNELS_BENCH_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

// The benchmark MLP's int8 layers as the skinny kernel's constants: u8
// input (after a ReLU, zero point 0), u8 result.
struct int8_layer {
  static constexpr bool unsigned_x = true;
  static constexpr int zero_point = 0;
  static constexpr double input_scale = 0.01;
  static constexpr bool quantized_output = true;
  static constexpr double output_scale = 0.05, output_reciprocal = 1 / 0.05;
  static constexpr int output_zero_point = 0, qmin = 0, qmax = 255;
};

// Reads n 16-byte words once, bypassing reuse (__ldcs). Launched as a
// programmatic dependent it lets the next kernel launch and waits for the
// one before, as graft's kernels do; launched plainly both are no-ops.
__global__ void stream_read(const uint4* w, size_t n, unsigned* out) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = __ldcs(w + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *out = acc;
}

// Ends the program with the line and message of a CUDA call that failed.
#define CHECK(x)                                                            \
  do {                                                                      \
    cudaError_t e_ = (x);                                                   \
    if (e_ != cudaSuccess) {                                                \
      std::printf("%s failed at line %d: %s\n", #x, __LINE__,               \
                  cudaGetErrorString(e_));                                  \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

// The same for a cuBLAS(Lt) call (where cublasLt.h is included).
#define CHECK_BLAS(x)                                                       \
  do {                                                                      \
    cublasStatus_t s_ = (x);                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                      \
      std::printf("%s failed at line %d: cuBLAS status %d\n", #x, __LINE__, \
                  static_cast<int>(s_));                                    \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

// The mean time of one of 100 back-to-back launches after 10 warm-ups,
// timed with CUDA events.
template <class F>
float MicrosecondsPerLaunch(F launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 10; ++i) launch();
  cudaEventRecord(a);
  for (int i = 0; i < 100; ++i) launch();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms * 10;  // 1000 us / 100 launches.
}

#endif  // GRAFT_BENCH_CUDA_KERNELS_BENCH_KERNELS_H_
