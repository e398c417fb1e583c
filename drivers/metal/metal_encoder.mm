// Encoder (metal_encoder.h): HAL transfers and commands as Metal blit and
// compute commands.
#include "drivers/metal/metal_encoder.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "drivers/metal/metal_buffer.h"
#include "drivers/metal/metal_executable.h"
#include "hal/utils/buffer_ref_resolve.h"

namespace hal::metal {
namespace {

constexpr size_t kMaxStagingBytes = size_t{1} << 20;

}  // namespace

Encoder::Encoder(id<MTLDevice> device, id<MTLCommandBuffer> cb)
    : device_(device), cb_(cb) {}

Encoder::~Encoder() { End(); }

void Encoder::End() {
  if (blit_) [blit_ endEncoding];
  if (compute_) [compute_ endEncoding];
  blit_ = nil;
  compute_ = nil;
}

id<MTLBlitCommandEncoder> Encoder::Blit() {
  if (compute_) End();
  if (!blit_) blit_ = [cb_ blitCommandEncoder];
  return blit_;
}

id<MTLComputeCommandEncoder> Encoder::Compute() {
  if (blit_) End();
  if (!compute_) compute_ = [cb_ computeCommandEncoder];
  return compute_;
}

Status Encoder::Fill(Buffer* target, DeviceSize offset, DeviceSize length,
                     uint32_t pattern, size_t pattern_length) {
  if (length == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(MetalBuffer * tb, Mtl(target));
  Wrote(tb);
  id<MTLBuffer> t = tb->mtl();
  offset += tb->offset();
  uint8_t bytes[4];
  std::memcpy(bytes, &pattern, 4);
  bool uniform = true;
  for (size_t i = 1; i < pattern_length; ++i) uniform &= bytes[i] == bytes[0];
  if (uniform && offset % 4 == 0 && length % 4 == 0) {
    [Blit() fillBuffer:t range:NSMakeRange(offset, length) value:bytes[0]];
    return OkStatus();
  }
  // Blit fill takes one byte and 4-byte aligned ranges on macOS: stage
  // the pattern and copy it.
  const size_t chunk = std::min<DeviceSize>(
      length, kMaxStagingBytes - kMaxStagingBytes % pattern_length);
  HAL_ASSIGN_OR_RETURN(id<MTLBuffer> staging, Staging(chunk));
  auto* p = static_cast<uint8_t*>([staging contents]);
  for (size_t i = 0; i < chunk; ++i) p[i] = bytes[i % pattern_length];
  for (DeviceSize done = 0; done < length;) {
    const DeviceSize n = std::min<DeviceSize>(chunk, length - done);
    [Blit() copyFromBuffer:staging
              sourceOffset:0
                  toBuffer:t
         destinationOffset:offset + done
                      size:n];
    done += n;
  }
  [staging release];
  return OkStatus();
}

Status Encoder::Update(const uint8_t* data, Buffer* target, DeviceSize offset,
                       DeviceSize length) {
  if (length == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(MetalBuffer * tb, Mtl(target));
  Wrote(tb);
  id<MTLBuffer> t = tb->mtl();
  offset += tb->offset();
  HAL_ASSIGN_OR_RETURN(id<MTLBuffer> staging, Staging(length));
  std::memcpy([staging contents], data, length);
  [Blit() copyFromBuffer:staging
            sourceOffset:0
                toBuffer:t
       destinationOffset:offset
                    size:length];
  [staging release];
  return OkStatus();
}

Status Encoder::Copy(Buffer* source, DeviceSize source_offset, Buffer* target,
                     DeviceSize target_offset, DeviceSize length) {
  if (length == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(MetalBuffer * s, Mtl(source));
  HAL_ASSIGN_OR_RETURN(MetalBuffer * t, Mtl(target));
  Wrote(t);
  [Blit() copyFromBuffer:s->mtl()
            sourceOffset:s->offset() + source_offset
                toBuffer:t->mtl()
       destinationOffset:t->offset() + target_offset
                    size:length];
  return OkStatus();
}

Status Encoder::CopyFrom(id<MTLBuffer> staging, Buffer* target,
                         DeviceSize offset, DeviceSize length) {
  if (length == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(MetalBuffer * t, Mtl(target));
  Wrote(t);
  [Blit() copyFromBuffer:staging
            sourceOffset:0
                toBuffer:t->mtl()
       destinationOffset:t->offset() + offset
                    size:length];
  return OkStatus();
}

Status Encoder::CopyTo(Buffer* source, DeviceSize offset, id<MTLBuffer> staging,
                       DeviceSize length) {
  if (length == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(MetalBuffer * s, Mtl(source));
  [Blit() copyFromBuffer:s->mtl()
            sourceOffset:s->offset() + offset
                toBuffer:staging
       destinationOffset:0
                    size:length];
  return OkStatus();
}

void Encoder::SynchronizeManaged() {
  for (id<MTLBuffer> b : written_managed_) [Blit() synchronizeResource:b];
  written_managed_.clear();
}

Status Encoder::Commands(CommandBuffer* command_buffer, BindingTable table) {
  for (const Command& command : command_buffer->commands()) {
    HAL_RETURN_IF_ERROR(
        std::visit([&](const auto& c) { return Encode(c, table); }, command));
  }
  return OkStatus();
}

StatusOr<MetalBuffer*> Encoder::Mtl(Buffer* buffer) {
  auto* b = dynamic_cast<MetalBuffer*>(buffer->allocated_buffer());
  if (!b) return InvalidArgumentError("Metal: a buffer of another driver");
  if (!b->mtl()) {
    return FailedPreconditionError(
        "Metal: the buffer has no memory: not committed (order the use "
        "after its queue_alloca) or released by a queue_dealloca");
  }
  b->AnnounceOpenWrites();
  return b;
}

void Encoder::Wrote(MetalBuffer* b) {
  if (!b->managed()) return;
  id<MTLBuffer> m = b->mtl();
  for (id<MTLBuffer> w : written_managed_) {
    if (w == m) return;
  }
  written_managed_.push_back(m);
}

StatusOr<id<MTLBuffer>> Encoder::Staging(DeviceSize n) {
  id<MTLBuffer> b = [device_ newBufferWithLength:(NSUInteger)n
                                         options:MTLResourceStorageModeShared];
  if (!b) {
    return ResourceExhaustedError("Metal: a %llu-byte staging buffer",
                                  (unsigned long long)n);
  }
  return b;
}

// Barriers, events and debug groups: commands after it go into a new
// encoder, which Metal orders after the previous one's writes.
Status Encoder::Encode(const cmd::Barrier&, BindingTable) { return Split(); }
Status Encoder::Encode(const cmd::SignalEvent&, BindingTable) {
  return Split();
}
Status Encoder::Encode(const cmd::ResetEvent&, BindingTable) { return Split(); }
Status Encoder::Encode(const cmd::WaitEvents&, BindingTable) { return Split(); }
Status Encoder::Encode(const cmd::BeginDebugGroup&, BindingTable) {
  return OkStatus();
}
Status Encoder::Encode(const cmd::EndDebugGroup&, BindingTable) {
  return OkStatus();
}
Status Encoder::Split() {
  End();
  return OkStatus();
}

Status Encoder::Encode(const cmd::Fill& c, BindingTable table) {
  HAL_ASSIGN_OR_RETURN(
      ResolvedRef r,
      utils::ResolveBufferRef(c.target, table, c.target.length, "fill target"));
  return Fill(r.buffer, r.offset, r.length, c.pattern, c.pattern_length);
}

Status Encoder::Encode(const cmd::Update& c, BindingTable table) {
  HAL_ASSIGN_OR_RETURN(
      ResolvedRef r,
      utils::ResolveBufferRef(c.target, table, c.data.size(), "update target"));
  return Update(c.data.data(), r.buffer, r.offset, r.length);
}

Status Encoder::Encode(const cmd::Copy& c, BindingTable table) {
  HAL_ASSIGN_OR_RETURN(
      ResolvedRef s,
      utils::ResolveBufferRef(c.source, table, c.length, "copy source"));
  HAL_ASSIGN_OR_RETURN(
      ResolvedRef t,
      utils::ResolveBufferRef(c.target, table, c.length, "copy target"));
  return Copy(s.buffer, s.offset, t.buffer, t.offset, c.length);
}

// Binding i is buffer index i, the constants are bytes at index 30 (the
// MSL macro layer of hal/cts/kernels/hal_kernel.h); the threadgroup size
// is the export's workgroup size.
Status Encoder::Encode(const cmd::Dispatch& c, BindingTable table) {
  auto* executable = dynamic_cast<MetalExecutable*>(c.executable);
  if (!executable) {
    return InvalidArgumentError("Metal: an executable of another driver");
  }
  const FunctionInfo& f = executable->functions()[c.entry_point];
  if (!c.indirect && (c.workgroup_count[0] == 0 || c.workgroup_count[1] == 0 ||
                      c.workgroup_count[2] == 0)) {
    return OkStatus();
  }
  id<MTLComputeCommandEncoder> e = Compute();
  [e setComputePipelineState:executable->pipelines[c.entry_point]];
  for (size_t i = 0; i < c.bindings.size(); ++i) {
    HAL_ASSIGN_OR_RETURN(
        ResolvedRef r,
        utils::ResolveBufferRef(c.bindings[i], table, c.bindings[i].length,
                                "dispatch binding"));
    HAL_ASSIGN_OR_RETURN(MetalBuffer * b, Mtl(r.buffer));
    if (!f.binding_read_only(static_cast<uint32_t>(i))) Wrote(b);
    [e setBuffer:b->mtl() offset:b->offset() + r.offset atIndex:i];
  }
  if (!c.constants.empty()) {
    [e setBytes:c.constants.data()
         length:c.constants.size() * sizeof(uint32_t)
        atIndex:30];
  }
  const MTLSize threads = MTLSizeMake(f.workgroup_size[0], f.workgroup_size[1],
                                      f.workgroup_size[2]);
  if (c.indirect) {
    HAL_ASSIGN_OR_RETURN(ResolvedRef r, utils::ResolveBufferRef(
                                            *c.indirect_workgroup_count, table,
                                            kIndirectWorkgroupCountSize,
                                            "indirect workgroup count"));
    HAL_ASSIGN_OR_RETURN(MetalBuffer * b, Mtl(r.buffer));
    [e dispatchThreadgroupsWithIndirectBuffer:b->mtl()
                         indirectBufferOffset:b->offset() + r.offset
                        threadsPerThreadgroup:threads];
  } else {
    [e dispatchThreadgroups:MTLSizeMake(c.workgroup_count[0],
                                        c.workgroup_count[1],
                                        c.workgroup_count[2])
        threadsPerThreadgroup:threads];
  }
  return OkStatus();
}

}  // namespace hal::metal
