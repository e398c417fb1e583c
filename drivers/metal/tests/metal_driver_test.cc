// The Metal driver over the simulated Metal framework: the device->device
// path of semaphores (no host round trip), and the host path it falls back
// to for a value nobody has submitted yet.
#include "drivers/metal/metal_driver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "hal/device.h"
#include "hal/driver.h"

namespace hal::metal {
namespace {

class MetalDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterMetalDriver(&registry_).ok());
    auto device = registry_.CreateDevice("metal://?queues=2");
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
  }
  Ref<Semaphore> NewSemaphore() {
    auto s = device_->CreateSemaphore(0);
    EXPECT_TRUE(s.ok());
    return std::move(s).value();
  }
  Ref<Buffer> NewBuffer(DeviceSize n) {
    BufferParams params;
    params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
    params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
    auto b = device_->allocator()->AllocateBuffer(params, n);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return std::move(b).value();
  }
  MetalWaitCounts Counts() {
    auto c = GetMetalWaitCounts(device_.get());
    EXPECT_TRUE(c.ok());
    return c.ok() ? *c : MetalWaitCounts{};
  }

  DriverRegistry registry_;
  Ref<Device> device_;
};

constexpr auto kTimeout = std::chrono::seconds(20);

// A chain across the two queues, each link waiting for the one before,
// submitted in order: every wait is encoded (device to device), none is
// held on the host, and the chain's data arrives.
TEST_F(MetalDriver, ChainAcrossQueuesHasNoHostRoundTrip) {
  constexpr int kLinks = 8;
  Ref<Semaphore> s = NewSemaphore();
  Ref<Buffer> a = NewBuffer(64), b = NewBuffer(64);
  const uint32_t pattern = 0x11;
  SemaphorePoint first{s.get(), 1};
  ASSERT_TRUE(
      device_->QueueFill(1, {}, {&first, 1}, a.get(), 0, 64, &pattern, 1).ok());
  for (int i = 1; i < kLinks; ++i) {
    // Copies back and forth between the buffers, alternating queues.
    Buffer* from = i % 2 ? a.get() : b.get();
    Buffer* to = i % 2 ? b.get() : a.get();
    SemaphorePoint wait{s.get(), uint64_t(i)}, signal{s.get(), uint64_t(i + 1)};
    ASSERT_TRUE(device_
                    ->QueueCopy(QueueAffinity{1} << (i % 2), {&wait, 1},
                                {&signal, 1}, from, 0, to, 0, 64)
                    .ok());
  }
  ASSERT_TRUE(s->Wait(kLinks, Timeout::After(kTimeout)).ok());
  MetalWaitCounts c = Counts();
  EXPECT_EQ(c.encoded, uint64_t(kLinks - 1));
  EXPECT_EQ(c.host, 0u);
  std::vector<uint8_t> got(64);
  ASSERT_TRUE((kLinks - 1) % 2 ? b->MapRead(0, got.data(), 64).ok()
                               : a->MapRead(0, got.data(), 64).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(64, 0x11));
}

// A wait for a value no submitted work signals is held on the host, and the
// operation runs once the host signals it.
TEST_F(MetalDriver, WaitBeforeSignalIsHeldOnTheHost) {
  Ref<Semaphore> gate = NewSemaphore(), done = NewSemaphore();
  Ref<Buffer> a = NewBuffer(16);
  const uint32_t pattern = 0x22;
  SemaphorePoint wait{gate.get(), 1}, signal{done.get(), 1};
  ASSERT_TRUE(
      device_
          ->QueueFill(1, {&wait, 1}, {&signal, 1}, a.get(), 0, 16, &pattern, 1)
          .ok());
  EXPECT_EQ(done->Wait(1, Timeout::Immediate()).code(),
            StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(gate->Signal(1).ok());
  ASSERT_TRUE(done->Wait(1, Timeout::After(kTimeout)).ok());
  MetalWaitCounts c = Counts();
  EXPECT_EQ(c.encoded, 0u);
  EXPECT_EQ(c.host, 1u);
}

}  // namespace
}  // namespace hal::metal
