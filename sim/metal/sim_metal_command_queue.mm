// HalSimMTLCommandQueue (sim_metal_command_queue.h).
#include "sim/metal/sim_metal_command_queue.h"

#include "sim/metal/sim_metal_command_buffer.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@implementation HalSimMTLCommandQueue
- (id<MTLDevice>)device {
  return device_;
}
- (id<MTLCommandBuffer>)commandBuffer {
  HALSIM_METAL_ENTER();
  HalSimMTLCommandBuffer* cb = [[HalSimMTLCommandBuffer alloc] init];
  cb->queue_ = [self retain];
  cb->state_ = new CommandBufferState();
  return [cb autorelease];
}
- (void)simTeardown {
  E().DestroyQueue(queue_);
  [device_ release];
}
@end
