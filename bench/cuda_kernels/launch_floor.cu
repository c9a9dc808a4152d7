// The least a one-kernel run can cost on this machine: a launch of a small
// kernel and the wait for it, timed on the host as graft's one-node
// benchmark is (bench/gpu_run_bench.cc, "one-node"): the median of five
// rounds of 1000. docs/benchmarks.md compares graft's one-node run with it.
//
//   nvcc -arch=sm_90 -O2 -o launch_floor launch_floor.cu && ./launch_floor
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void relu(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] < 0 ? 0 : x[i];
}
__global__ void empty() {}

template <class F>
double MedianMicroseconds(F run) {
  for (int i = 0; i < 100; ++i) run();
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) run();
    rounds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

int main() {
  float *x, *y;
  if (cudaMalloc(&x, 4096) != cudaSuccess || cudaMalloc(&y, 4096) != cudaSuccess) {
    std::printf("no GPU memory\n");
    return 1;
  }
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::printf("relu of 1024 floats, launch and wait: %.2f us\n", MedianMicroseconds([&] {
                relu<<<4, 256, 0, stream>>>(x, y, 1024);
                cudaStreamSynchronize(stream);
              }));
  std::printf("empty kernel, launch and wait: %.2f us\n", MedianMicroseconds([&] {
                empty<<<1, 32, 0, stream>>>();
                cudaStreamSynchronize(stream);
              }));
  std::printf("relu launch alone (no wait): %.2f us\n",
              MedianMicroseconds([&] { relu<<<4, 256, 0, stream>>>(x, y, 1024); }));
  cudaStreamSynchronize(stream);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
