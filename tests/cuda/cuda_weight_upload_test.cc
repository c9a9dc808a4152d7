// Weights go to the GPU through two pinned buffers (UploadThroughPinned):
// every byte lands where it should, across chunk edges, for copies of any
// size and several in a row; uploads of less than a chunk copy directly.
// Needs a GPU.

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/weight_upload.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

TEST(CudaWeightUpload, EveryByteLandsWhereItShould) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  constexpr size_t kMiB = size_t{1} << 20;
  const std::shared_ptr<DeviceAllocator> gpu = cuda::GpuAllocator(0);
  for (const std::vector<size_t>& sizes :
       {std::vector<size_t>{5, 3 * kMiB},                              // Under one chunk.
        std::vector<size_t>{0, 8 * kMiB + 3, 7, 20 * kMiB + 1, kMiB}}) {  // Several chunks.
    SCOPED_TRACE(absl::StrCat(sizes.size(), " copies"));
    std::vector<std::vector<unsigned char>> hosts;
    std::vector<void*> devices;
    std::vector<cuda::HostToDevice> copies;
    for (size_t bytes : sizes) {
      std::vector<unsigned char> h(bytes);
      for (unsigned char& c : h) c = static_cast<unsigned char>(rng());
      hosts.push_back(std::move(h));
      ASSERT_OK_AND_ASSIGN(void* d, gpu->Allocate(std::max<size_t>(bytes, 1)));
      devices.push_back(d);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      copies.push_back({devices[i], hosts[i].data(), sizes[i]});
    }
    {
      std::lock_guard<std::recursive_mutex> exclusion(cuda::CaptureExclusion());
      ASSERT_OK(cuda::UploadThroughPinned(copies));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<unsigned char> back(sizes[i]);
      if (sizes[i] > 0) ASSERT_OK(gpu->CopyToHost(devices[i], back.data(), sizes[i]));
      EXPECT_TRUE(back == hosts[i]) << "copy " << i << " of " << sizes[i] << " bytes";
      gpu->Free(devices[i]);
    }
  }
}

}  // namespace
}  // namespace graft::cuda_test
