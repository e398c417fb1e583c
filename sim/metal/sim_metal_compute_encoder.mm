// HalSimMTLComputeEncoder (sim_metal_compute_encoder.h): dispatches as
// engine ops.
#include "sim/metal/sim_metal_compute_encoder.h"

#include <cstring>
#include <utility>

#include "sim/metal/sim_metal_buffer.h"
#include "sim/metal/sim_metal_command_buffer.h"
#include "sim/metal/sim_metal_library.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@implementation HalSimMTLComputeEncoder
- (BOOL)simLive:(const char*)what {
  if (ended_) {
    Violation("%s on a compute encoder after endEncoding", what);
    return NO;
  }
  return YES;
}
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state {
  if (![self simLive:"setComputePipelineState:"]) return;
  [state retain];
  [pipeline_ release];
  pipeline_ = (HalSimMTLPipeline*)state;
}
- (void)setBuffer:(id<MTLBuffer>)buffer
           offset:(NSUInteger)offset
          atIndex:(NSUInteger)index {
  if (![self simLive:"setBuffer:offset:atIndex:"]) return;
  if (index >= 31) {
    Violation("setBuffer: index %lu is past the 31 buffer slots",
              (unsigned long)index);
    return;
  }
  [buffer retain];
  [buffers_[index] release];
  buffers_[index] = (HalSimMTLBuffer*)buffer;
  offsets_[index] = offset;
}
- (void)setBytes:(const void*)bytes
          length:(NSUInteger)length
         atIndex:(NSUInteger)index {
  if (![self simLive:"setBytes:length:atIndex:"]) return;
  if (index != 30 || length % 4 != 0 || length > 4096) {
    Violation("setBytes: %lu bytes at index %lu (the simulated kernels take "
              "their constants as uints at index 30; at most 4 KiB)",
              (unsigned long)length, (unsigned long)index);
    return;
  }
  const auto* words = static_cast<const uint32_t*>(bytes);
  bytes_->assign(words, words + length / 4);
}
// The checks and the arguments of one dispatch; false when it cannot run.
// `ranges`: what the race checker sees of each binding. Metal binds a buffer
// with an offset and no length or access mode, so the kernel may write
// anywhere from the offset to the buffer's end; that is the binding's range
// (a write).
- (BOOL)simPrepare:(MTLSize)threads
          pointers:(std::vector<uintptr_t>*)pointers
         constants:(std::vector<uint32_t>*)constants
            ranges:(std::vector<hal::sim::Range>*)ranges {
  if (!pipeline_) {
    Violation("a dispatch with no compute pipeline state set");
    return NO;
  }
  const engine::Kernel* k = pipeline_->kernel_;
  const hal_sim_kernel_info* info = k->info;
  if (threads.width != info->workgroup_size[0] ||
      threads.height != info->workgroup_size[1] ||
      threads.depth != info->workgroup_size[2]) {
    Violation("dispatch of '%s' with threadsPerThreadgroup %lux%lux%lu; the "
              "kernel was built for %ux%ux%u",
              k->name.c_str(), (unsigned long)threads.width,
              (unsigned long)threads.height, (unsigned long)threads.depth,
              info->workgroup_size[0], info->workgroup_size[1],
              info->workgroup_size[2]);
    return NO;
  }
  for (uint32_t i = 0; i < info->binding_count; ++i) {
    HalSimMTLBuffer* b = buffers_[i];
    if (!b || offsets_[i] > b->length_) {
      Violation("dispatch of '%s': buffer %u is %s", k->name.c_str(), i,
                b ? "set past its end" : "not set");
      return NO;
    }
    pointers->push_back(reinterpret_cast<uintptr_t>(b->base_) + offsets_[i]);
    ranges->push_back(
        hal::sim::Range::Of(pointers->back(), b->length_ - offsets_[i]));
  }
  if (bytes_->size() < info->constant_count) {
    Violation("dispatch of '%s': %zu constants set at index 30, the kernel "
              "reads %u",
              k->name.c_str(), bytes_->size(), info->constant_count);
    return NO;
  }
  constants->assign(bytes_->begin(), bytes_->begin() + info->constant_count);
  return YES;
}
- (void)dispatchThreadgroups:(MTLSize)groups
       threadsPerThreadgroup:(MTLSize)threads {
  if (![self simLive:"dispatchThreadgroups:"]) return;
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  std::vector<hal::sim::Range> ranges;
  if (![self simPrepare:threads
               pointers:&pointers
              constants:&constants
                 ranges:&ranges]) {
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  const uint32_t grid[3] = {(uint32_t)groups.width, (uint32_t)groups.height,
                            (uint32_t)groups.depth};
  engine::Op op;
  op.name = "mtl.dispatch";
  op.more_writes = std::move(ranges);
  op.run = [reads = [self simManagedReads],
            work = E().KernelWork(buffer_->state_->domain.get(),
                                  pipeline_->kernel_, grid, std::move(pointers),
                                  std::move(constants))] {
    for (const auto& [b, offset] : reads)
      [b simCheckGpuRead:offset length:b->length_ what:"a dispatch"];
    work();
  };
  [self simAdd:std::move(op)];
}
- (void)dispatchThreadgroupsWithIndirectBuffer:(id<MTLBuffer>)indirect
                          indirectBufferOffset:(NSUInteger)offset
                         threadsPerThreadgroup:(MTLSize)threads {
  if (![self simLive:"dispatchThreadgroupsWithIndirectBuffer:"]) return;
  auto* ib = (HalSimMTLBuffer*)indirect;
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  std::vector<hal::sim::Range> ranges;
  if (!ib || offset % 4 != 0 || offset > ib->length_ ||
      ib->length_ - offset < 12) {
    Violation("dispatchThreadgroupsWithIndirectBuffer: 12 bytes at offset "
              "%lu of a %lu-byte buffer (4-byte aligned)",
              (unsigned long)offset, (unsigned long)(ib ? ib->length_ : 0));
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  if (![self simPrepare:threads
               pointers:&pointers
              constants:&constants
                 ranges:&ranges]) {
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.dispatch_indirect";
  op.more_writes = std::move(ranges);
  op.read =
      hal::sim::Range::Of(reinterpret_cast<uintptr_t>(ib->base_) + offset, 12);
  engine::Domain* domain = buffer_->state_->domain.get();
  const engine::Kernel* kernel = pipeline_->kernel_;
  const uint8_t* counts = ib->base_ + offset;
  op.run = [domain, kernel, counts, pointers = std::move(pointers),
            constants = std::move(constants), reads = [self simManagedReads],
            ib, offset] {
    [ib simCheckGpuRead:offset
                 length:12
                   what:"an indirect dispatch's workgroup count"];
    for (const auto& [b, o] : reads)
      [b simCheckGpuRead:o length:b->length_ what:"a dispatch"];
    uint32_t grid[3];
    std::memcpy(grid, counts, sizeof(grid));
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;
    E().KernelWork(domain, kernel, grid, pointers, constants)();
  };
  [buffer_ simAddOp:std::move(op) retaining:indirect also:nil];
  [self simRetainBindings];
}
// The Managed buffers the dispatch binds, from their offsets (the kernel
// may read any byte past it; the command buffer retains them).
- (std::vector<std::pair<HalSimMTLBuffer*, NSUInteger>>)simManagedReads {
  std::vector<std::pair<HalSimMTLBuffer*, NSUInteger>> reads;
  for (uint32_t i = 0; i < pipeline_->kernel_->info->binding_count; ++i) {
    HalSimMTLBuffer* b = buffers_[i];
    if (b && b->mode_ == MTLStorageModeManaged)
      reads.emplace_back(b, offsets_[i]);
  }
  return reads;
}
- (void)simAdd:(engine::Op)op {
  [buffer_ simAddOp:std::move(op) retaining:nil also:nil];
  [self simRetainBindings];
}
// The command buffer keeps the pipeline and the bound buffers until it
// completes (their memory is read when the dispatch runs).
- (void)simRetainBindings {
  [buffer_ simRetain:pipeline_];
  for (uint32_t i = 0; i < pipeline_->kernel_->info->binding_count; ++i) {
    [buffer_ simRetain:buffers_[i]];
  }
}
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope {
  // Dispatches of one encoder run in order here (the default serial
  // dispatch type); nothing to do.
  [self simLive:"memoryBarrierWithScope:"];
}
- (void)endEncoding {
  if (![self simLive:"endEncoding"]) return;
  ended_ = YES;
  [buffer_ simEncoderEnded:self];
}
- (void)simTeardown {
  if (!ended_) {
    Violation("a compute encoder was released without endEncoding");
    [buffer_ simEncoderEnded:self];
  }
  for (HalSimMTLBuffer* b : buffers_) [b release];
  [pipeline_ release];
  delete bytes_;
  [buffer_ release];
}
@end
