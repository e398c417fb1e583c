#include "drivers/gpu/gpu_stream_command_buffer.h"

#include <type_traits>

#include "drivers/gpu/gpu_allocator.h"
#include "drivers/gpu/gpu_executable.h"

namespace hal::gpu {

StatusOr<GpuDevicePtr> CommandDeviceAddress(const ResolvedRef& ref,
                                            const char* what) {
  auto* buffer = dynamic_cast<GpuBuffer*>(ref.buffer);
  if (!buffer) {
    return InvalidArgumentError("%s: buffer does not belong to a GPU device",
                                what);
  }
  if (buffer->state() == BufferState::kFreed) {
    return FailedPreconditionError("%s: buffer used after its dealloca ran",
                                   what);
  }
  if (!buffer->committed()) {
    return FailedPreconditionError(
        "%s: buffer memory is not committed (%s); order the use after its "
        "queue_alloca with a semaphore",
        what, BufferStateName(buffer->state()));
  }
  return buffer->device_ptr() + ref.offset;
}

Status ReplayCommandBufferOnStream(GpuApi* api, GpuStream stream,
                                   const CommandBuffer& command_buffer,
                                   BindingTable table) {
  for (const Command& command : command_buffer.commands()) {
    Status status = std::visit(
        [&](const auto& c) -> Status {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, cmd::Fill>) {
            ResolvedRef r = CommandBuffer::ResolveRef(c.target, table);
            if (r.length == 0) return OkStatus();
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst,
                                 CommandDeviceAddress(r, "fill"));
            return api->MemsetAsync(dst, c.pattern, c.pattern_length,
                                    r.length / c.pattern_length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Update>) {
            ResolvedRef r = CommandBuffer::ResolveRef(c.target, table);
            if (r.length == 0) return OkStatus();
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst,
                                 CommandDeviceAddress(r, "update"));
            // The payload lives in the command buffer, which the submission
            // keeps alive until the copy ran.
            const uint8_t* src = c.data.data();
            return api->MemcpyAsync(dst, reinterpret_cast<GpuDevicePtr>(src),
                                    r.length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Copy>) {
            if (c.length == 0) return OkStatus();
            ResolvedRef s = CommandBuffer::ResolveRef(c.source, table);
            ResolvedRef t = CommandBuffer::ResolveRef(c.target, table);
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr src,
                                 CommandDeviceAddress(s, "copy source"));
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst,
                                 CommandDeviceAddress(t, "copy target"));
            return api->MemcpyAsync(dst, src, c.length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Dispatch>) {
            return LaunchGpuDispatch(api, stream, c, table);
          } else {
            // Barriers, events and debug groups: the stream is in order.
            return OkStatus();
          }
        },
        command);
    HAL_RETURN_IF_ERROR(status);
  }
  return OkStatus();
}

}  // namespace hal::gpu
