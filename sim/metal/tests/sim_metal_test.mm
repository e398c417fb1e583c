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

#include "sim/core/halsim_control.h"

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
  // An MSL library with the test kernel "fill" (the simulated framework maps
  // it to the native build by name); the caller releases it.
  id<MTLLibrary> FillLibrary(NSError** error) {
    return [device_ newLibraryWithSource:@"kernel void fill(device uint* b "
                                         @"[[buffer(0)]]) {}"
                                 options:nil
                                   error:error];
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
  id<MTLBuffer> p = [device_ newBufferWithLength:16
                                         options:MTLResourceStorageModePrivate];
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
  EXPECT_NE(err.find("commit while an encoder is active"), std::string::npos)
      << err;
  [blit endEncoding];
  [cb waitUntilCompleted];
  err = Stderr([&] { [cb commit]; });
  EXPECT_NE(err.find("commit of a command buffer committed already"),
            std::string::npos)
      << err;
  err = Stderr([&] { EXPECT_EQ([cb blitCommandEncoder], nil); });
  EXPECT_NE(err.find("blitCommandEncoder on a command buffer after commit"),
            std::string::npos)
      << err;
}

TEST_F(SimMetal, UnalignedBlitFillIsReportedAndFailsTheCommandBuffer) {
  id<MTLBuffer> a = Shared(64);
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  std::string err =
      Stderr([&] { [blit fillBuffer:a range:NSMakeRange(2, 8) value:1]; });
  EXPECT_NE(err.find("must be nonzero multiples of 4 on macOS"),
            std::string::npos)
      << err;
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
  EXPECT_NE(err.find("over-release of a HalSimMTLSharedEvent"),
            std::string::npos)
      << err;
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
  id<MTLLibrary> bad =
      [device_ newLibraryWithSource:@"kernel void no_such_kernel(device uint* "
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
  id<MTLLibrary> lib = FillLibrary(&error);
  ASSERT_NE(lib, nil);
  EXPECT_EQ(error, nil);
  id<MTLFunction> f = [lib newFunctionWithName:@"fill"];
  ASSERT_NE(f, nil);
  EXPECT_EQ([lib newFunctionWithName:@"copy"], nil);
  [f release];
  [lib release];
}

// Each binding of a dispatch is a write range for the race checker (from
// its offset to the buffer's end: Metal binds no length): two dispatches on
// two command queues that nothing orders, writing one buffer, race; on
// separate buffers, or behind one another on one queue, they do not.
TEST_F(SimMetal, UnorderedDispatchesWritingOneBufferRace) {
  NSError* error = nil;
  id<MTLLibrary> lib = FillLibrary(&error);
  ASSERT_NE(lib, nil);
  id<MTLFunction> f = [lib newFunctionWithName:@"fill"];
  id<MTLComputePipelineState> pipeline =
      [device_ newComputePipelineStateWithFunction:f error:&error];
  ASSERT_NE(pipeline, nil);
  id<MTLBuffer> one = Shared(256), two = Shared(256);
  id<MTLCommandQueue> other = [device_ newCommandQueue];
  // Each round's dispatches wait for the round's gate value, so that both
  // are ready at the same step.
  id<MTLSharedEvent> gate = [device_ newSharedEvent];
  auto dispatch = [&](id<MTLCommandQueue> queue, id<MTLBuffer> target,
                      uint64_t round) {
    id<MTLCommandBuffer> cb = [queue commandBuffer];
    [cb encodeWaitForEvent:gate value:round];
    id<MTLComputeCommandEncoder> encoder = [cb computeCommandEncoder];
    [encoder setComputePipelineState:pipeline];
    [encoder setBuffer:target offset:0 atIndex:0];
    const uint32_t constants[2] = {static_cast<uint32_t>(round),
                                   64};  // value, count
    [encoder setBytes:constants length:sizeof(constants) atIndex:30];
    [encoder dispatchThreadgroups:MTLSizeMake(1, 1, 1)
            threadsPerThreadgroup:MTLSizeMake(64, 1, 1)];
    [encoder endEncoding];
    [cb commit];
    return cb;
  };
  auto races = [&](id<MTLCommandQueue> second_queue,
                   id<MTLBuffer> second_target, uint64_t round,
                   std::string* err) {
    const uint64_t before = halsim_races();
    *err = Stderr([&] {
      id<MTLCommandBuffer> a = dispatch(queue_, one, round);
      id<MTLCommandBuffer> b = dispatch(second_queue, second_target, round);
      gate.signaledValue = round;
      [a waitUntilCompleted];
      [b waitUntilCompleted];
      EXPECT_EQ([a status], MTLCommandBufferStatusCompleted);
      EXPECT_EQ([b status], MTLCommandBufferStatusCompleted);
    });
    return halsim_races() - before;
  };
  std::string err;
  EXPECT_EQ(races(other, one, 1, &err), 1u);
  EXPECT_NE(err.find("race"), std::string::npos) << err;
  EXPECT_NE(err.find("mtl.dispatch"), std::string::npos) << err;
  EXPECT_NE(err.find("both write"), std::string::npos) << err;
  EXPECT_EQ(races(other, two, 2, &err), 0u) << err;
  EXPECT_EQ(races(queue_, one, 3, &err), 0u) << err;
  EXPECT_EQ(static_cast<const uint32_t*>([one contents])[63], 3u);
  [gate release];
  [other release];
  [two release];
  [one release];
  [pipeline release];
  [f release];
  [lib release];
}

// The control ABI (sim/core/halsim_control.h), as the shared tools call it.
class SimMetalControl : public SimMetal {
 protected:
  void TearDown() override {
    EXPECT_EQ(halsim_set_faults(""), 0);
    SimMetal::TearDown();
  }
  // On a queue made now (numbered from the last reset): a fill of `b`, then
  // an encoded signal of `e` to `value` (when given). Waits; the status.
  MTLCommandBufferStatus FillAndSignal(id<MTLBuffer> b,
                                       id<MTLSharedEvent> e = nil,
                                       uint64_t value = 0) {
    id<MTLCommandQueue> queue = [device_ newCommandQueue];
    id<MTLCommandBuffer> cb = [queue commandBuffer];
    id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
    [blit fillBuffer:b range:NSMakeRange(0, [b length]) value:3];
    [blit endEncoding];
    if (e) [cb encodeSignalEvent:e value:value];
    [cb commit];
    [cb waitUntilCompleted];
    MTLCommandBufferStatus status = [cb status];
    [queue release];
    return status;
  }
};

TEST_F(SimMetalControl, ResetScheduleReplaysTheTrace) {
  id<MTLBuffer> b = Shared(64);
  ASSERT_EQ(halsim_reset_schedule(5), 0);
  EXPECT_EQ(halsim_seed(), 5u);
  EXPECT_EQ(halsim_trace_length(), 0u);
  EXPECT_EQ(halsim_virtual_time_ns(), 0u);
  const uint64_t steps = halsim_steps(), work = halsim_work_done(),
                 races = halsim_races();
  const uint64_t launched = halsim_host_functions_launched();
  EXPECT_EQ(FillAndSignal(b), MTLCommandBufferStatusCompleted);
  const uint64_t hash = halsim_trace_hash(), length = halsim_trace_length();
  // The fill and the completion (a host function).
  EXPECT_EQ(length, 2u);
  EXPECT_EQ(halsim_steps() - steps, length);
  EXPECT_EQ(halsim_work_done() - work, 1u);
  EXPECT_EQ(halsim_host_functions_launched() - launched, 1u);
  EXPECT_GT(halsim_virtual_time_ns(), 0u);
  EXPECT_EQ(halsim_races() - races, 0u);

  ASSERT_EQ(halsim_reset_schedule(5), 0);
  EXPECT_EQ(FillAndSignal(b), MTLCommandBufferStatusCompleted);
  EXPECT_EQ(halsim_trace_hash(), hash);
  EXPECT_EQ(halsim_trace_length(), length);
  ASSERT_EQ(halsim_reset_schedule(6), 0);
  EXPECT_EQ(FillAndSignal(b), MTLCommandBufferStatusCompleted);
  EXPECT_NE(halsim_trace_hash(), hash);
  [b release];
}

TEST_F(SimMetalControl, ResetScheduleIsRefusedWhileAQueueHasWork) {
  id<MTLSharedEvent> e = [device_ newSharedEvent];
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  [cb encodeWaitForEvent:e value:1];
  [cb commit];
  EXPECT_EQ(halsim_reset_schedule(9), -1);
  e.signaledValue = 1;
  [cb waitUntilCompleted];
  EXPECT_EQ(halsim_reset_schedule(9), 0);
  EXPECT_EQ(halsim_seed(), 9u);
  [e release];
}

TEST_F(SimMetalControl, FaultsMapOntoMetal) {
  // An allocation fault: newBufferWithLength: returns nil.
  ASSERT_EQ(halsim_set_faults("fail_alloc=1"), 0);
  EXPECT_EQ(Shared(64), nil);
  id<MTLBuffer> b = Shared(64);
  ASSERT_NE(b, nil);
  // An op fault: the fill fails its command buffer, whose later encoded
  // signal never happens.
  id<MTLSharedEvent> e = [device_ newSharedEvent];
  ASSERT_EQ(halsim_set_faults("fail_op=1"), 0);
  EXPECT_EQ(FillAndSignal(b, e, 1), MTLCommandBufferStatusError);
  EXPECT_EQ([e signaledValue], 0u);
  ASSERT_EQ(halsim_set_faults(""), 0);
  EXPECT_EQ(FillAndSignal(b, e, 1), MTLCommandBufferStatusCompleted);
  EXPECT_EQ([e signaledValue], 1u);
  // Not modelled, or not a fault: refused, with a line on stderr.
  std::string err = Stderr([] {
    EXPECT_EQ(halsim_set_faults("lose_device_at=1000"), -1);
    EXPECT_EQ(halsim_set_faults("no_such_fault=1"), -1);
  });
  EXPECT_NE(err.find("lose_device_at is not simulated"), std::string::npos)
      << err;
  [e release];
  [b release];
}

TEST_F(SimMetalControl, LateSignalDelaysAnEncodedSignal) {
  // Virtual time of one command buffer that only signals: a completion of
  // at most 128 us (sim/core/sim_random.h), plus 500 us when late.
  auto elapsed = [&](uint64_t value) {
    id<MTLSharedEvent> e = [device_ newSharedEvent];
    const uint64_t before = halsim_virtual_time_ns();
    id<MTLCommandBuffer> cb = [queue_ commandBuffer];
    [cb encodeSignalEvent:e value:value];
    [cb commit];
    [cb waitUntilCompleted];
    EXPECT_EQ([e signaledValue], value);
    [e release];
    return halsim_virtual_time_ns() - before;
  };
  EXPECT_LT(elapsed(1), 500'000u);
  ASSERT_EQ(halsim_set_faults("late_signal_us=500,late_signal_ppm=1000000"), 0);
  EXPECT_GE(elapsed(2), 500'000u);
}

TEST_F(SimMetalControl, PausedHostFunctionsHoldCompletion) {
  id<MTLBuffer> b = Shared(16);
  halsim_pause_host_functions(1);
  id<MTLCommandBuffer> cb = [queue_ commandBuffer];
  id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
  [blit fillBuffer:b range:NSMakeRange(0, 16) value:1];
  [blit endEncoding];
  [cb commit];
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ([cb status], MTLCommandBufferStatusCommitted);
  halsim_pause_host_functions(0);
  [cb waitUntilCompleted];
  EXPECT_EQ([cb status], MTLCommandBufferStatusCompleted);
  [b release];
}

// Managed storage has two copies: a CPU write the GPU reads without
// didModifyRange: is reported, and the GPU reads its own stale copy; once
// announced, the GPU sees it.
TEST_F(SimMetal, ManagedHostWriteWithoutDidModifyRangeIsReported) {
  id<MTLBuffer> m = [device_ newBufferWithLength:64
                                         options:MTLResourceStorageModeManaged];
  id<MTLBuffer> s = Shared(64);
  ASSERT_EQ([m storageMode], MTLStorageModeManaged);
  std::memset([s contents], 0, 64);
  std::memset([m contents], 7, 64);  // not announced
  auto copy = [&] {
    id<MTLCommandBuffer> cb = [queue_ commandBuffer];
    id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
    [blit copyFromBuffer:m
             sourceOffset:0
                 toBuffer:s
        destinationOffset:0
                     size:64];
    [blit endEncoding];
    [cb commit];
    [cb waitUntilCompleted];
  };
  std::string err = Stderr(copy);
  EXPECT_NE(err.find("Metal rule violated: a blit copy reads byte 0 of a "
                     "Managed buffer that "
                     "the CPU wrote without didModifyRange:"),
            std::string::npos)
      << err;
  EXPECT_NE(static_cast<uint8_t*>([s contents])[0], 7)
      << "the GPU read the CPU's copy";
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
  id<MTLBuffer> m = [device_ newBufferWithLength:64
                                         options:MTLResourceStorageModeManaged];
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
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[0], 0)
      << "the CPU saw a GPU write unsynchronized";
  err += Stderr([&] { run(true); });
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[0], 0x5A);
  EXPECT_EQ(static_cast<uint8_t*>([m contents])[63], 0x5A);
  EXPECT_EQ(err.find("Metal rule violated"), std::string::npos) << err;
  [m release];
}

TEST_F(SimMetal, ManagedDidModifyRangeOutsideTheBufferIsReported) {
  id<MTLBuffer> m = [device_ newBufferWithLength:64
                                         options:MTLResourceStorageModeManaged];
  std::string err = Stderr([&] { [m didModifyRange:NSMakeRange(60, 8)]; });
  EXPECT_NE(err.find("didModifyRange: range [60, +8) outside a 64-byte buffer"),
            std::string::npos)
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
  EXPECT_NE(err.find("the pointer must be page aligned and the length a "
                     "nonzero multiple of the "
                     "page"),
            std::string::npos)
      << err;
  EXPECT_EQ(calls, 0) << "a buffer never made has no deallocator call";
  id<MTLBuffer> b =
      [device_ newBufferWithBytesNoCopy:memory
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
