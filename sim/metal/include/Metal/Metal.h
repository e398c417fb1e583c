// The simulated Metal framework's interface: a project-written
// Metal/Metal.h for building the Metal driver off Apple platforms: only the
// protocols, classes, types and selectors the driver uses, with Apple's
// names and signatures (from Apple's Metal documentation,
// https://developer.apple.com/documentation/metal). On Linux the simulated
// Metal framework (sim/metal/) implements them, and its CMake target
// (halsim_metal) puts sim/metal/include on the include path of whatever links
// it, the Metal driver included; on macOS the real <Metal/Metal.h> from the
// SDK is used instead and this file is not on the include path.
//
// Objective-C only: included from drivers/metal/*.mm and sim/metal/*.mm.
#pragma once

#import <Foundation/Foundation.h>

#include <stdint.h>

// --- Types. -----------------------------------------------------------------

typedef NS_ENUM(NSUInteger, MTLStorageMode) {
  MTLStorageModeShared = 0,
  MTLStorageModeManaged = 1,
  MTLStorageModePrivate = 2,
  MTLStorageModeMemoryless = 3,
};

typedef NS_ENUM(NSUInteger, MTLCPUCacheMode) {
  MTLCPUCacheModeDefaultCache = 0,
  MTLCPUCacheModeWriteCombined = 1,
};

#define MTLResourceCPUCacheModeShift 0
#define MTLResourceStorageModeShift 4
#define MTLResourceHazardTrackingModeShift 8

typedef NS_OPTIONS(NSUInteger, MTLResourceOptions) {
  MTLResourceCPUCacheModeDefaultCache = MTLCPUCacheModeDefaultCache
                                        << MTLResourceCPUCacheModeShift,
  MTLResourceCPUCacheModeWriteCombined = MTLCPUCacheModeWriteCombined
                                         << MTLResourceCPUCacheModeShift,
  MTLResourceStorageModeShared = MTLStorageModeShared
                                 << MTLResourceStorageModeShift,
  MTLResourceStorageModeManaged = MTLStorageModeManaged
                                  << MTLResourceStorageModeShift,
  MTLResourceStorageModePrivate = MTLStorageModePrivate
                                  << MTLResourceStorageModeShift,
  MTLResourceHazardTrackingModeDefault = 0
                                         << MTLResourceHazardTrackingModeShift,
};

typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus) {
  MTLCommandBufferStatusNotEnqueued = 0,
  MTLCommandBufferStatusEnqueued = 1,
  MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3,
  MTLCommandBufferStatusCompleted = 4,
  MTLCommandBufferStatusError = 5,
};

typedef NS_OPTIONS(NSUInteger, MTLBarrierScope) {
  MTLBarrierScopeBuffers = 1 << 0,
};

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;

static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height,
                                  NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

// --- Protocols. -------------------------------------------------------------

@protocol MTLDevice;
@protocol MTLCommandBuffer;
@protocol MTLSharedEvent;
@protocol MTLFunction;

@protocol MTLResource <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) MTLStorageMode storageMode;
@end

@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
// NULL for a buffer in MTLStorageModePrivate.
- (void*)contents;
// Managed buffers: tells the GPU which bytes the CPU changed.
- (void)didModifyRange:(NSRange)range;
@end

@protocol MTLFunction <NSObject>
@property(readonly) NSString* name;
@end

@protocol MTLLibrary <NSObject>
@property(readonly) NSArray<NSString*>* functionNames;
- (id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@end

@protocol MTLCommandEncoder <NSObject>
- (void)endEncoding;
@end

@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)fillBuffer:(id<MTLBuffer>)buffer
             range:(NSRange)range
             value:(uint8_t)value;
- (void)copyFromBuffer:(id<MTLBuffer>)sourceBuffer
          sourceOffset:(NSUInteger)sourceOffset
              toBuffer:(id<MTLBuffer>)destinationBuffer
     destinationOffset:(NSUInteger)destinationOffset
                  size:(NSUInteger)size;
// Managed resources (macOS): copies the GPU's writes to the CPU's copy
// once the commands before it in the command buffer completed.
- (void)synchronizeResource:(id<MTLResource>)resource;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBuffer:(id<MTLBuffer>)buffer
           offset:(NSUInteger)offset
          atIndex:(NSUInteger)index;
- (void)setBytes:(const void*)bytes
          length:(NSUInteger)length
         atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid
       threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreadgroupsWithIndirectBuffer:(id<MTLBuffer>)indirectBuffer
                          indirectBufferOffset:(NSUInteger)indirectBufferOffset
                         threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
@end

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLEvent <NSObject>
@property(readonly) id<MTLDevice> device;
@end

@class MTLSharedEventListener;
typedef void (^MTLSharedEventNotificationBlock)(id<MTLSharedEvent>,
                                                uint64_t value);

@protocol MTLSharedEvent <MTLEvent>
@property(readwrite) uint64_t signaledValue;
- (void)notifyListener:(MTLSharedEventListener*)listener
               atValue:(uint64_t)value
                 block:(MTLSharedEventNotificationBlock)block;
@end

@protocol MTLCommandBuffer <NSObject>
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
- (id<MTLBlitCommandEncoder>)blitCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)encodeWaitForEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)encodeSignalEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)commit;
- (void)waitUntilCompleted;
@end

@protocol MTLCommandQueue <NSObject>
@property(readonly) id<MTLDevice> device;
- (id<MTLCommandBuffer>)commandBuffer;
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) uint64_t registryID;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) MTLSize maxThreadsPerThreadgroup;
// NO on a Mac whose GPU has its own memory (Managed storage has two copies).
@property(readonly) BOOL hasUnifiedMemory;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length
                             options:(MTLResourceOptions)options;
// Wraps caller memory: `pointer` page aligned, `length` a nonzero multiple
// of the page size; `deallocator` (may be nil) runs when the buffer is
// deallocated.
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:
                                  (void (^)(void* pointer,
                                            NSUInteger length))deallocator;
- (id<MTLSharedEvent>)newSharedEvent;
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source
                               options:(id)options
                                 error:(NSError**)error;
- (id<MTLComputePipelineState>)
    newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                  error:(NSError**)error;
@end

// --- Classes and functions. -------------------------------------------------

// Delivers notifyListener: blocks (Apple: on a dispatch queue; here on the
// framework's own notification thread).
@interface MTLSharedEventListener : NSObject
- (instancetype)init;
@end

#ifdef __cplusplus
extern "C" {
#endif
id<MTLDevice> MTLCreateSystemDefaultDevice(void);
#ifdef __cplusplus
}
#endif
