// Driver-independent checks of the deferred command buffer's recording
// (the CTS covers execution on every driver).
#include "hal/command_buffer.h"

#include <gtest/gtest.h>

namespace hal {
namespace {

TEST(CommandBufferRecording, StateMachine) {
  auto cb = CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kAny, 1, 2)
                .value();
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->Begin().ok());
  EXPECT_EQ(cb->Begin().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->BeginDebugGroup("g").ok());
  EXPECT_EQ(cb->End().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->EndDebugGroup().ok());
  EXPECT_EQ(cb->EndDebugGroup().code(), StatusCode::kFailedPrecondition);
  uint32_t pattern = 0;
  EXPECT_TRUE(cb->FillBuffer(BufferRef::Slot(1, 0, 16), &pattern, 4).ok());
  EXPECT_EQ(cb->FillBuffer(BufferRef::Slot(2, 0, 16), &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cb->FillBuffer(BufferRef::Slot(0, 2, 16), &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(cb->End().ok());
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  // 1 debug begin + 1 debug end + 1 fill.
  EXPECT_EQ(cb->commands().size(), 3u);
  // Table smaller than the capacity.
  EXPECT_EQ(cb->ValidateSubmission({}).code(), StatusCode::kInvalidArgument);
}

TEST(CommandBufferRecording, CreateValidation) {
  EXPECT_EQ(CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kNone, 1, 0)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kTransfer, 0, 0)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(CommandBufferRecording, UpdateCopiesBytesAtRecordTime) {
  auto cb = CommandBuffer::Create(CommandBufferMode::kReusable,
                                  CommandCategory::kTransfer, 1, 1)
                .value();
  ASSERT_TRUE(cb->Begin().ok());
  std::vector<uint8_t> bytes = {1, 2, 3, 4};
  ASSERT_TRUE(cb->UpdateBuffer(bytes.data(), BufferRef::Slot(0, 0, 4)).ok());
  bytes[0] = 9;
  ASSERT_EQ(cb->commands().size(), 1u);
  const auto* update = std::get_if<cmd::Update>(&cb->commands()[0]);
  ASSERT_NE(update, nullptr);
  ASSERT_EQ(update->data.size(), 4u);
  EXPECT_EQ(update->data[0], 1);
  std::vector<uint8_t> big(kMaxUpdateBytes + 1);
  EXPECT_EQ(
      cb->UpdateBuffer(big.data(), BufferRef::Slot(0, 0, big.size())).code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hal
