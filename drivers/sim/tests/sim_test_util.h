// Helpers shared by the simulator's own tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "drivers/sim/sim_device.h"
#include "hal/driver.h"

namespace hal::sim::testing {

inline Ref<Device> MakeDevice(const std::string& uri) {
  auto d = DefaultDriverRegistry().CreateDevice(uri);
  EXPECT_TRUE(d.ok()) << uri << ": " << d.status().ToString();
  return d.ok() ? d.value() : Ref<Device>();
}

inline Ref<Buffer> HostBuffer(Device* device, DeviceSize size, uint8_t fill) {
  BufferParams p;
  p.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  p.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  auto b = device->allocator()->AllocateBuffer(p, size);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return nullptr;
  EXPECT_TRUE(b.value()->MapFill(0, size, &fill, 1).ok());
  return b.value();
}

inline std::vector<uint8_t> Read(Buffer* b) {
  std::vector<uint8_t> out(b->byte_length());
  Status s = b->MapRead(0, out.data(), out.size());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

inline Status WaitFor(Semaphore* s, uint64_t v) {
  return s->Wait(v, Timeout::After(std::chrono::seconds(20)));
}

}  // namespace hal::sim::testing
