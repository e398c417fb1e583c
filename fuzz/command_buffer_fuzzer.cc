// Command-buffer recording and validation: bytes become a sequence of
// recording calls (fill, update, copy, barriers, debug groups, Begin/End)
// with fuzzed sizes, offsets, patterns and binding slots, then submissions
// with fuzzed binding tables on the simulator. Nothing may crash, every
// error must be a canonical validation status, and a submission must finish
// (OK or failed) rather than hang.
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/driver.h"

namespace {
using namespace hal;
using hal::fuzz::CheckStatus;
using hal::fuzz::FuzzInput;

BufferRef GenRef(FuzzInput& in, const std::vector<Ref<Buffer>>& buffers) {
  DeviceSize off = in.Size(512);
  DeviceSize len = in.Size(512);
  if (in.Below(3) == 0) return BufferRef::Slot(in.Below(6), off, len);
  return BufferRef::Direct(buffers[in.Below(buffers.size())].get(), off, len);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  // A device per input (the deterministic simulator has no threads), so an
  // input replays alone exactly as it ran in the campaign.
  Ref<Device> device =
      DefaultDriverRegistry().CreateDevice("sim://?queues=2&seed=7").value();
  std::vector<Ref<Buffer>> buffers;
  int buffer_count = 1 + in.Below(3);
  for (int i = 0; i < buffer_count; ++i) {
    BufferParams params;
    params.type = in.Bool()
                      ? MemoryType::kDeviceLocal
                      : MemoryType::kHostLocal | MemoryType::kHostCoherent;
    params.usage =
        in.Bool() ? BufferUsage::kTransfer : BufferUsage::kTransferTarget;
    StatusOr<Ref<Buffer>> b =
        device->allocator()->AllocateBuffer(params, in.U8() * 4 + in.Below(4));
    if (!b.ok()) {
      CheckStatus(b.status(), "AllocateBuffer");
      return 0;
    }
    buffers.push_back(b.value());
  }
  auto mode = static_cast<CommandBufferMode>(in.Below(3));
  auto categories = static_cast<CommandCategory>(in.Below(5));
  uint32_t capacity = in.Below(5);
  StatusOr<Ref<CommandBuffer>> created =
      device->CreateCommandBuffer(mode, categories, in.U8(), capacity);
  if (!created.ok()) {
    CheckStatus(created.status(), "CreateCommandBuffer");
    return 0;
  }
  Ref<CommandBuffer> cb = created.value();
  Ref<Semaphore> timeline = device->CreateSemaphore(0).value();
  uint64_t value = 0;
  std::vector<uint8_t> bytes(70000, 0x5A);
  while (!in.empty()) {
    Status s;
    switch (in.Below(10)) {
      case 0:
        s = cb->Begin();
        break;
      case 1:
        s = cb->End();
        break;
      case 2:
        s = cb->ExecutionBarrier();
        break;
      case 3:
        s = in.Bool() ? cb->BeginDebugGroup("g") : cb->EndDebugGroup();
        break;
      case 4: {
        uint32_t pattern = in.U32();
        s = cb->FillBuffer(GenRef(in, buffers), &pattern, in.Below(6));
        break;
      }
      case 5: {
        BufferRef ref = GenRef(in, buffers);
        if (ref.length != kWholeBuffer && ref.length > bytes.size()) {
          ref.length %= bytes.size();
        }
        s = cb->UpdateBuffer(bytes.data(), ref);
        break;
      }
      case 6: {
        BufferRef src = GenRef(in, buffers), dst = GenRef(in, buffers);
        s = cb->CopyBuffer(src, dst, in.Size(512));
        break;
      }
      case 7:
      case 8: {  // submit with a fuzzed binding table
        std::vector<Binding> table(in.Below(6));
        for (Binding& b : table) {
          b.buffer =
              in.Below(8) ? buffers[in.Below(buffers.size())].get() : nullptr;
          b.offset = in.Size(512);
          b.length = in.Size(512);
        }
        SemaphorePoint wait{timeline.get(), value};
        SemaphorePoint signal{timeline.get(), value + 1};
        s = device->QueueExecute(in.U8() | (in.Below(2) ? 0 : 1), {&wait, 1},
                                 {&signal, 1}, cb.get(), table);
        if (s.ok()) {
          Status done = timeline->Wait(
              value + 1, Timeout::After(std::chrono::seconds(10)));
          HAL_FUZZ_CHECK(done.code() != StatusCode::kDeadlineExceeded,
                         "a submission did not finish: %s",
                         done.ToString().c_str());
          CheckStatus(done, "submission");
          if (done.ok()) {
            ++value;
          } else {  // e.g. a hazard the simulator reported: start afresh
            timeline = device->CreateSemaphore(0).value();
            value = 0;
          }
        }
        break;
      }
      case 9: {  // the whole-buffer transfer helpers on the device
        uint32_t pattern = in.U32();
        Buffer* target = buffers[in.Below(buffers.size())].get();
        s = device->QueueFill(1, {}, {}, target, in.Size(512), in.Size(512),
                              &pattern, in.Below(6));
        break;
      }
    }
    CheckStatus(s, "recording");
  }
  Status idle = device->WaitIdle(Timeout::After(std::chrono::seconds(10)));
  HAL_FUZZ_CHECK(idle.ok(), "WaitIdle: %s", idle.ToString().c_str());
  return 0;
}
