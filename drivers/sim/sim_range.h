// A buffer reference's host range for the simulator's commands and
// dispatches (sim_command_buffer.cc, sim_device.cc, sim_executable.cc): one
// resolution, so that every command checks a reference the same way.
#pragma once

#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal::sim {

// A buffer reference's host range when its work runs, for a command that
// touches `length` bytes of it (kWholeBuffer: all of it): resolved and
// checked by utils::ResolveBufferRef (hal/utils/buffer_ref_resolve.h: slot,
// ranges, freed), then INVALID_ARGUMENT for a buffer of another driver and
// FAILED_PRECONDITION when its memory is not committed, whatever the
// length. `data` is null for a range of an empty buffer.
struct SimRange {
  uint8_t* data = nullptr;
  DeviceSize length = 0;
};
StatusOr<SimRange> ResolveSimRange(const BufferRef& ref, BindingTable table,
                                   DeviceSize length, const char* what);

}  // namespace hal::sim
