// A buffer with no memory behind it, for unit tests of the driver-neutral
// parts of the HAL (recording, queue validation, reference resolution):
// they look only at a buffer's usage, state and range. Mapping it is
// UNIMPLEMENTED. Test-only: no library links this.
#pragma once

#include "hal/allocator.h"
#include "hal/buffer.h"

namespace hal::testutil {

class FakeBuffer final : public Buffer {
 public:
  FakeBuffer(BufferUsage usage, BufferState state, DeviceSize length)
      : Buffer(MakeParams(usage, state, length)) {}

 protected:
  StatusOr<uint8_t*> MapImpl(DeviceSize, DeviceSize, MemoryAccess) override {
    return UnimplementedError("fake buffer");
  }
  Status UnmapImpl(DeviceSize, DeviceSize, MemoryAccess) override {
    return OkStatus();
  }
  Status FlushImpl(DeviceSize, DeviceSize) override { return OkStatus(); }
  Status InvalidateImpl(DeviceSize, DeviceSize) override { return OkStatus(); }

 private:
  static Params MakeParams(BufferUsage usage, BufferState state,
                           DeviceSize length) {
    Params p;
    p.memory_type = MemoryType::kDeviceLocal;
    p.allowed_usage = usage;
    p.byte_length = length;
    p.initial_state = state;
    return p;
  }
};

// A DEVICE_LOCAL fake buffer of `length` bytes.
inline Ref<Buffer> NewFakeBuffer(DeviceSize length,
                                 BufferUsage usage = BufferUsage::kDefault,
                                 BufferState state = BufferState::kLive) {
  return Ref<Buffer>::Adopt(new FakeBuffer(usage, state, length));
}

}  // namespace hal::testutil
