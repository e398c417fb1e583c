// Creates a simulator device through the installed driver registry, fills a
// buffer on a queue with a 4-byte pattern, waits for the signal and checks
// every byte it reads back. Exit status 0 only when all of that worked.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hal/driver.h"

namespace {
int Fail(const char* what, const hal::Status& status) {
  std::fprintf(stderr, "gpuhal_app: %s: %s\n", what, status.ToString().c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  const char* uri = argc > 1 ? argv[1] : "sim://";
  auto device = hal::DefaultDriverRegistry().CreateDevice(uri);
  if (!device.ok()) return Fail("creating the device", device.status());

  constexpr hal::DeviceSize kSize = 4096, kOffset = 256, kLength = 1024;
  hal::BufferParams params;
  params.type = hal::MemoryType::kHostLocal | hal::MemoryType::kHostCoherent;
  params.usage = hal::BufferUsage::kTransfer | hal::BufferUsage::kMapping;
  auto buffer = (*device)->allocator()->AllocateBuffer(params, kSize);
  if (!buffer.ok()) return Fail("allocating", buffer.status());
  if (auto s = (*buffer)->MapZero(0, kSize); !s.ok()) return Fail("zeroing", s);

  auto semaphore = (*device)->CreateSemaphore(0);
  if (!semaphore.ok()) return Fail("creating a semaphore", semaphore.status());
  const uint32_t pattern = 0xA1B2C3D4u;
  hal::SemaphorePoint signal{semaphore->get(), 1};
  if (auto s = (*device)->QueueFill(1, {}, {&signal, 1}, buffer->get(), kOffset,
                                    kLength, &pattern, sizeof(pattern));
      !s.ok()) {
    return Fail("queue fill", s);
  }
  if (auto s =
          (*semaphore)->Wait(1, hal::Timeout::After(std::chrono::seconds(30)));
      !s.ok()) {
    return Fail("waiting for the fill", s);
  }

  std::vector<uint8_t> bytes(kSize);
  if (auto s = (*buffer)->MapRead(0, bytes.data(), kSize); !s.ok()) {
    return Fail("reading back", s);
  }
  uint8_t expected_pattern[4];
  std::memcpy(expected_pattern, &pattern, 4);
  for (hal::DeviceSize i = 0; i < kSize; ++i) {
    const bool inside = i >= kOffset && i < kOffset + kLength;
    const uint8_t expected = inside ? expected_pattern[(i - kOffset) % 4] : 0;
    if (bytes[i] != expected) {
      std::fprintf(stderr, "gpuhal_app: byte %llu is 0x%02x, expected 0x%02x\n",
                   (unsigned long long)i, bytes[i], expected);
      return 1;
    }
  }
  std::printf(
      "gpuhal_app: %s filled %llu bytes at %llu, all %llu bytes checked\n",
      (*device)->info().name.c_str(), (unsigned long long)kLength,
      (unsigned long long)kOffset, (unsigned long long)kSize);
  return 0;
}
