// Stream command buffers: the shared deferred command buffer
// (hal/command_buffer.h) replayed onto one stream at submission (the seed's
// CUstream-backed command buffer over iree_hal_deferred_command_buffer_t).
//
// A stream runs its work in order, so execution barriers and events inside
// the command buffer need nothing: every command already waits for the ones
// before it. That is stricter than the HAL requires (commands between
// barriers may overlap), never weaker.
#pragma once

#include "drivers/gpu/gpu_api.h"
#include "hal/command_buffer.h"

namespace hal::gpu {

// Enqueues every command of `command_buffer` (validated by
// ValidateSubmission against `table`) on `stream`. The command buffer and
// the table's buffers must stay alive until the stream passes this work.
// FAILED_PRECONDITION for a buffer whose memory is not there (freed, or a
// queue_alloca not ordered before); dispatch errors as LaunchGpuDispatch
// (gpu_executable.h) reports them; API errors as the API reports them. An
// indirect dispatch blocks the caller until the stream reached it, unless
// the API launches it indirectly (GpuApi::SupportsIndirectLaunch).
Status ReplayCommandBufferOnStream(GpuApi* api, GpuStream stream,
                                   const CommandBuffer& command_buffer,
                                   BindingTable table);

}  // namespace hal::gpu
