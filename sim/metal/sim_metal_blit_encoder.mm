// HalSimMTLBlitEncoder (sim_metal_blit_encoder.h): fills, copies and
// synchronizations as engine ops.
#include "sim/metal/sim_metal_blit_encoder.h"

#include "sim/metal/sim_metal_buffer.h"
#include "sim/metal/sim_metal_command_buffer.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@implementation HalSimMTLBlitEncoder
- (BOOL)simLive:(const char*)what {
  if (ended_) {
    Violation("%s on a blit encoder after endEncoding", what);
    return NO;
  }
  return YES;
}
- (void)fillBuffer:(id<MTLBuffer>)buffer
             range:(NSRange)range
             value:(uint8_t)value {
  if (![self simLive:"fillBuffer:range:value:"]) return;
  auto* b = (HalSimMTLBuffer*)buffer;
  if (range.length == 0 || range.location % 4 != 0 || range.length % 4 != 0) {
    Violation("fillBuffer: range [%lu, +%lu): the start and length must be "
              "nonzero multiples of 4 on macOS",
              (unsigned long)range.location, (unsigned long)range.length);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  if (range.location > b->length_ ||
      range.length > b->length_ - range.location) {
    Violation("fillBuffer: range [%lu, +%lu) outside a %lu-byte buffer",
              (unsigned long)range.location, (unsigned long)range.length,
              (unsigned long)b->length_);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.fill";
  op.bytes = range.length;
  // For the race checker: unordered work of another queue on these bytes.
  op.write = hal::sim::Range::Of(
      reinterpret_cast<uintptr_t>(b->base_) + range.location, range.length);
  op.run = E().FillWork(buffer_->state_->domain.get(),
                        reinterpret_cast<uintptr_t>(b->base_) + range.location,
                        value, 1, range.length);
  [buffer_ simAddOp:std::move(op) retaining:buffer also:nil];
}
- (void)copyFromBuffer:(id<MTLBuffer>)source
          sourceOffset:(NSUInteger)source_offset
              toBuffer:(id<MTLBuffer>)target
     destinationOffset:(NSUInteger)target_offset
                  size:(NSUInteger)size {
  if (![self simLive:"copyFromBuffer:"]) return;
  auto* s = (HalSimMTLBuffer*)source;
  auto* t = (HalSimMTLBuffer*)target;
  if (size == 0 || source_offset > s->length_ ||
      size > s->length_ - source_offset || target_offset > t->length_ ||
      size > t->length_ - target_offset) {
    Violation("copyFromBuffer: %lu bytes from offset %lu of a %lu-byte "
              "buffer to offset %lu of a %lu-byte buffer",
              (unsigned long)size, (unsigned long)source_offset,
              (unsigned long)s->length_, (unsigned long)target_offset,
              (unsigned long)t->length_);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.copy";
  op.bytes = size;
  op.write = hal::sim::Range::Of(
      reinterpret_cast<uintptr_t>(t->base_) + target_offset, size);
  op.read = hal::sim::Range::Of(
      reinterpret_cast<uintptr_t>(s->base_) + source_offset, size);
  op.run = [s, source_offset, size,
            copy = E().CopyWork(
                buffer_->state_->domain.get(),
                reinterpret_cast<uintptr_t>(t->base_) + target_offset,
                reinterpret_cast<uintptr_t>(s->base_) + source_offset, size)] {
    [s simCheckGpuRead:source_offset length:size what:"a blit copy"];
    copy();
  };
  [buffer_ simAddOp:std::move(op) retaining:source also:target];
}
- (void)synchronizeResource:(id<MTLResource>)resource {
  if (![self simLive:"synchronizeResource:"]) return;
  auto* b = (HalSimMTLBuffer*)resource;
  if (!b || b->mode_ != MTLStorageModeManaged) {
    // Apple: "does nothing" for other storage modes; a driver that issues
    // it for them wastes a blit, which is not an error.
    return;
  }
  engine::Op op;
  op.name = "mtl.synchronize";
  op.bytes = b->length_;
  op.read =
      hal::sim::Range::Of(reinterpret_cast<uintptr_t>(b->base_), b->length_);
  engine::Domain* domain = buffer_->state_->domain.get();
  op.run = [b, domain] {
    if (!domain->failed()) [b simSynchronize];
  };
  [buffer_ simAddOp:std::move(op) retaining:resource also:nil];
}
- (void)endEncoding {
  if (![self simLive:"endEncoding"]) return;
  ended_ = YES;
  [buffer_ simEncoderEnded:self];
}
- (void)simTeardown {
  if (!ended_) {
    Violation("a blit encoder was released without endEncoding");
    [buffer_ simEncoderEnded:self];
  }
  [buffer_ release];
}
@end
