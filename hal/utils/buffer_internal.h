// Driver-private access to buffers: what drivers and HAL internals may do
// with a buffer that HAL users may not. Not part of the public API: only
// drivers/, hal/ internals and their tests include this header.
#pragma once

#include <cstdint>

#include "hal/buffer.h"

namespace hal::internal {

struct BufferInternal {
  // The host address of byte 0 of `buffer`'s allocation, or nullptr when
  // its memory is not host memory the CPU can address (every driver but
  // the simulator), not committed, or freed. Bypasses the mapping rules
  // (usage, access, HOST_VISIBLE); add `buffer->byte_offset()` for a
  // subspan's first byte.
  static uint8_t* HostStorage(Buffer* buffer) {
    return buffer->allocated_buffer()->HostStorageImpl();
  }
};

}  // namespace hal::internal
