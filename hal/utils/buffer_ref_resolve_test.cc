// The checks every driver makes when it resolves a buffer reference as its
// work runs (hal/utils/buffer_ref_resolve.h).
#include "hal/utils/buffer_ref_resolve.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "hal/allocator.h"
#include "hal/testing/fake_buffer.h"

namespace hal::utils {
namespace {

Ref<Buffer> NewBuffer(DeviceSize length = 1024,
                      BufferState state = BufferState::kLive) {
  return testutil::NewFakeBuffer(length, BufferUsage::kDefault, state);
}

void ExpectError(const StatusOr<ResolvedRef>& r, StatusCode code,
                 const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << r.status().ToString();
}

constexpr DeviceSize kMax = std::numeric_limits<DeviceSize>::max() - 1;

TEST(ResolveBufferRef, DirectSubspanAndSlotGiveAllocationOffsets) {
  Ref<Buffer> buffer = NewBuffer(1024);
  Ref<Buffer> sub = buffer->Subspan(256, 512).value();
  auto direct = ResolveBufferRef(BufferRef::Direct(sub.get(), 16), {},
                                 kWholeBuffer, "fill");
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_EQ(direct->buffer, buffer.get());
  EXPECT_EQ(direct->offset, 256u + 16u);
  EXPECT_EQ(direct->length, 512u - 16u);

  Binding table[] = {{nullptr, 0, 0}, {sub.get(), 64, 128}};
  auto slot =
      ResolveBufferRef(BufferRef::Slot(1, 8, 32), table, kWholeBuffer, "fill");
  ASSERT_TRUE(slot.ok()) << slot.status().ToString();
  EXPECT_EQ(slot->buffer, buffer.get());
  EXPECT_EQ(slot->offset, 256u + 64u + 8u);
  EXPECT_EQ(slot->length, 32u);

  // An explicit length (a copy's) within the reference's range.
  auto copy = ResolveBufferRef(BufferRef::Slot(1, 8), table, 100, "copy");
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ(copy->length, 100u);
}

TEST(ResolveBufferRef, MissingOrEmptySlotIsInvalidArgument) {
  Ref<Buffer> buffer = NewBuffer();
  Binding table[] = {{nullptr, 0, kWholeBuffer}, {buffer.get(), 0, 16}};
  ExpectError(ResolveBufferRef(BufferRef::Slot(2), table, kWholeBuffer, "fill"),
              StatusCode::kInvalidArgument,
              "fill: binding table slot 2 is missing");
  ExpectError(ResolveBufferRef(BufferRef::Slot(0), table, kWholeBuffer, "fill"),
              StatusCode::kInvalidArgument,
              "fill: binding table slot 0 is empty");
  ExpectError(ResolveBufferRef(BufferRef::Slot(0), {}, kWholeBuffer, "fill"),
              StatusCode::kInvalidArgument, "slot 0 is missing");
}

TEST(ResolveBufferRef, RangesOutsideOrOverflowingAreOutOfRange) {
  Ref<Buffer> buffer = NewBuffer(1024);
  // The table entry itself does not fit its buffer.
  Binding bad_entry[] = {{buffer.get(), 1000, 100}};
  ExpectError(
      ResolveBufferRef(BufferRef::Slot(0), bad_entry, kWholeBuffer, "copy"),
      StatusCode::kOutOfRange, "slot 0 range [1000, +100)");
  // The reference within the entry.
  Binding table[] = {{buffer.get(), 512, 256}};
  ExpectError(ResolveBufferRef(BufferRef::Slot(0, 200, 100), table,
                               kWholeBuffer, "copy"),
              StatusCode::kOutOfRange, "outside binding slot 0 of 256 bytes");
  // The command's length within the reference.
  ExpectError(ResolveBufferRef(BufferRef::Slot(0, 200), table, 57, "copy"),
              StatusCode::kOutOfRange, "outside binding slot 0");
  ExpectError(ResolveBufferRef(BufferRef::Direct(buffer.get(), 1000), {}, 25,
                               "copy target"),
              StatusCode::kOutOfRange,
              "copy target: range [1000, +25) is outside the buffer of 1024");
  // Offsets and lengths near 2^64 do not wrap around.
  Binding huge[] = {{buffer.get(), kMax, kMax}};
  ExpectError(ResolveBufferRef(BufferRef::Slot(0), huge, kWholeBuffer, "fill"),
              StatusCode::kOutOfRange, "slot 0");
  ExpectError(ResolveBufferRef(BufferRef::Direct(buffer.get(), 8, kMax), {},
                               kWholeBuffer, "fill"),
              StatusCode::kOutOfRange, "outside the buffer");
  ExpectError(ResolveBufferRef(BufferRef::Direct(buffer.get(), kMax, 2), {},
                               kWholeBuffer, "queue_read"),
              StatusCode::kOutOfRange, "queue_read: range");
}

TEST(ResolveBufferRef, FreedAllocationIsFailedPrecondition) {
  Ref<Buffer> buffer = NewBuffer(64);
  Ref<Buffer> sub = buffer->Subspan(0, 32).value();
  ASSERT_TRUE(buffer->BeginDealloca().ok());
  // Queued, not yet run: work submitted before it may still use it.
  EXPECT_TRUE(
      ResolveBufferRef(BufferRef::Direct(sub.get()), {}, kWholeBuffer, "fill")
          .ok());
  buffer->MarkFreed();
  Binding table[] = {{sub.get(), 0, kWholeBuffer}};
  ExpectError(ResolveBufferRef(BufferRef::Slot(0), table, kWholeBuffer,
                               "dispatch of 'k': binding 0"),
              StatusCode::kFailedPrecondition,
              "dispatch of 'k': binding 0: buffer used after its dealloca ran");
  // Even an empty range of a freed buffer.
  ExpectError(ResolveBufferRef(BufferRef::Direct(sub.get(), 0, 0), {},
                               kWholeBuffer, "queue_write"),
              StatusCode::kFailedPrecondition, "after its dealloca ran");
}

TEST(CheckCommitted, NamesTheStateWhateverTheLength) {
  Ref<Buffer> reserved = NewBuffer(64, BufferState::kReserved);
  auto r = ResolveBufferRef(BufferRef::Direct(reserved.get(), 0, 0), {},
                            kWholeBuffer, "queue_read");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(CheckCommitted(*r, true, "queue_read").ok());
  Status s = CheckCommitted(*r, false, "queue_read");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("queue_read: buffer memory is not committed "
                             "(reserved"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("after its queue_alloca"), std::string::npos);

  // A dealloca that ran between resolution and the driver's look-up.
  Ref<Buffer> live = NewBuffer(64);
  auto l =
      ResolveBufferRef(BufferRef::Direct(live.get()), {}, 64, "copy source");
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(live->BeginDealloca().ok());
  live->MarkFreed();
  Status freed = CheckCommitted(*l, false, "copy source");
  EXPECT_EQ(freed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(
      freed.message().find("copy source: buffer used after its dealloca ran"),
      std::string::npos)
      << freed.ToString();
}

}  // namespace
}  // namespace hal::utils
