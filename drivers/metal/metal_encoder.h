// Encoder: the work of one queue operation, encoded into its
// MTLCommandBuffer as blit and compute encoders. Objective-C++ only:
// included from drivers/metal/*.mm, never from plain C++.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#include <cstddef>
#include <cstdint>
#include <vector>

#import "Metal/Metal.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"

namespace hal::metal {

class MetalBuffer;

// One per queue operation, on the thread that encodes it, inside an
// @autoreleasepool (the encoders it makes are autoreleased). Every method
// returns INVALID_ARGUMENT for a buffer or executable of another driver and
// FAILED_PRECONDITION for a buffer without memory; nothing is encoded for a
// zero length.
class Encoder {
 public:
  Encoder(id<MTLDevice> device, id<MTLCommandBuffer> cb);
  ~Encoder();

  // Ends the active encoder, if any.
  void End();
  // One encoder is active at a time: switching kinds ends the other.
  id<MTLBlitCommandEncoder> Blit();
  id<MTLComputeCommandEncoder> Compute();

  // A blit fill where Metal takes the pattern, else copies from a Shared
  // staging buffer filled with it.
  Status Fill(Buffer* target, DeviceSize offset, DeviceSize length,
              uint32_t pattern, size_t pattern_length);
  // Through a Shared staging buffer holding `data`.
  Status Update(const uint8_t* data, Buffer* target, DeviceSize offset,
                DeviceSize length);
  Status Copy(Buffer* source, DeviceSize source_offset, Buffer* target,
              DeviceSize target_offset, DeviceSize length);
  // A file transfer's device half: staging <-> buffer.
  Status CopyFrom(id<MTLBuffer> staging, Buffer* target, DeviceSize offset,
                  DeviceSize length);
  Status CopyTo(Buffer* source, DeviceSize offset, id<MTLBuffer> staging,
                DeviceSize length);

  // After the work: a synchronizeResource: of every Managed buffer it
  // wrote, so that the host's copy is current when the operation's signals
  // are reached (Metal copies the GPU's copy back only when asked).
  void SynchronizeManaged();

  // Every command of `command_buffer`, with `table` for its indirect
  // bindings.
  Status Commands(CommandBuffer* command_buffer, BindingTable table);

 private:
  // The Metal buffer behind `buffer`, with the host writes of its open
  // coherent mappings announced (MetalBuffer::AnnounceOpenWrites).
  static StatusOr<MetalBuffer*> Mtl(Buffer* buffer);
  void Wrote(MetalBuffer* b);
  // A Shared buffer (+1) of `n` bytes; the command buffer keeps it alive.
  StatusOr<id<MTLBuffer>> Staging(DeviceSize n);

  Status Encode(const cmd::Barrier&, BindingTable);
  Status Encode(const cmd::SignalEvent&, BindingTable);
  Status Encode(const cmd::ResetEvent&, BindingTable);
  Status Encode(const cmd::WaitEvents&, BindingTable);
  Status Encode(const cmd::BeginDebugGroup&, BindingTable);
  Status Encode(const cmd::EndDebugGroup&, BindingTable);
  Status Split();
  Status Encode(const cmd::Fill& c, BindingTable table);
  Status Encode(const cmd::Update& c, BindingTable table);
  Status Encode(const cmd::Copy& c, BindingTable table);
  Status Encode(const cmd::Dispatch& c, BindingTable table);

  id<MTLDevice> device_;
  id<MTLCommandBuffer> cb_;
  id<MTLBlitCommandEncoder> blit_ = nil;        // autoreleased
  id<MTLComputeCommandEncoder> compute_ = nil;  // autoreleased
  std::vector<id<MTLBuffer>> written_managed_;  // autoreleased
};

}  // namespace hal::metal
