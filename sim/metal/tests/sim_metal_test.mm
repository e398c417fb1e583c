// The simulated Metal framework on its own: what it runs, and that each
// Metal rule it checks is reported (on stderr, with the seed).
#import "Metal/Metal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {

class SimMetal : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = [[NSAutoreleasePool alloc] init];
    device_ = MTLCreateSystemDefaultDevice();
    ASSERT_NE(device_, nil);
    queue_ = [device_ newCommandQueue];
  }
  void TearDown() override {
    [queue_ release];
    [device_ release];
    [pool_ drain];
  }
  // Runs `fn` and returns what it printed on stderr.
  template <typename Fn>
  std::string Stderr(Fn fn) {
    ::testing::internal::CaptureStderr();
    fn();
    return ::testing::internal::GetCapturedStderr();
  }
  id<MTLBuffer> Shared(NSUInteger n) {
    return [device_ newBufferWithLength:n options:MTLResourceStorageModeShared];
  }

  NSAutoreleasePool* pool_;
  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
};

TEST_F(SimMetal, BlitFillAndCopyRun) {
  id<MTLBuffer> a = Shared(64), b = Shared(64);
  std::memset([a contents], 0, 64);
  std::memset([b contents], 0, 64);
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  [blit fillBuffer:a range:NSMakeRange(0, 64) value:0x5A];
  [blit endEncoding];
  blit = [cb blitCommandEncoder];
  [blit copyFromBuffer:a sourceOffset:8 toBuffer:b destinationOffset:16 size:8];
  [blit endEncoding];
  [cb commit];
  [cb waitUntilCompleted];
  EXPECT_EQ([cb status], MTLCommandBufferStatusCompleted);
  const auto* bytes = static_cast<const uint8_t*>([b contents]);
  EXPECT_EQ(bytes[15], 0);
  EXPECT_EQ(bytes[16], 0x5A);
  EXPECT_EQ(bytes[23], 0x5A);
  EXPECT_EQ(bytes[24], 0);
  [a release];
  [b release];
}

TEST_F(SimMetal, PrivateBufferHasNoContents) {
  id<MTLBuffer> p = [device_ newBufferWithLength:16 options:MTLResourceStorageModePrivate];
  EXPECT_EQ([p contents], nullptr);
  EXPECT_EQ([p storageMode], MTLStorageModePrivate);
  [p release];
}

TEST_F(SimMetal, SecondEncoderWhileOneIsActiveIsReported) {
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  std::string err = Stderr([&] { EXPECT_EQ([cb computeCommandEncoder], nil); });
  EXPECT_NE(err.find("Metal rule violated: computeCommandEncoder while an "
                     "encoder of the command buffer is active"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("seed="), std::string::npos) << err;
  [blit endEncoding];
}

TEST_F(SimMetal, CommitWithActiveEncoderAndTwiceAreReported) {
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  std::string err = Stderr([&] { [cb commit]; });
  EXPECT_NE(err.find("commit while an encoder is active"), std::string::npos) << err;
  [blit endEncoding];
  [cb waitUntilCompleted];
  err = Stderr([&] { [cb commit]; });
  EXPECT_NE(err.find("commit of a command buffer committed already"), std::string::npos) << err;
  err = Stderr([&] { EXPECT_EQ([cb blitCommandEncoder], nil); });
  EXPECT_NE(err.find("blitCommandEncoder on a command buffer after commit"), std::string::npos)
      << err;
}

TEST_F(SimMetal, UnalignedBlitFillIsReportedAndFailsTheCommandBuffer) {
  id<MTLBuffer> a = Shared(64);
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  std::string err = Stderr([&] { [blit fillBuffer:a range:NSMakeRange(2, 8) value:1]; });
  EXPECT_NE(err.find("must be nonzero multiples of 4 on macOS"), std::string::npos) << err;
  [blit endEncoding];
  [cb commit];
  [cb waitUntilCompleted];
  EXPECT_EQ([cb status], MTLCommandBufferStatusError);
  [a release];
}

TEST_F(SimMetal, OverReleaseIsReported) {
  id<MTLSharedEvent> e = [device_ newSharedEvent];
  [e release];
  std::string err = Stderr([&] { [e release]; });
  EXPECT_NE(err.find("over-release of a HalSimMTLSharedEvent"), std::string::npos) << err;
}

TEST_F(SimMetal, EncodedEventsOrderQueuesAndListenersRunOnTheirThread) {
  id<MTLSharedEvent> e = [device_ newSharedEvent];
  id<MTLCommandQueue> other = [device_ newCommandQueue];
  id<MTLBuffer> a = Shared(16);
  std::memset([a contents], 0, 16);
  // Queue 2 waits for the event that queue 1's command buffer signals.
  id<MTLCommandBuffer> waiter = [other commandBuffer];
  [waiter encodeWaitForEvent:e value:2];
  id<MTLBlitCommandEncoder> blit = [waiter blitCommandEncoder];
  [blit fillBuffer:a range:NSMakeRange(0, 16) value:7];
  [blit endEncoding];
  [waiter commit];

  struct Heard {
    std::mutex mutex;
    std::condition_variable cv;
    uint64_t value = 0;
    std::thread::id thread;
  };
  Heard heard_state;
  Heard* h = &heard_state;
  MTLSharedEventListener* listener = [[MTLSharedEventListener alloc] init];
  [e notifyListener:listener
            atValue:2
              block:^(id<MTLSharedEvent>, uint64_t value) {
                std::lock_guard<std::mutex> lock(h->mutex);
                h->value = value;
                h->thread = std::this_thread::get_id();
                h->cv.notify_all();
              }];
  id<MTLCommandBuffer> signaller = [queue_ commandBuffer];
  [signaller encodeSignalEvent:e value:2];
  [signaller commit];
  [waiter waitUntilCompleted];
  EXPECT_EQ(static_cast<const uint8_t*>([a contents])[15], 7);
  EXPECT_EQ([e signaledValue], 2u);
  {
    std::unique_lock<std::mutex> lock(h->mutex);
    h->cv.wait(lock, [&] { return h->value != 0; });
  }
  EXPECT_EQ(h->value, 2u);
  EXPECT_NE(h->thread, std::this_thread::get_id());
  [signaller waitUntilCompleted];
  [listener release];
  [a release];
  [other release];
  [e release];
}

TEST_F(SimMetal, HostSignalReleasesAnEncodedWait) {
  id<MTLSharedEvent> e = [device_ newSharedEvent];
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  [cb encodeWaitForEvent:e value:5];
  std::atomic<bool> done_flag{false};
  std::atomic<bool>* done = &done_flag;
  [cb addCompletedHandler:^(id<MTLCommandBuffer>) {
    *done = true;
  }];
  [cb commit];
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done->load());
  e.signaledValue = 5;
  [cb waitUntilCompleted];
  EXPECT_EQ([cb status], MTLCommandBufferStatusCompleted);
  [e release];
}

// Its own ctest (unit.metal-sim.library_error): GNUstep's first NSError
// leaves 24 bytes LeakSanitizer reports (sim/metal/lsan_nserror.txt).
TEST_F(SimMetal, MslKernelWithoutNativeBuildIsALibraryError) {
  NSError* error = nil;
  id<MTLLibrary> bad = [device_ newLibraryWithSource:@"kernel void no_such_kernel(device uint* "
                                                     @"b [[buffer(0)]]) {}"
                                             options:nil
                                               error:&error];
  EXPECT_EQ(bad, nil);
  ASSERT_NE(error, nil);
  EXPECT_NE(std::string([[error localizedDescription] UTF8String])
                .find("'no_such_kernel' has no native build"),
            std::string::npos);
}

TEST_F(SimMetal, MslLibraryMapsKernelsByName) {
  NSError* error = nil;
  id<MTLLibrary> lib = [device_ newLibraryWithSource:@"kernel void fill(device uint* b "
                                                     @"[[buffer(0)]]) {}"
                                             options:nil
                                               error:&error];
  ASSERT_NE(lib, nil);
  EXPECT_EQ(error, nil);
  id<MTLFunction> f = [lib newFunctionWithName:@"fill"];
  ASSERT_NE(f, nil);
  EXPECT_EQ([lib newFunctionWithName:@"copy"], nil);
  [f release];
  [lib release];
}

// Managed storage has two copies: a CPU write the GPU reads without
// didModifyRange: is reported, and the GPU reads its own stale copy; once
// announced, the GPU sees it.
TEST_F(SimMetal, ManagedHostWriteWithoutDidModifyRangeIsReported) {
  id<MTLBuffer> m = [device_ newBufferWithLength:64 options:MTLResourceStorageModeManaged];
  id<MTLBuffer> s = Shared(64);
  ASSERT_EQ([m storageMode], MTLStorageModeManaged);
  std::memset([s contents], 0, 64);
  std::memset([m contents], 7, 64);  // not announced
  auto copy = [&] {
    id<MTLCommandBuffer> cb = [queue_ commandBuffer];
    id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
    [blit copyFromBuffer:m sourceOffset:0 toBuffer:s destinationOffset:0 size:64];
    [blit endEncoding];
    [cb commit];
    [cb waitUntilCompleted];
  };
  std::string err = Stderr(copy);
  EXPECT_NE(err.find("Metal rule violated: a blit copy reads byte 0 of a Managed buffer that "
                     "the CPU wrote without didModifyRange:"),
            std::string::npos)
      << err;
  EXPECT_NE(static_cast<uint8_t*>([s contents])[0], 7) << "the GPU read the CPU's copy";
  [m didModifyRange:NSMakeRange(0, 64)];
  err = Stderr(copy);
  EXPECT_EQ(err.find("Metal rule violated"), std::string::npos) << err;
  EXPECT_EQ(static_cast<uint8_t*>([s contents])[0], 7);
  EXPECT_EQ(static_cast<uint8_t*>([s contents])[63], 7);
  [m release];
  [s release];
}

// GPU writes reach the CPU's copy only through a blit synchronizeResource:.
TEST_F(SimMetal, ManagedGpuWritesNeedSynchronizeResource) {
  id<MTLBuffer> m = [device_ newBufferWithLength:64 options:MTLResourceStorageModeManaged];
  std::memset([m contents], 0, 64);
  [m didModifyRange:NSMakeRange(0, 64)];
  auto run = [&](bool synchronize) {
    id<MTLCommandBuffer> cb = [queue_ commandBuffer];
    id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
    [blit fillBuffer:m range:NSMakeRange(0, 64) value:0x5A];
    if (synchronize) [blit synchronizeResource:m];
    [blit endEncoding];
    [cb commit];
    [cb waitUntilCompleted];
  };
  std::string err = Stderr([&] { run(false); });
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[0], 0) << "the CPU saw a GPU write unsynchronized";
  err += Stderr([&] { run(true); });
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[0], 0x5A);
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[63], 0x5A);
  EXPECT_EQ(err.find("Metal rule violated"), std::string::npos) << err;
  [m release];
}

TEST_F(SimMetal, ManagedDidModifyRangeOutsideTheBufferIsReported) {
  id<MTLBuffer> m = [device_ newBufferWithLength:64 options:MTLResourceStorageModeManaged];
  std::string err = Stderr([&] { [m didModifyRange:NSMakeRange(60, 8)]; });
  EXPECT_NE(err.find("didModifyRange: range [60, +8) outside a 64-byte buffer"), std::string::npos)
      << err;
  [m release];
}

// newBufferWithBytesNoCopy: wraps whole pages only; the wrapped memory is
// what the GPU uses, and the deallocator runs once, when the buffer goes.
TEST_F(SimMetal, NoCopyBufferNeedsPagesAndRunsItsDeallocator) {
  constexpr size_t kPage = 4096;
  auto* memory = static_cast<uint8_t*>(std::aligned_alloc(kPage, 2 * kPage));
  ASSERT_NE(memory, nullptr);
  std::memset(memory, 0, 2 * kPage);
  __block int calls = 0;
  __block void* freed = nullptr;
  auto dealloc = ^(void* p, NSUInteger) {
    ++calls;
    freed = p;
  };
  std::string err = Stderr([&] {
    EXPECT_EQ([device_ newBufferWithBytesNoCopy:memory + 64
                                         length:kPage
                                        options:MTLResourceStorageModeShared
                                    deallocator:dealloc],
              nil);
    EXPECT_EQ([device_ newBufferWithBytesNoCopy:memory
                                         length:100
                                        options:MTLResourceStorageModeShared
                                    deallocator:dealloc],
              nil);
  });
  EXPECT_NE(err.find("the pointer must be page aligned and the length a nonzero multiple of the "
                     "page"),
            std::string::npos)
      << err;
  EXPECT_EQ(calls, 0) << "a buffer never made has no deallocator call";
  id<MTLBuffer> b = [device_ newBufferWithBytesNoCopy:memory
                                               length:2 * kPage
                                              options:MTLResourceStorageModeShared
                                          deallocator:dealloc];
  ASSERT_NE(b, nil);
  EXPECT_EQ([b contents], memory);
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  [blit fillBuffer:b range:NSMakeRange(kPage, 16) value:0x33];
  [blit endEncoding];
  [cb commit];
  [cb waitUntilCompleted];
  EXPECT_EQ([cb status], MTLCommandBufferStatusCompleted);
  EXPECT_EQ(memory[kPage], 0x33);
  EXPECT_EQ(memory[kPage + 16], 0);
  EXPECT_EQ(calls, 0);
  [b release];
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(freed, memory);
  std::free(memory);
}

}  // namespace
