// graft::Jit on the cuda backend: host tensors in and out, tensors already
// on the GPU (compiled for their device, results left there), and the
// max-autotune mode.

#include <cmath>
#include <vector>

#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "backends/cuda/cuda_device.h"
#include "jit/jit.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

JitOptions OnCuda(JitMode mode = JitMode::kDefault) {
  JitOptions options;
  options.backend = "cuda";
  options.mode = mode;
  options.disk_cache = false;
  return options;
}

// matmul(relu(x), w) + 1, computed here in double.
std::vector<double> Reference(const Tensor& x, const Tensor& w) {
  const int64_t m = x.dim(0), k = x.dim(1), n = w.dim(1);
  std::vector<double> y(m * n, 1.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) {
        y[i * n + j] += std::max(0.0, x.GetAsDouble(i * k + p)) * w.GetAsDouble(p * n + j);
      }
    }
  }
  return y;
}

void ExpectNear(const Tensor& got, const std::vector<double>& want) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got.GetAsDouble(i), want[i], 1e-3 * (1 + std::fabs(want[i]))) << i;
  }
}

auto Layer() {
  return [](Proxy x, Proxy w) { return matmul(relu(x), w) + 1.0; };
}

TEST(CudaJit, HostTensorsTraceOnceAndRunOnTheGpu) {
  SKIP_WITHOUT_GPU();
  for (JitMode mode : {JitMode::kDefault, JitMode::kReduceOverhead, JitMode::kMaxAutotune}) {
    auto f = Jit(Layer(), OnCuda(mode));
    const Tensor x = RandomTensor(DType::kF32, {8, 64}, 1);
    const Tensor w = RandomTensor(DType::kF32, {64, 32}, 2);
    for (int call = 0; call < 3; ++call) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x, w));
      EXPECT_TRUE(y[0].on_host());
      ExpectNear(y[0], Reference(x, w));
    }
    EXPECT_EQ(f.stats().traces, 1);
    EXPECT_EQ(f.stats().hits, 2);
  }
}

TEST(CudaJit, DeviceTensorsGiveDeviceResults) {
  SKIP_WITHOUT_GPU();
  auto f = Jit(Layer(), OnCuda());
  const Tensor x = RandomTensor(DType::kF32, {4, 16}, 3);
  const Tensor w = RandomTensor(DType::kF32, {16, 8}, 4);
  const std::shared_ptr<DeviceAllocator> gpu = cuda::GpuAllocator(0);
  ASSERT_OK_AND_ASSIGN(Tensor dx, CopyToDevice(x, gpu));
  ASSERT_OK_AND_ASSIGN(Tensor dw, CopyToDevice(w, gpu));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(dx, dw));
  EXPECT_EQ(y[0].device().kind, DeviceKind::kCuda);
  ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(y[0]));
  ExpectNear(host, Reference(x, w));
  // Host tensors of the same shapes are another key.
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> z, f(x, w));
  EXPECT_TRUE(z[0].on_host());
  EXPECT_EQ(f.stats().traces, 2);
}

}  // namespace
}  // namespace graft::cuda_test
