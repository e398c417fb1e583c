// CTS: buffers: mapping, host-side fill/write/read, subspans, views.
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

// Reads all bytes of a host-visible buffer, failing the test on error.
Bytes ReadAll(::hal::Buffer* buffer) {
  Bytes out(buffer->byte_length());
  if (!out.empty()) {
    Status s = buffer->MapRead(0, out.data(), out.size());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return out;
}

// `expected` with bytes [offset, offset+length) set to the repeated pattern.
Bytes Filled(Bytes expected, size_t offset, size_t length,
             const uint8_t* pattern, size_t pattern_length) {
  for (size_t i = 0; i < length; ++i) {
    expected[offset + i] = pattern[i % pattern_length];
  }
  return expected;
}

class Buffer : public CtsTest {};

TEST_F(Buffer, DeviceOnlyMemoryRefusesMap) {
  CTS_REQUIRE_TAG(kTagDeviceOnlyMemory);
  auto buffer = NewDeviceBuffer(64);
  ASSERT_TRUE(buffer);
  ASSERT_FALSE(AllOf(buffer->memory_type(), MemoryType::kHostVisible));
  CTS_EXPECT_CODE(kInvalidArgument,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
  CTS_EXPECT_CODE(kInvalidArgument,
                  buffer->Map(MappingMode::kPersistent, MemoryAccess::kWrite));
  uint8_t bytes[8] = {};
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapRead(0, bytes, sizeof(bytes)));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapWrite(0, bytes, sizeof(bytes)));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapZero(0, kWholeBuffer));
}

TEST_F(Buffer, MapWithoutMappingUsageIsInvalidArgument) {
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  params.usage = BufferUsage::kTransfer;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->AllocateBuffer(params, 64));
  CTS_EXPECT_CODE(kInvalidArgument,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
}

TEST_F(Buffer, MapAccessNotAllowedIsInvalidArgument) {
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  params.access = MemoryAccess::kRead;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> buffer,
                           allocator()->AllocateBuffer(params, 64));
  CTS_EXPECT_OK(buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
  CTS_EXPECT_CODE(kInvalidArgument,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kWrite));
  const uint8_t b = 1;
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapWrite(0, &b, 1));
  CTS_EXPECT_CODE(kInvalidArgument,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kNone));
}

TEST_F(Buffer, MapZeroFillWriteReadWholeBuffer) {
  constexpr size_t kSize = 256;
  auto buffer = NewHostBuffer(kSize, 0xAA);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(ReadAll(buffer.get()), Bytes(kSize, 0xAA));
  CTS_ASSERT_OK(buffer->MapZero(0, kWholeBuffer));
  EXPECT_EQ(ReadAll(buffer.get()), Bytes(kSize, 0x00));
  const uint8_t pattern[4] = {0x01, 0x02, 0x03, 0x04};
  CTS_ASSERT_OK(buffer->MapFill(0, kWholeBuffer, pattern, 4));
  EXPECT_EQ(ReadAll(buffer.get()), Filled(Bytes(kSize), 0, kSize, pattern, 4));
  Bytes data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<uint8_t>(255 - i);
  CTS_ASSERT_OK(buffer->MapWrite(0, data.data(), data.size()));
  EXPECT_EQ(ReadAll(buffer.get()), data);
  // Through an explicit mapping too.
  CTS_ASSERT_OK_AND_ASSIGN(
      BufferMapping m, buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
  ASSERT_EQ(m.size(), kSize);
  EXPECT_EQ(Bytes(m.data(), m.data() + m.size()), data);
}

TEST_F(Buffer, MapFillAtOffsets) {
  constexpr size_t kSize = 96;
  const uint8_t patterns[3][4] = {
      {0x11}, {0x21, 0x22}, {0x41, 0x42, 0x43, 0x44}};
  const size_t lengths[3] = {1, 2, 4};
  for (int p = 0; p < 3; ++p) {
    const size_t pl = lengths[p];
    for (size_t offset : {size_t{0}, pl, 3 * pl, 8 * pl}) {
      for (size_t length : {pl, 2 * pl, 5 * pl, 12 * pl}) {
        auto buffer = NewHostBuffer(kSize, 0xEE);
        ASSERT_TRUE(buffer);
        CTS_ASSERT_OK(buffer->MapFill(offset, length, patterns[p], pl));
        EXPECT_EQ(ReadAll(buffer.get()),
                  Filled(Bytes(kSize, 0xEE), offset, length, patterns[p], pl))
            << "pattern " << pl << " offset " << offset << " length " << length;
      }
    }
  }
}

TEST_F(Buffer, MapWriteReadAtOffsets) {
  constexpr size_t kSize = 128;
  auto buffer = NewHostBuffer(kSize, 0x00);
  ASSERT_TRUE(buffer);
  const uint8_t data[7] = {1, 2, 3, 4, 5, 6, 7};
  CTS_ASSERT_OK(buffer->MapWrite(61, data, sizeof(data)));
  Bytes expected(kSize, 0);
  std::memcpy(expected.data() + 61, data, sizeof(data));
  EXPECT_EQ(ReadAll(buffer.get()), expected);
  uint8_t read[5] = {};
  CTS_ASSERT_OK(buffer->MapRead(62, read, sizeof(read)));
  EXPECT_EQ(Bytes(read, read + 5), Bytes(data + 1, data + 6));
  CTS_ASSERT_OK(buffer->MapZero(63, 2));
  expected[63] = expected[64] = 0;
  EXPECT_EQ(ReadAll(buffer.get()), expected);
  // The last byte is addressable.
  const uint8_t last = 0x99;
  CTS_ASSERT_OK(buffer->MapWrite(kSize - 1, &last, 1));
  uint8_t got = 0;
  CTS_ASSERT_OK(buffer->MapRead(kSize - 1, &got, 1));
  EXPECT_EQ(got, 0x99);
}

TEST_F(Buffer, SubspanWritesVisibleThroughParent) {
  constexpr size_t kSize = 128;
  auto parent = NewHostBuffer(kSize, 0x00);
  ASSERT_TRUE(parent);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> sub, parent->Subspan(16, 64));
  EXPECT_EQ(sub->byte_offset(), 16u);
  EXPECT_EQ(sub->byte_length(), 64u);
  EXPECT_EQ(sub->allocated_buffer(), parent.get());
  EXPECT_TRUE(AllOf(sub->memory_type(), parent->memory_type()));
  const uint8_t data[8] = {0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7};
  CTS_ASSERT_OK(sub->MapWrite(4, data, sizeof(data)));
  Bytes expected(kSize, 0);
  std::memcpy(expected.data() + 20, data, sizeof(data));
  EXPECT_EQ(ReadAll(parent.get()), expected);

  // A subspan of a subspan is relative to its own parent.
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> sub2, sub->Subspan(32, 16));
  EXPECT_EQ(sub2->byte_offset(), 48u);
  EXPECT_EQ(sub2->allocated_buffer(), parent.get());
  const uint16_t pattern = 0xC1C2;
  CTS_ASSERT_OK(sub2->MapFill(2, 4, &pattern, 2));
  std::memcpy(expected.data() + 50, &pattern, 2);
  std::memcpy(expected.data() + 52, &pattern, 2);
  EXPECT_EQ(ReadAll(parent.get()), expected);

  // Parent writes are visible through the subspan, at the subspan's offsets.
  const uint8_t marker = 0x7E;
  CTS_ASSERT_OK(parent->MapWrite(16, &marker, 1));
  uint8_t got = 0;
  CTS_ASSERT_OK(sub->MapRead(0, &got, 1));
  EXPECT_EQ(got, 0x7E);
  // The mapping of a subspan starts at the subspan.
  CTS_ASSERT_OK_AND_ASSIGN(BufferMapping m,
                           sub->Map(MappingMode::kScoped, MemoryAccess::kRead));
  ASSERT_EQ(m.size(), 64u);
  EXPECT_EQ(m.data()[0], 0x7E);
  EXPECT_EQ(m.data()[4], 0xB0);
}

TEST_F(Buffer, ZeroLengthFillIsNoop) {
  auto buffer = NewHostBuffer(32, 0x3C);
  ASSERT_TRUE(buffer);
  const uint8_t p1 = 0xFF;
  const uint32_t p4 = 0xFFFFFFFF;
  CTS_EXPECT_OK(buffer->MapFill(8, 0, &p1, 1));
  CTS_EXPECT_OK(buffer->MapFill(32, 0, &p4, 4));
  CTS_EXPECT_OK(buffer->MapZero(4, 0));
  CTS_EXPECT_OK(buffer->MapWrite(3, &p1, 0));
  EXPECT_EQ(ReadAll(buffer.get()), Bytes(32, 0x3C));
}

TEST_F(Buffer, OutOfRangeIsOutOfRange) {
  constexpr DeviceSize kSize = 64;
  auto buffer = NewHostBuffer(kSize, 0x11);
  ASSERT_TRUE(buffer);
  uint8_t bytes[16] = {};
  CTS_EXPECT_CODE(kOutOfRange, buffer->Map(MappingMode::kScoped,
                                           MemoryAccess::kRead, 0, kSize + 1));
  CTS_EXPECT_CODE(kOutOfRange,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kRead,
                              kSize + 1, kWholeBuffer));
  CTS_EXPECT_CODE(kOutOfRange, buffer->Map(MappingMode::kScoped,
                                           MemoryAccess::kRead, 32, 33));
  CTS_EXPECT_CODE(kOutOfRange, buffer->MapRead(kSize - 8, bytes, 16));
  CTS_EXPECT_CODE(kOutOfRange, buffer->MapWrite(kSize, bytes, 1));
  CTS_EXPECT_CODE(kOutOfRange, buffer->MapWrite(~DeviceSize{0} - 2, bytes, 8));
  const uint32_t p = 0;
  CTS_EXPECT_CODE(kOutOfRange, buffer->MapFill(60, 8, &p, 4));
  CTS_EXPECT_CODE(kOutOfRange, buffer->Subspan(kSize - 1, 2));
  CTS_EXPECT_CODE(kOutOfRange, buffer->Subspan(kSize + 1, kWholeBuffer));
  CTS_EXPECT_CODE(kOutOfRange, buffer->Subspan(8, ~DeviceSize{0} - 4));
  // Subspans check against their own length, not the parent's.
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> sub, buffer->Subspan(8, 16));
  CTS_EXPECT_CODE(kOutOfRange, sub->MapRead(8, bytes, 9));
  CTS_EXPECT_CODE(kOutOfRange, sub->Subspan(0, 17));
  // Nothing was written by the failed calls.
  EXPECT_EQ(ReadAll(buffer.get()), Bytes(kSize, 0x11));
}

TEST_F(Buffer, MappingFlushInvalidateRanges) {
  auto buffer = NewHostBuffer(128, 0);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(
      BufferMapping m,
      buffer->Map(MappingMode::kScoped,
                  MemoryAccess::kRead | MemoryAccess::kWrite, 32, 64));
  ASSERT_EQ(m.size(), 64u);
  CTS_EXPECT_OK(m.Flush());
  CTS_EXPECT_OK(m.Invalidate());
  CTS_EXPECT_OK(m.Flush(8, 8));
  CTS_EXPECT_OK(m.Invalidate(0, 64));
  CTS_EXPECT_OK(m.Flush(64, 0));
  // Ranges are relative to the mapping (64 bytes), not the buffer (128).
  CTS_EXPECT_CODE(kOutOfRange, m.Flush(0, 65));
  CTS_EXPECT_CODE(kOutOfRange, m.Flush(65, kWholeBuffer));
  CTS_EXPECT_CODE(kOutOfRange, m.Invalidate(60, 8));
  CTS_EXPECT_CODE(kOutOfRange, m.Invalidate(96, 1));
  CTS_EXPECT_OK(m.Unmap());
  // An unmapped mapping is no longer usable.
  EXPECT_EQ(m.size(), 0u);
  CTS_EXPECT_CODE(kFailedPrecondition, m.Flush());
}

TEST_F(Buffer, PersistentMappingWritesReachBuffer) {
  auto buffer = NewHostBuffer(64, 0);
  ASSERT_TRUE(buffer);
  {
    CTS_ASSERT_OK_AND_ASSIGN(
        BufferMapping m,
        buffer->Map(MappingMode::kPersistent, MemoryAccess::kWrite));
    for (size_t i = 0; i < m.size(); ++i)
      m.data()[i] = static_cast<uint8_t>(i + 1);
    CTS_EXPECT_OK(m.Flush());
    // Moving the mapping keeps it mapped once.
    BufferMapping moved = std::move(m);
    EXPECT_EQ(moved.size(), 64u);
    moved.data()[0] = 0xF0;
  }
  Bytes expected(64);
  for (size_t i = 0; i < 64; ++i) expected[i] = static_cast<uint8_t>(i + 1);
  expected[0] = 0xF0;
  EXPECT_EQ(ReadAll(buffer.get()), expected);
}

TEST_F(Buffer, NonCoherentWritesReachTheDevice) {
  // Host memory that is not HOST_COHERENT: mapping writes must be flushed on
  // unmap, so that a device copy sees them.
  BufferParams params;
  params.type = MemoryType::kHostLocal;
  params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  BufferParams resolved;
  if (!Any(allocator()->QueryCompatibility(params, 64, &resolved) &
           BufferCompatibility::kAllocatable)) {
    GTEST_SKIP() << "no non-coherent host memory";
  }
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> src,
                           allocator()->AllocateBuffer(params, 64));
  Bytes data(64);
  for (size_t i = 0; i < 64; ++i) data[i] = static_cast<uint8_t>(i * 5 + 1);
  CTS_ASSERT_OK(src->MapWrite(0, data.data(), data.size()));
  auto dst = NewHostBuffer(64, 0);
  auto done = NewSemaphore(0);
  ASSERT_TRUE(dst && done);
  CTS_ASSERT_OK(device()->QueueCopy(1, {}, Points{{done.get(), 1}}, src.get(),
                                    0, dst.get(), 0, 64));
  CTS_ASSERT_OK(WaitFor(done.get(), 1));
  EXPECT_EQ(ReadAll(dst.get()), data);
  // And device writes are visible after the invalidate a read mapping does.
  const uint8_t p = 0x42;
  CTS_ASSERT_OK(device()->QueueFill(1, {}, Points{{done.get(), 2}}, src.get(),
                                    0, 64, &p, 1));
  CTS_ASSERT_OK(WaitFor(done.get(), 2));
  EXPECT_EQ(ReadAll(src.get()), Bytes(64, 0x42));
}

TEST_F(Buffer, FillPatternLengthMustBe124) {
  auto buffer = NewHostBuffer(64, 0x55);
  ASSERT_TRUE(buffer);
  const uint8_t pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(0, 12, pattern, 3));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(0, 16, pattern, 8));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(0, 16, pattern, 0));
  // Offset and length must be multiples of the pattern length.
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(2, 8, pattern, 4));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(0, 6, pattern, 4));
  CTS_EXPECT_CODE(kInvalidArgument, buffer->MapFill(1, 2, pattern, 2));
  EXPECT_EQ(ReadAll(buffer.get()), Bytes(64, 0x55));
}

TEST_F(Buffer, BufferViewShape) {
  auto buffer = NewHostBuffer(64);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<BufferView> view,
      BufferView::Create(buffer, {4, 4}, ElementType::kFloat32));
  EXPECT_EQ(view->element_count(), 16u);
  EXPECT_EQ(view->byte_length(), 64u);
  EXPECT_EQ(view->buffer(), buffer.get());
  CTS_EXPECT_OK(BufferView::Create(buffer, {64}, ElementType::kInt8));
  CTS_EXPECT_OK(BufferView::Create(buffer, {2, 2, 2}, ElementType::kFloat64));
  CTS_EXPECT_CODE(kInvalidArgument,
                  BufferView::Create(buffer, {4, 5}, ElementType::kFloat32));
  CTS_EXPECT_CODE(kInvalidArgument,
                  BufferView::Create(buffer, {64}, ElementType::kInt16));
  CTS_EXPECT_CODE(kInvalidArgument,
                  BufferView::Create(buffer, {-4, -4}, ElementType::kFloat32));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      BufferView::Create(buffer, {int64_t{1} << 40, int64_t{1} << 40},
                         ElementType::kFloat32));
  CTS_EXPECT_CODE(kInvalidArgument,
                  BufferView::Create(nullptr, {16}, ElementType::kFloat32));
  // A view of a subspan uses the subspan's length.
  CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Buffer> sub, buffer->Subspan(16, 32));
  CTS_EXPECT_OK(BufferView::Create(sub, {8}, ElementType::kUint32));
  CTS_EXPECT_CODE(kInvalidArgument,
                  BufferView::Create(sub, {16}, ElementType::kUint32));
}

}  // namespace
}  // namespace hal::cts
