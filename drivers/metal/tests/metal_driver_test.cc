// The Metal driver over the simulated Metal framework: the device->device
// path of semaphores (no host round trip), and the host path it falls back
// to for a value nobody has submitted yet.
#include "drivers/metal/metal_driver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
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

// managed=1: host-visible memory is Managed storage (two copies in the
// simulated framework, which reports a GPU read of unannounced host writes
// and fails this test's run through its FAIL_REGULAR_EXPRESSION).
class MetalManaged : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterMetalDriver(&registry_).ok());
    auto device = registry_.CreateDevice("metal://?queues=1&managed=1");
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
  }
  Ref<Buffer> NewBuffer(MemoryType type, DeviceSize n) {
    BufferParams params;
    params.type = type;
    params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
    auto b = device_->allocator()->AllocateBuffer(params, n);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : Ref<Buffer>();
  }
  // Copies `from` to `to` on the queue and waits.
  void Copy(Buffer* from, Buffer* to, DeviceSize n) {
    auto s = device_->CreateSemaphore(0);
    ASSERT_TRUE(s.ok());
    SemaphorePoint signal{s->get(), 1};
    ASSERT_TRUE(
        device_->QueueCopy(1, {}, {&signal, 1}, from, 0, to, 0, n).ok());
    ASSERT_TRUE((*s)->Wait(1, Timeout::After(kTimeout)).ok());
  }

  DriverRegistry registry_;
  Ref<Device> device_;
};

// Without HOST_COHERENT the memory is not coherent: a flush announces the
// host's writes (didModifyRange:), and the GPU's writes are synchronized
// back before the operation's signal.
TEST_F(MetalManaged, NonCoherentFlushAndGpuWritesRoundTrip) {
  Ref<Buffer> a = NewBuffer(MemoryType::kHostLocal, 256);
  Ref<Buffer> b = NewBuffer(MemoryType::kHostLocal, 256);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(AllOf(a->memory_type(), MemoryType::kHostCoherent));
  {
    auto m = a->Map(MappingMode::kPersistent, MemoryAccess::kWrite);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::memset(m->data(), 0x42, 256);
    ASSERT_TRUE(m->Flush(0, 256).ok());
    Copy(a.get(), b.get(), 256);  // the mapping is still open: flushed
  }
  std::vector<uint8_t> got(256);
  ASSERT_TRUE(b->MapRead(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(256, 0x42));
}

// HOST_COHERENT on Managed storage: the driver announces the bytes of a
// write mapping still open when the GPU work is submitted.
TEST_F(MetalManaged, CoherentOpenMappingIsAnnouncedAtSubmission) {
  Ref<Buffer> a =
      NewBuffer(MemoryType::kHostLocal | MemoryType::kHostCoherent, 128);
  Ref<Buffer> b =
      NewBuffer(MemoryType::kHostLocal | MemoryType::kHostCoherent, 128);
  ASSERT_TRUE(a && b);
  auto m = a->Map(MappingMode::kPersistent, MemoryAccess::kWrite);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::memset(m->data(), 0x17, 128);  // no flush: coherent memory
  Copy(a.get(), b.get(), 128);
  std::vector<uint8_t> got(128);
  ASSERT_TRUE(b->MapRead(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(128, 0x17));
}

// Host import wraps whole pages; anything else is INVALID_ARGUMENT, and
// the caller keeps the memory (no release call).
TEST_F(MetalManaged, ImportNeedsWholePages) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* memory = static_cast<uint8_t*>(std::aligned_alloc(page, 2 * page));
  ASSERT_NE(memory, nullptr);
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto release = [calls] { calls->fetch_add(1); };
  for (auto [offset, length] :
       {std::pair<size_t, size_t>{64, page}, {0, page + 100}}) {
    auto r = device_->allocator()->ImportHostAllocation(params, memory + offset,
                                                        length, release);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
        << r.status().ToString();
    EXPECT_NE(r.status().ToString().find("whole pages"), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_EQ(calls->load(), 0);
  {
    auto r = device_->allocator()->ImportHostAllocation(params, memory,
                                                        2 * page, release);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::memset(memory, 0x61, 2 * page);
    Ref<Buffer> b =
        NewBuffer(MemoryType::kHostLocal | MemoryType::kHostCoherent, 2 * page);
    Copy(r->get(), b.get(), 2 * page);
    std::vector<uint8_t> got(2 * page);
    ASSERT_TRUE(b->MapRead(0, got.data(), got.size()).ok());
    EXPECT_EQ(got, std::vector<uint8_t>(2 * page, 0x61));
  }
  ASSERT_TRUE(device_->WaitIdle(Timeout::After(kTimeout)).ok());
  EXPECT_EQ(calls->load(), 1);
  std::free(memory);
}

}  // namespace
}  // namespace hal::metal
