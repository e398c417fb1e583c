#include "drivers/gpu/gpu_stream_command_buffer.h"

#include <type_traits>

#include "drivers/gpu/gpu_allocator.h"
#include "drivers/gpu/gpu_executable.h"
#include "hal/utils/buffer_ref_resolve.h"

namespace hal::gpu {

Status ReplayCommandBufferOnStream(GpuApi* api, GpuStream stream,
                                   const CommandBuffer& command_buffer,
                                   BindingTable table) {
  for (const Command& command : command_buffer.commands()) {
    Status status = std::visit(
        [&](const auto& c) -> Status {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, cmd::Fill>) {
            HAL_ASSIGN_OR_RETURN(
                ResolvedRef r,
                utils::ResolveBufferRef(c.target, table, kWholeBuffer, "fill"));
            if (r.length == 0) return OkStatus();
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst, GpuDeviceAddress(r, "fill"));
            return api->MemsetAsync(dst, c.pattern, c.pattern_length,
                                    r.length / c.pattern_length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Update>) {
            HAL_ASSIGN_OR_RETURN(
                ResolvedRef r, utils::ResolveBufferRef(c.target, table,
                                                       kWholeBuffer, "update"));
            if (r.length == 0) return OkStatus();
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst,
                                 GpuDeviceAddress(r, "update"));
            // The payload lives in the command buffer, which the submission
            // keeps alive until the copy ran.
            const uint8_t* src = c.data.data();
            return api->MemcpyAsync(dst, reinterpret_cast<GpuDevicePtr>(src),
                                    r.length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Copy>) {
            HAL_ASSIGN_OR_RETURN(ResolvedRef s,
                                 utils::ResolveBufferRef(
                                     c.source, table, c.length, "copy source"));
            HAL_ASSIGN_OR_RETURN(ResolvedRef t,
                                 utils::ResolveBufferRef(
                                     c.target, table, c.length, "copy target"));
            if (c.length == 0) return OkStatus();
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr src,
                                 GpuDeviceAddress(s, "copy source"));
            HAL_ASSIGN_OR_RETURN(GpuDevicePtr dst,
                                 GpuDeviceAddress(t, "copy target"));
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
