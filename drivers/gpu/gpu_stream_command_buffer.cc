#include "drivers/gpu/gpu_stream_command_buffer.h"

#include <type_traits>

#include "drivers/gpu/gpu_allocator.h"
#include "drivers/gpu/gpu_executable.h"
#include "drivers/gpu/gpu_fill.h"

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
                GpuRange r,
                ResolveGpuRange(c.target, table, kWholeBuffer, "fill"));
            GpuFillPiece pieces[kMaxGpuFillPieces];
            const int n = SplitFill(r.address, c.pattern, c.pattern_length,
                                    r.length, pieces);
            for (int i = 0; i < n; ++i) {
              HAL_RETURN_IF_ERROR(api->MemsetAsync(
                  pieces[i].dst, pieces[i].pattern, pieces[i].pattern_length,
                  pieces[i].count, stream));
            }
            return OkStatus();
          } else if constexpr (std::is_same_v<T, cmd::Update>) {
            HAL_ASSIGN_OR_RETURN(
                GpuRange r,
                ResolveGpuRange(c.target, table, kWholeBuffer, "update"));
            if (r.length == 0) return OkStatus();
            // The payload lives in the command buffer, which the submission
            // keeps alive until the copy ran.
            const uint8_t* src = c.data.data();
            return api->MemcpyAsync(r.address,
                                    reinterpret_cast<GpuDevicePtr>(src),
                                    r.length, stream);
          } else if constexpr (std::is_same_v<T, cmd::Copy>) {
            HAL_ASSIGN_OR_RETURN(
                GpuRange s,
                ResolveGpuRange(c.source, table, c.length, "copy source"));
            HAL_ASSIGN_OR_RETURN(
                GpuRange t,
                ResolveGpuRange(c.target, table, c.length, "copy target"));
            if (c.length == 0) return OkStatus();
            return api->MemcpyAsync(t.address, s.address, c.length, stream);
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
