// Checks the GPU-stream drivers (CUDA, HIP) share, run by each driver's
// tests over its simulated vendor library. `Controls` is the test's table of
// halsim_control.h counters (launched, run, work_done, violations, pause).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "hal/device.h"

namespace hal::gpu::testing {

inline BufferParams HostParams() {
  BufferParams p;
  p.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  p.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  return p;
}

// Two queues (two streams): queue 0 fills a device buffer and signals s=1;
// queue 1 waits s>=1 and copies the buffer to host memory. With host
// functions held back, the copy still lands, and the host never sees s=1
// before that: the wait was a stream wait on queue 0's event, with no host
// round trip. `launched` and `run` may be null for a library with no host
// functions to count (Level Zero, whose simulator holds the driver's
// emulating host waits instead while paused).
template <typename Controls>
void CheckDeviceToDeviceChainMakesNoHostRoundTrip(const Ref<Device>& device,
                                                  const Controls& controls) {
  ASSERT_TRUE(device);
  constexpr DeviceSize kSize = 4096;
  BufferParams device_params;
  device_params.type = MemoryType::kDeviceLocal;
  auto source = device->allocator()->AllocateBuffer(device_params, kSize);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto target = device->allocator()->AllocateBuffer(HostParams(), kSize);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  ASSERT_TRUE((*target)->MapZero(0, kSize).ok());
  auto mapping = (*target)->Map(MappingMode::kPersistent, MemoryAccess::kRead);
  ASSERT_TRUE(mapping.ok());
  auto s = device->CreateSemaphore(0);
  auto t = device->CreateSemaphore(0);
  ASSERT_TRUE(s.ok() && t.ok());

  const bool counts_host_functions = controls.launched && controls.run;
  const uint64_t launched_before =
      counts_host_functions ? controls.launched() : 0;
  const uint64_t run_before = counts_host_functions ? controls.run() : 0;
  const uint64_t work_before = controls.work_done();
  controls.pause(1);
  const uint32_t pattern = 0xA5A5A5A5u;
  SemaphorePoint s1{s->get(), 1}, t1{t->get(), 1};
  ASSERT_TRUE(
      device->QueueFill(1, {}, {&s1, 1}, source->get(), 0, kSize, &pattern, 4)
          .ok());
  ASSERT_TRUE(device
                  ->QueueCopy(2, {&s1, 1}, {&t1, 1}, source->get(), 0,
                              target->get(), 0, kSize)
                  .ok());
  // Both the fill and the copy run on their streams while no host function
  // may run (the simulator counts finished transfers and fills).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (controls.work_done() - work_before < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(controls.work_done() - work_before, 2u)
      << "the copy on queue 1 did not run while host functions were held: "
         "it waited for the host";
  // No host function ran, so the host has not seen s=1 yet.
  EXPECT_EQ(*(*s)->Query(), 0u);
  if (counts_host_functions) {
    EXPECT_EQ(controls.run(), run_before);
    EXPECT_EQ(controls.launched() - launched_before, 2u)
        << "one completion host function per operation";
  }
  controls.pause(0);
  EXPECT_TRUE((*t)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(*(*s)->Query(), 1u);
  const uint8_t* bytes = mapping->data();
  EXPECT_EQ(bytes[0], 0xA5);
  EXPECT_EQ(bytes[kSize - 1], 0xA5);
  EXPECT_EQ(controls.violations(), 0u);
}

}  // namespace hal::gpu::testing
