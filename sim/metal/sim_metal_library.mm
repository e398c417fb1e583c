// HalSimMTLLibrary, HalSimMTLFunction and HalSimMTLPipeline
// (sim_metal_library.h).
#include "sim/metal/sim_metal_library.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

namespace hal::sim::metal {

engine::KernelLibrary& Kernels() { return L().kernels(); }

NSError* MakeError(NSString* domain, const std::string& text) {
  NSString* message = [NSString stringWithUTF8String:text.c_str()];
  return [NSError
      errorWithDomain:domain
                 code:1
             userInfo:[NSDictionary
                          dictionaryWithObject:message
                                        forKey:NSLocalizedDescriptionKey]];
}

}  // namespace hal::sim::metal

@implementation HalSimMTLFunction
- (NSString*)name {
  return [NSString stringWithUTF8String:kernel_->name.c_str()];
}
- (void)simTeardown {
  delete kernel_;
}
@end

@implementation HalSimMTLLibrary
- (NSArray<NSString*>*)functionNames {
  NSMutableArray* names = [NSMutableArray array];
  for (const engine::Kernel& k : *kernels_) {
    [names addObject:[NSString stringWithUTF8String:k.name.c_str()]];
  }
  return names;
}
- (id<MTLFunction>)newFunctionWithName:(NSString*)name {
  HALSIM_METAL_ENTER();
  const char* want = [name UTF8String];
  for (const engine::Kernel& k : *kernels_) {
    if (k.name == want) {
      HalSimMTLFunction* f = [[HalSimMTLFunction alloc] init];
      f->kernel_ = new engine::Kernel(k);
      return f;
    }
  }
  return nil;
}
- (void)simTeardown {
  delete kernels_;
}
@end

@implementation HalSimMTLPipeline
- (NSUInteger)maxTotalThreadsPerThreadgroup {
  return 1024;
}
- (NSUInteger)threadExecutionWidth {
  return 32;
}
- (void)simTeardown {
  delete kernel_;
}
@end
