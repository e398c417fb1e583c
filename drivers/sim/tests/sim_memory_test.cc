// The simulated device's memory limit (sim://?memory_mb=N): exact at its
// boundary, charged by every commit and given back by every release, on the
// synchronous path (AllocateBuffer) and the queue-ordered one (queue_alloca
// and queue_dealloca). A leak of the limit shows as a refusal after a few
// allocate/free rounds that each fit.
#include <string>

#include "drivers/sim/tests/sim_test_util.h"

namespace hal::sim::testing {
namespace {

constexpr DeviceSize kMiB = DeviceSize{1} << 20;

BufferParams DeviceLocal() {
  BufferParams p;
  p.type = MemoryType::kDeviceLocal;
  p.usage = BufferUsage::kDefault;
  return p;
}

TEST(SimMemory, ExactlyTheDeviceMemoryFitsAndOneByteMoreDoesNot) {
  Ref<Device> device = MakeDevice("sim://?memory_mb=8&seed=1");
  ASSERT_TRUE(device);
  EXPECT_EQ(device->info().memory_bytes, 8 * kMiB);
  auto whole = device->allocator()->AllocateBuffer(DeviceLocal(), 8 * kMiB);
  EXPECT_TRUE(whole.ok()) << whole.status().ToString();
  whole = StatusOr<Ref<Buffer>>(Ref<Buffer>());
  auto more = device->allocator()->AllocateBuffer(DeviceLocal(), 8 * kMiB + 1);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted)
      << more.status().ToString();
}

TEST(SimMemory, FreedMemoryComesBack) {
  Ref<Device> device = MakeDevice("sim://?memory_mb=8&seed=1");
  ASSERT_TRUE(device);
  Allocator* allocator = device->allocator();
  for (int round = 0; round < 4; ++round) {
    auto a = allocator->AllocateBuffer(DeviceLocal(), 5 * kMiB);
    ASSERT_TRUE(a.ok()) << "round " << round << ": " << a.status().ToString();
    // The limit holds while `a` lives: 5 + 5 > 8.
    auto b = allocator->AllocateBuffer(DeviceLocal(), 5 * kMiB);
    EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted)
        << "round " << round;
  }
  EXPECT_EQ(allocator->statistics().device_bytes_allocated, 0u);
}

TEST(SimMemory, QueueOrderedFreesGiveMemoryBack) {
  Ref<Device> device = MakeDevice("sim://?memory_mb=8&seed=1");
  ASSERT_TRUE(device);
  Ref<Semaphore> s = Semaphore::Create(0);
  uint64_t v = 0;
  for (int round = 0; round < 4; ++round) {
    SemaphorePoint wait{s.get(), v}, alloc_done{s.get(), v + 1},
        free_done{s.get(), v + 2};
    auto buffer = device->QueueAlloca(1, {&wait, 1}, {&alloc_done, 1},
                                      DeviceLocal(), 5 * kMiB);
    ASSERT_TRUE(buffer.ok())
        << "round " << round << ": " << buffer.status().ToString();
    ASSERT_TRUE(
        device
            ->QueueDealloca(1, {&alloc_done, 1}, {&free_done, 1}, buffer->get())
            .ok());
    v += 2;
    Status st = WaitFor(s.get(), v);
    ASSERT_TRUE(st.ok()) << "round " << round << ": " << st.ToString();
  }
  EXPECT_EQ(device->allocator()->statistics().device_bytes_allocated, 0u);
}

}  // namespace
}  // namespace hal::sim::testing
