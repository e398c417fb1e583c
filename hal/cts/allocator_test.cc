// CTS: allocators: compatibility, parameters, alignment, import, statistics.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

class Allocator : public CtsTest {};

// Host memory of whole pages, which every driver can import (Metal's
// newBufferWithBytesNoCopy: wraps nothing smaller).
class PageMemory {
 public:
  explicit PageMemory(size_t pages)
      : size_(pages * Page()),
        data_(static_cast<uint8_t*>(std::aligned_alloc(Page(), size_))) {}
  ~PageMemory() { std::free(data_); }
  PageMemory(const PageMemory&) = delete;
  PageMemory& operator=(const PageMemory&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  static size_t Page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

 private:
  size_t size_;
  uint8_t* data_;
};

TEST_F(Allocator, QueryCompatibilityAllocatable) {
  for (const BufferParams& params : {HostParams(), DeviceParams()}) {
    BufferParams resolved;
    BufferCompatibility c =
        allocator()->QueryCompatibility(params, 4096, &resolved);
    EXPECT_TRUE(Any(c & BufferCompatibility::kAllocatable))
        << MemoryTypeString(params.type);
    // The resolved parameters keep what was asked for.
    EXPECT_TRUE(AllOf(resolved.type, params.type))
        << MemoryTypeString(resolved.type);
    EXPECT_TRUE(AllOf(resolved.usage, params.usage))
        << BufferUsageString(resolved.usage);
  }
}

TEST_F(Allocator, QueryCompatibilityInvalidParamsIsNone) {
  BufferParams params = HostParams();
  params.usage = BufferUsage::kNone;
  EXPECT_EQ(allocator()->QueryCompatibility(params, 4096),
            BufferCompatibility::kNone);
  params = HostParams();
  params.min_alignment = 3;
  EXPECT_EQ(allocator()->QueryCompatibility(params, 4096),
            BufferCompatibility::kNone);
  params = DeviceParams();
  params.usage = params.usage | BufferUsage::kMappingScoped;
  EXPECT_EQ(allocator()->QueryCompatibility(params, 4096),
            BufferCompatibility::kNone);
}

TEST_F(Allocator, RequestedMemoryTypeHonoured) {
  struct Case {
    BufferParams params;
    DeviceSize size;
  } cases[] = {{HostParams(), 100}, {DeviceParams(), 1000}};
  for (const Case& c : cases) {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                             allocator()->AllocateBuffer(c.params, c.size));
    EXPECT_TRUE(AllOf(buffer->memory_type(), c.params.type))
        << "asked " << MemoryTypeString(c.params.type) << ", got "
        << MemoryTypeString(buffer->memory_type());
    EXPECT_TRUE(AllOf(buffer->allowed_usage(), c.params.usage))
        << BufferUsageString(buffer->allowed_usage());
    EXPECT_EQ(buffer->byte_length(), c.size);
    EXPECT_EQ(buffer->byte_offset(), 0u);
    EXPECT_EQ(buffer->allocated_buffer(), buffer.get());
    EXPECT_EQ(buffer->state(), BufferState::kLive);
  }
}

TEST_F(Allocator, ZeroSizeAllocation) {
  for (const BufferParams& params : {HostParams(), DeviceParams()}) {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                             allocator()->AllocateBuffer(params, 0));
    EXPECT_EQ(buffer->byte_length(), 0u);
    EXPECT_EQ(buffer->state(), BufferState::kLive);
  }
}

TEST_F(Allocator, UsageNoneIsInvalidArgument) {
  BufferParams params = HostParams();
  params.usage = BufferUsage::kNone;
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->AllocateBuffer(params, 64));
  params = DeviceParams();
  params.usage = BufferUsage::kNone;
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->AllocateBuffer(params, 64));
}

TEST_F(Allocator, BadAlignmentIsInvalidArgument) {
  for (DeviceSize alignment :
       {DeviceSize{3}, DeviceSize{48}, kMaxAlignment * 2}) {
    BufferParams params = HostParams();
    params.min_alignment = alignment;
    CTS_EXPECT_CODE(kInvalidArgument, allocator()->AllocateBuffer(params, 64));
  }
}

TEST_F(Allocator, MappingUsageOnDeviceOnlyMemoryIsInvalidArgument) {
  BufferParams params = DeviceParams();
  params.usage = BufferUsage::kDefault | BufferUsage::kMappingScoped;
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->AllocateBuffer(params, 64));
  params.usage = BufferUsage::kDefault | BufferUsage::kMappingPersistent;
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->AllocateBuffer(params, 64));
}

TEST_F(Allocator, MinAlignmentHonoured) {
  for (DeviceSize alignment :
       {DeviceSize{256}, DeviceSize{4096}, kMaxAlignment}) {
    BufferParams params = HostParams();
    params.min_alignment = alignment;
    // Several odd-sized buffers so that a lucky natural alignment is unlikely.
    std::vector<Ref<::hal::Buffer>> keep;
    for (DeviceSize size : {DeviceSize{1}, DeviceSize{100}, DeviceSize{333}}) {
      CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                               allocator()->AllocateBuffer(params, size));
      CTS_ASSERT_OK_AND_ASSIGN(
          BufferMapping m,
          buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % alignment, 0u)
          << "alignment " << alignment << ", size " << size;
      keep.push_back(buffer);
    }
  }
}

TEST_F(Allocator, ImportAliasesHostMemory) {
  CTS_REQUIRE_TAG(kTagImport);
  PageMemory page(1);
  uint8_t* memory = page.data();
  ASSERT_NE(memory, nullptr);
  for (size_t i = 0; i < page.size(); ++i) memory[i] = static_cast<uint8_t>(i);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->ImportHostAllocation(
                               HostParams(), memory, page.size(), nullptr));
  EXPECT_EQ(buffer->byte_length(), page.size());
  EXPECT_TRUE(AllOf(buffer->memory_type(), MemoryType::kHostVisible));
  uint8_t read[16];
  CTS_ASSERT_OK(buffer->MapRead(100, read, sizeof(read)));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(read[i], 100 + i);
  const uint8_t write[4] = {0xA1, 0xA2, 0xA3, 0xA4};
  CTS_ASSERT_OK(buffer->MapWrite(8, write, sizeof(write)));
  EXPECT_EQ(std::memcmp(memory + 8, write, sizeof(write)), 0);
  EXPECT_EQ(memory[7], 7);
  EXPECT_EQ(memory[12], 12);
}

TEST_F(Allocator, ImportReleaseRunsExactlyOnce) {
  CTS_REQUIRE_TAG(kTagImport);
  PageMemory memory(1);
  ASSERT_NE(memory.data(), nullptr);
  std::memset(memory.data(), 0x5A, memory.size());
  auto calls = std::make_shared<std::atomic<int>>(0);
  uint64_t imports_before = allocator()->statistics().imports;
  {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                             allocator()->ImportHostAllocation(
                                 HostParams(), memory.data(), memory.size(),
                                 [calls] { calls->fetch_add(1); }));
    EXPECT_EQ(allocator()->statistics().imports, imports_before + 1);
    Ref<::hal::Buffer> copy = buffer;
    buffer.reset();
    EXPECT_EQ(calls->load(), 0) << "released while a reference is alive";
  }
  EXPECT_EQ(calls->load(), 1);
}

TEST_F(Allocator, ImportReleaseWaitsForLastSubspan) {
  CTS_REQUIRE_TAG(kTagImport);
  PageMemory memory(1);
  ASSERT_NE(memory.data(), nullptr);
  for (size_t i = 0; i < memory.size(); ++i)
    memory.data()[i] = static_cast<uint8_t>(i * 3);
  auto calls = std::make_shared<std::atomic<int>>(0);
  Ref<::hal::Buffer> sub;
  {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                             allocator()->ImportHostAllocation(
                                 HostParams(), memory.data(), memory.size(),
                                 [calls] { calls->fetch_add(1); }));
    CTS_ASSERT_OK_AND_ASSIGN(sub, buffer->Subspan(512, 64));
  }
  // The buffer's own reference is gone; the subspan keeps the memory.
  EXPECT_EQ(calls->load(), 0);
  uint8_t read[64];
  CTS_ASSERT_OK(sub->MapRead(0, read, sizeof(read)));
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(read[i], static_cast<uint8_t>((512 + i) * 3));
  sub.reset();
  EXPECT_EQ(calls->load(), 1);
}

TEST_F(Allocator, ImportNullWithSizeIsInvalidArgumentAndKeepsOwnership) {
  CTS_REQUIRE_TAG(kTagImport);
  auto calls = std::make_shared<std::atomic<int>>(0);
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->ImportHostAllocation(
                                        HostParams(), nullptr, 64,
                                        [calls] { calls->fetch_add(1); }));
  EXPECT_EQ(calls->load(), 0) << "a failed import must not call release";
}

TEST_F(Allocator, ImportInvalidParamsDoesNotRelease) {
  CTS_REQUIRE_TAG(kTagImport);
  auto calls = std::make_shared<std::atomic<int>>(0);
  alignas(256) uint8_t memory[512] = {};
  // Not HOST_VISIBLE.
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->ImportHostAllocation(
                                        DeviceParams(), memory, 256,
                                        [calls] { calls->fetch_add(1); }));
  // Pointer below the requested alignment.
  BufferParams aligned = HostParams();
  aligned.min_alignment = 256;
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->ImportHostAllocation(
                                        aligned, memory + 1, 256,
                                        [calls] { calls->fetch_add(1); }));
  // No usage.
  BufferParams no_usage = HostParams();
  no_usage.usage = BufferUsage::kNone;
  CTS_EXPECT_CODE(kInvalidArgument,
                  allocator()->ImportHostAllocation(
                      no_usage, memory, 256, [calls] { calls->fetch_add(1); }));
  EXPECT_EQ(calls->load(), 0);
}

TEST_F(Allocator, ImportNullZeroSize) {
  CTS_REQUIRE_TAG(kTagImport);
  auto calls = std::make_shared<std::atomic<int>>(0);
  {
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<::hal::Buffer> buffer,
        allocator()->ImportHostAllocation(HostParams(), nullptr, 0,
                                          [calls] { calls->fetch_add(1); }));
    EXPECT_EQ(buffer->byte_length(), 0u);
  }
  EXPECT_EQ(calls->load(), 1);
}

TEST_F(Allocator, StatisticsTrackHostBytes) {
  constexpr DeviceSize kSize = 64 * 1024;
  AllocatorStatistics before = allocator()->statistics();
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->AllocateBuffer(HostParams(), kSize));
  AllocatorStatistics during = allocator()->statistics();
  EXPECT_EQ(during.host_bytes_allocated, before.host_bytes_allocated + kSize);
  EXPECT_EQ(during.device_bytes_allocated, before.device_bytes_allocated);
  EXPECT_GE(during.host_bytes_peak, during.host_bytes_allocated);
  EXPECT_EQ(during.host_bytes_total, before.host_bytes_total + kSize);
  EXPECT_EQ(during.live_allocations, before.live_allocations + 1);
  EXPECT_EQ(during.total_allocations, before.total_allocations + 1);
  buffer.reset();
  AllocatorStatistics after = allocator()->statistics();
  EXPECT_EQ(after.host_bytes_allocated, before.host_bytes_allocated);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.host_bytes_total, during.host_bytes_total);
  EXPECT_EQ(after.host_bytes_peak, during.host_bytes_peak);
}

TEST_F(Allocator, StatisticsTrackDeviceBytes) {
  constexpr DeviceSize kSize = 128 * 1024;
  AllocatorStatistics before = allocator()->statistics();
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->AllocateBuffer(DeviceParams(), kSize));
  AllocatorStatistics during = allocator()->statistics();
  EXPECT_EQ(during.device_bytes_allocated,
            before.device_bytes_allocated + kSize);
  EXPECT_EQ(during.host_bytes_allocated, before.host_bytes_allocated);
  EXPECT_GE(during.device_bytes_peak, during.device_bytes_allocated);
  EXPECT_EQ(during.device_bytes_total, before.device_bytes_total + kSize);
  EXPECT_EQ(during.live_allocations, before.live_allocations + 1);
  buffer.reset();
  AllocatorStatistics after = allocator()->statistics();
  EXPECT_EQ(after.device_bytes_allocated, before.device_bytes_allocated);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
}

// Whatever the memory type and alignment, the bytes the device writes are
// the bytes the host reads (through a mapping where the memory is host
// visible, else through a copy): a buffer padded for its alignment must use
// one aligned address on both sides.
TEST_F(Allocator, AlignedBuffersHoldWhatTheDeviceWrites) {
  BufferParams shared = DeviceParams();
  shared.type = MemoryType::kDeviceLocal | MemoryType::kHostVisible |
                MemoryType::kHostCoherent;
  shared.usage = BufferUsage::kDefault | BufferUsage::kMappingScoped;
  const struct {
    const char* what;
    BufferParams params;
  } types[] = {{"host", HostParams()},
               {"device", DeviceParams()},
               {"device-local host-visible", shared}};
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  uint64_t next = 0;
  for (const auto& type : types) {
    for (DeviceSize alignment :
         {DeviceSize{0}, DeviceSize{512}, DeviceSize{4096}, kMaxAlignment}) {
      BufferParams params = type.params;
      params.min_alignment = alignment;
      auto buffer = allocator()->AllocateBuffer(params, 1000);
      if (!buffer.ok() &&
          buffer.status().code() == StatusCode::kInvalidArgument &&
          &type == &types[2]) {
        continue;  // the device has no such memory type
      }
      CTS_ASSERT_OK(buffer.status());
      const uint32_t pattern = 0xa5000000u | static_cast<uint32_t>(next);
      Bytes head(100);
      for (size_t i = 0; i < head.size(); ++i) head[i] = uint8_t(i * 7 + next);
      CTS_ASSERT_OK(device()->QueueFill(1, Points{{s.get(), next}},
                                        Points{{s.get(), next + 1}},
                                        buffer->get(), 0, 1000, &pattern, 4));
      CTS_ASSERT_OK(device()->QueueUpdate(1, Points{{s.get(), next + 1}},
                                          Points{{s.get(), next + 2}},
                                          head.data(), buffer->get(), 0, 100));
      next += 2;
      CTS_ASSERT_OK(WaitFor(s.get(), next));
      Bytes want(1000);
      for (size_t i = 0; i < want.size(); ++i) {
        want[i] = static_cast<uint8_t>(pattern >> (8 * (i % 4)));
      }
      std::copy(head.begin(), head.end(), want.begin());
      EXPECT_EQ(Diff(ReadBack(buffer->get()), want), "")
          << type.what << " memory, min_alignment " << alignment;
    }
  }
}

// Sizes no memory can hold, with alignments whose rounding or padding
// overflows a 64-bit size: every one is RESOURCE_EXHAUSTED and allocates
// nothing (a wrapped rounding used to give a tiny block).
TEST_F(Allocator, HugeSizeIsResourceExhausted) {
  const DeviceSize sizes[] = {~DeviceSize{0}, ~DeviceSize{0} - 100,
                              DeviceSize{1} << 63, kMaxAllocationSize + 1,
                              kMaxAllocationSize};
  const DeviceSize alignments[] = {0, 4096, kMaxAlignment};
  for (const BufferParams& base : {HostParams(), DeviceParams()}) {
    for (DeviceSize size : sizes) {
      for (DeviceSize alignment : alignments) {
        BufferParams params = base;
        params.min_alignment = alignment;
        AllocatorStatistics before = allocator()->statistics();
        auto buffer = allocator()->AllocateBuffer(params, size);
        EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted)
            << MemoryTypeString(params.type) << ", size " << size
            << ", alignment " << alignment << ": "
            << buffer.status().ToString();
        AllocatorStatistics after = allocator()->statistics();
        EXPECT_EQ(after.total_allocations, before.total_allocations);
        EXPECT_EQ(after.host_bytes_allocated, before.host_bytes_allocated);
        EXPECT_EQ(after.device_bytes_allocated, before.device_bytes_allocated);
      }
    }
  }
}

// More than the device has is out of memory, as a GPU reports it, not a bad
// argument; the params themselves are still allocatable.
TEST_F(Allocator, LargerThanDeviceMemoryIsResourceExhausted) {
  const DeviceSize memory = device()->info().memory_bytes;
  ASSERT_GT(memory, 0u);
  BufferParams params = DeviceParams();
  EXPECT_TRUE(Any(allocator()->QueryCompatibility(params, memory + 1) &
                  BufferCompatibility::kAllocatable));
  CTS_EXPECT_CODE(kResourceExhausted,
                  allocator()->AllocateBuffer(params, memory + 1));
  // The allocator still works.
  CTS_EXPECT_OK(allocator()->AllocateBuffer(params, 4096));
}

TEST_F(Allocator, ImportWrappingTheAddressSpaceIsInvalidArgument) {
  CTS_REQUIRE_TAG(kTagImport);
  auto calls = std::make_shared<std::atomic<int>>(0);
  // Never dereferenced: the range check comes first.
  void* near_top = reinterpret_cast<void*>(~uintptr_t{0} - 4095);
  CTS_EXPECT_CODE(kInvalidArgument, allocator()->ImportHostAllocation(
                                        HostParams(), near_top, 8192,
                                        [calls] { calls->fetch_add(1); }));
  EXPECT_EQ(calls->load(), 0);
}

TEST_F(Allocator, SubspanDoesNotAllocate) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->AllocateBuffer(HostParams(), 4096));
  AllocatorStatistics before = allocator()->statistics();
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> sub, buffer->Subspan(1024, 1024));
  AllocatorStatistics after = allocator()->statistics();
  EXPECT_EQ(after.host_bytes_allocated, before.host_bytes_allocated);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(sub->allocator(), allocator());
}

}  // namespace
}  // namespace hal::cts
