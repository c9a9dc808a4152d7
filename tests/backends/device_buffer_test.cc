#include <vector>

#include "graph/random_tensor.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/backends/test_backends.h"

namespace graft::backend_test {
namespace {

TEST(DeviceBuffers, CopiesAreExplicitAndRoundTrip) {
  auto fake = std::make_shared<FakeDeviceAllocator>();
  const Tensor host = RandomTensor(DType::kF32, {3, 5}, 4);
  EXPECT_TRUE(host.on_host());
  EXPECT_EQ(host.device().ToString(), "cpu");
  {
    ASSERT_OK_AND_ASSIGN(Tensor device, CopyToDevice(host, fake));
    EXPECT_FALSE(device.on_host());
    EXPECT_EQ(device.device().ToString(), "cuda:7");
    EXPECT_EQ(device.dims(), host.dims());
    EXPECT_NE(device.raw_data(), host.raw_data());
    EXPECT_EQ(fake->to_device.load(), 1);
    EXPECT_EQ(fake->live.load(), 1);
    // Already there: no copy.
    ASSERT_OK_AND_ASSIGN(Tensor same, CopyToDevice(device, fake));
    EXPECT_EQ(same.raw_data(), device.raw_data());
    ASSERT_OK_AND_ASSIGN(Tensor back, CopyToHost(device));
    EXPECT_TRUE(back.on_host());
    EXPECT_TRUE(back.BitwiseEqual(host));
    EXPECT_EQ(fake->to_host.load(), 1);
    // A host tensor is its own host copy.
    ASSERT_OK_AND_ASSIGN(Tensor host_again, CopyToHost(host));
    EXPECT_EQ(host_again.raw_data(), host.raw_data());
  }
  // The device buffer went back to its allocator with the last tensor.
  EXPECT_EQ(fake->live.load(), 0);
}

class FailingAllocator : public FakeDeviceAllocator {
 public:
  absl::StatusOr<void*> Allocate(size_t) override {
    return absl::ResourceExhaustedError("device out of memory");
  }
};

TEST(DeviceBuffers, AllocationErrorsReachTheCaller) {
  auto failing = std::make_shared<FailingAllocator>();
  EXPECT_THAT(CopyToDevice(Tensor(DType::kF32, {4}), failing),
              testing::StatusIs(absl::StatusCode::kResourceExhausted));
}

}  // namespace
}  // namespace graft::backend_test
