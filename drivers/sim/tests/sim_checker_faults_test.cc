// Each hazard class and each fault class, with the exact error it gives.
#include <algorithm>

#include "drivers/sim/tests/sim_test_util.h"

namespace hal::sim::testing {
namespace {

using ::testing::HasSubstr;

std::string LastReport(Device* device) {
  auto reports = SimCheckerReports(device).value();
  return reports.empty() ? "" : reports.back();
}

TEST(SimChecker, CommandBufferReadAfterWriteWithoutBarrier) {
  Ref<Device> device = MakeDevice("sim://?seed=1");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Buffer> b = HostBuffer(device.get(), 64, 0);
  auto cb = device
                ->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer, 1, 0)
                .value();
  uint8_t one = 1;
  ASSERT_TRUE(cb->Begin().ok());
  ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get(), 16, 32), &one, 1).ok());
  ASSERT_TRUE(
      cb->CopyBuffer(BufferRef::Direct(a.get()), BufferRef::Direct(b.get()), 64)
          .ok());
  ASSERT_TRUE(cb->End().ok());
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint signal{done.get(), 1};
  ASSERT_TRUE(device->QueueExecute(1, {}, {&signal, 1}, cb.get()).ok());
  Status s = WaitFor(done.get(), 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(),
              HasSubstr("write/read on buffer #1 [16, +32) between "
                        "command 0 (fill) and command 1 (copy) with "
                        "no barrier"));
  EXPECT_THAT(LastReport(device.get()), HasSubstr("queue_execute#1"));
  // Nothing ran: B is untouched.
  EXPECT_EQ(Read(b.get()), std::vector<uint8_t>(64, 0));
}

TEST(SimChecker, BarrierRemovesTheHazard) {
  Ref<Device> device = MakeDevice("sim://?seed=1");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Buffer> b = HostBuffer(device.get(), 64, 0);
  auto cb = device
                ->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer, 1, 0)
                .value();
  uint8_t one = 1;
  ASSERT_TRUE(cb->Begin().ok());
  ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get()), &one, 1).ok());
  ASSERT_TRUE(cb->ExecutionBarrier().ok());
  ASSERT_TRUE(
      cb->CopyBuffer(BufferRef::Direct(a.get()), BufferRef::Direct(b.get()), 64)
          .ok());
  ASSERT_TRUE(cb->End().ok());
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint signal{done.get(), 1};
  ASSERT_TRUE(device->QueueExecute(1, {}, {&signal, 1}, cb.get()).ok());
  ASSERT_TRUE(WaitFor(done.get(), 1).ok());
  EXPECT_EQ(Read(b.get()), std::vector<uint8_t>(64, 1));
  EXPECT_TRUE(SimCheckerReports(device.get()).value().empty());
}

TEST(SimChecker, WriteWriteAcrossQueuesWithoutSemaphore) {
  Ref<Device> device = MakeDevice("sim://?queues=2&seed=3");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> s1 = device->CreateSemaphore(0).value();
  Ref<Semaphore> s2 = device->CreateSemaphore(0).value();
  SemaphorePoint p1{s1.get(), 1}, p2{s2.get(), 1};
  uint8_t one = 1, two = 2;
  ASSERT_TRUE(device->QueueFill(1, {}, {&p1, 1}, a.get(), 0, 64, &one, 1).ok());
  ASSERT_TRUE(
      device->QueueFill(2, {}, {&p2, 1}, a.get(), 32, 32, &two, 1).ok());
  SemaphorePoint both[] = {p1, p2};
  Status s = WaitSemaphores(WaitMode::kAll, both,
                            Timeout::After(std::chrono::seconds(20)));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(LastReport(device.get()),
              HasSubstr("write/write on buffer #1 [32, +32) between "
                        "queue_execute#1 and queue_execute#2, which are in "
                        "flight together"));
}

// The hazard checker's self-test: every class (RAW, WAR, WAW) between every
// pair of queue operations that touch memory (fill, update, copy source,
// copy destination, and the same inside a command buffer), on two queues
// with nothing ordering them, fails an operation with FAILED_PRECONDITION
// and a report; the same pair ordered by a semaphore, two reads, or
// adjacent ranges, do not. A checker blind to a class fails here.
TEST(SimChecker, EveryHazardClassBetweenEveryOpKind) {
  enum Kind { kFill, kUpdate, kCopyDst, kCopySrc, kExecFill, kExecCopySrc };
  const char* names[] = {"fill",     "update",    "copy-dst",
                         "copy-src", "exec-fill", "exec-copy-src"};
  auto writes = [](Kind k) { return k != kCopySrc && k != kExecCopySrc; };
  struct Outcome {
    Status status;
    size_t reports;
  };
  // `second_at`: where the second op's 32 bytes start in the shared buffer
  // (the first op's are [16, +32)).
  auto run = [&](Kind first, Kind second, bool ordered,
                 DeviceSize second_at) -> Outcome {
    Ref<Device> device = MakeDevice("sim://?queues=2&seed=5");
    Ref<Buffer> shared = HostBuffer(device.get(), 128, 0);
    Ref<Buffer> other = HostBuffer(device.get(), 128, 0);
    Ref<Semaphore> s1 = device->CreateSemaphore(0).value();
    Ref<Semaphore> s2 = device->CreateSemaphore(0).value();
    SemaphorePoint p1{s1.get(), 1}, p2{s2.get(), 1};
    const uint8_t bytes[32] = {7};
    auto submit = [&](Kind kind, QueueAffinity queue, SemaphoreList wait,
                      SemaphoreList signal, DeviceSize at,
                      DeviceSize other_at) -> Status {
      switch (kind) {
        case kFill:
          return device->QueueFill(queue, wait, signal, shared.get(), at, 32,
                                   bytes, 1);
        case kUpdate:
          return device->QueueUpdate(queue, wait, signal, bytes, shared.get(),
                                     at, 32);
        case kCopyDst:
          return device->QueueCopy(queue, wait, signal, other.get(), other_at,
                                   shared.get(), at, 32);
        case kCopySrc:
          return device->QueueCopy(queue, wait, signal, shared.get(), at,
                                   other.get(), other_at, 32);
        case kExecFill:
        case kExecCopySrc: {
          auto cb = device
                        ->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                              CommandCategory::kTransfer,
                                              kQueueAffinityAny, 0)
                        .value();
          HAL_RETURN_IF_ERROR(cb->Begin());
          if (kind == kExecFill) {
            HAL_RETURN_IF_ERROR(cb->FillBuffer(
                BufferRef::Direct(shared.get(), at, 32), bytes, 1));
          } else {
            HAL_RETURN_IF_ERROR(cb->CopyBuffer(
                BufferRef::Direct(shared.get(), at, 32),
                BufferRef::Direct(other.get(), other_at, 32), 32));
          }
          HAL_RETURN_IF_ERROR(cb->End());
          return device->QueueExecute(queue, wait, signal, cb.get());
        }
      }
      return InternalError("unknown kind");
    };
    EXPECT_TRUE(submit(first, 1, {}, {&p1, 1}, 16, 0).ok());
    EXPECT_TRUE(submit(second, 2,
                       ordered ? SemaphoreList(&p1, 1) : SemaphoreList(),
                       {&p2, 1}, second_at, 64)
                    .ok());
    SemaphorePoint both[] = {p1, p2};
    Status status = WaitSemaphores(WaitMode::kAll, both,
                                   Timeout::After(std::chrono::seconds(20)));
    EXPECT_TRUE(
        device->WaitIdle(Timeout::After(std::chrono::seconds(20))).ok());
    return {status, SimCheckerReports(device.get()).value().size()};
  };
  for (Kind first :
       {kFill, kUpdate, kCopyDst, kCopySrc, kExecFill, kExecCopySrc}) {
    for (Kind second :
         {kFill, kUpdate, kCopyDst, kCopySrc, kExecFill, kExecCopySrc}) {
      SCOPED_TRACE(std::string(names[first]) + " on queue 0, " + names[second] +
                   " on queue 1");
      const bool hazard = writes(first) || writes(second);
      Outcome unordered = run(first, second, /*ordered=*/false, 32);
      if (hazard) {
        EXPECT_EQ(unordered.status.code(), StatusCode::kFailedPrecondition)
            << "an unordered hazard was not reported: "
            << unordered.status.ToString();
        EXPECT_GE(unordered.reports, 1u);
      } else {
        EXPECT_TRUE(unordered.status.ok()) << unordered.status.ToString();
        EXPECT_EQ(unordered.reports, 0u) << "two reads are no hazard";
      }
      Outcome ordered = run(first, second, /*ordered=*/true, 32);
      EXPECT_TRUE(ordered.status.ok()) << ordered.status.ToString();
      EXPECT_EQ(ordered.reports, 0u) << "ordered by a semaphore";
      Outcome apart = run(first, second, /*ordered=*/false, 48);
      EXPECT_TRUE(apart.status.ok()) << apart.status.ToString();
      EXPECT_EQ(apart.reports, 0u) << "adjacent ranges do not overlap";
    }
  }
}

TEST(SimChecker, SemaphorePathRemovesTheHazard) {
  Ref<Device> device = MakeDevice("sim://?queues=2&seed=3");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> s1 = device->CreateSemaphore(0).value();
  Ref<Semaphore> s2 = device->CreateSemaphore(0).value();
  SemaphorePoint p1{s1.get(), 1}, p2{s2.get(), 1};
  uint8_t one = 1, two = 2;
  ASSERT_TRUE(device->QueueFill(1, {}, {&p1, 1}, a.get(), 0, 64, &one, 1).ok());
  ASSERT_TRUE(
      device->QueueFill(2, {&p1, 1}, {&p2, 1}, a.get(), 32, 32, &two, 1).ok());
  ASSERT_TRUE(WaitFor(s2.get(), 1).ok());
  auto bytes = Read(a.get());
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[63], 2);
}

TEST(SimChecker, DeallocaWhileInFlight) {
  Ref<Device> device = MakeDevice("sim://?queues=2&seed=5");
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  Ref<Semaphore> alloc = device->CreateSemaphore(0).value();
  SemaphorePoint pa{alloc.get(), 1};
  Ref<Buffer> b = device->QueueAlloca(1, {}, {&pa, 1}, params, 256).value();
  Ref<Semaphore> used = device->CreateSemaphore(0).value();
  Ref<Semaphore> freed = device->CreateSemaphore(0).value();
  SemaphorePoint pu{used.get(), 1}, pf{freed.get(), 1};
  uint8_t x = 7;
  ASSERT_TRUE(
      device->QueueFill(1, {&pa, 1}, {&pu, 1}, b.get(), 0, 256, &x, 1).ok());
  // The dealloca waits for the alloca but not for the fill.
  ASSERT_TRUE(device->QueueDealloca(2, {&pa, 1}, {&pf, 1}, b.get()).ok());
  SemaphorePoint both[] = {pu, pf};
  Status s = WaitSemaphores(WaitMode::kAll, both,
                            Timeout::After(std::chrono::seconds(20)));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(LastReport(device.get()), HasSubstr("write/free on buffer #"));
}

TEST(SimChecker, HostMapsRangeThatReadyWorkWrites) {
  Ref<Device> device = MakeDevice("sim://?seed=9");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint p{done.get(), 1};
  uint8_t one = 1;
  ASSERT_TRUE(device->QueueFill(1, {}, {&p, 1}, a.get(), 0, 64, &one, 1).ok());
  // The fill may run at any moment: reading its range now is a race. Like
  // every hazard it fails the operation (its signal), not the host call.
  std::vector<uint8_t> out(16);
  EXPECT_TRUE(a->MapRead(8, out.data(), out.size()).ok());
  Status s = WaitFor(done.get(), 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(),
              HasSubstr("host read mapping of buffer #1 [8, +16) "
                        "while in-flight queue_execute#1 writes it"));
  EXPECT_THAT(LastReport(device.get()), HasSubstr("host read mapping"));
  // The fill did not run.
  EXPECT_EQ(Read(a.get()), std::vector<uint8_t>(64, 0));
}

// Issue 11 item 14: a write mapping held across a submission that writes
// the same bytes (unmapping writes the host's bytes back over the op's).
TEST(SimChecker, WriteMappingHeldAcrossASubmissionThatWritesFailsTheOp) {
  Ref<Device> device = MakeDevice("sim://?seed=9");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  auto mapping = a->Map(MappingMode::kScoped, MemoryAccess::kWrite, 16, 32);
  ASSERT_TRUE(mapping.ok()) << mapping.status().ToString();
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint p{done.get(), 1};
  uint8_t one = 1;
  ASSERT_TRUE(device->QueueFill(1, {}, {&p, 1}, a.get(), 0, 64, &one, 1).ok());
  Status s = WaitFor(done.get(), 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(),
              HasSubstr("queue_execute#1 writes buffer #1 [0, +64) "
                        "while the host holds a write mapping of "
                        "[16, +32)"));
  ASSERT_TRUE(mapping.value().Unmap().ok());
  EXPECT_EQ(Read(a.get()), std::vector<uint8_t>(64, 0));
}

// The op was submitted before the mapping but becomes ready (in flight)
// while it is held.
TEST(SimChecker, OpReleasedWhileAMappingIsHeldFailsTheOp) {
  Ref<Device> device = MakeDevice("sim://?seed=9");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> gate = device->CreateSemaphore(0).value();
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint g{gate.get(), 1}, p{done.get(), 1};
  uint8_t one = 1;
  ASSERT_TRUE(
      device->QueueFill(1, {&g, 1}, {&p, 1}, a.get(), 32, 32, &one, 1).ok());
  auto mapping = a->Map(MappingMode::kPersistent, MemoryAccess::kAll);
  ASSERT_TRUE(mapping.ok()) << mapping.status().ToString();
  ASSERT_TRUE(gate->Signal(1).ok());
  Status s = WaitFor(done.get(), 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(LastReport(device.get()),
              HasSubstr("writes buffer #1 [32, +32) while the host holds a "
                        "write mapping of [0, +64)"));
}

// Disjoint ranges, a read mapping held while an op writes elsewhere or
// reads the range, and a mapping released before the op: no report.
TEST(SimChecker, MappingsThatDoNotConflictAreFine) {
  Ref<Device> device = MakeDevice("sim://?seed=9");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Buffer> b = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  uint8_t one = 1, two = 2;
  {
    auto write = a->Map(MappingMode::kScoped, MemoryAccess::kWrite, 0, 32);
    auto read = b->Map(MappingMode::kScoped, MemoryAccess::kRead, 0, 64);
    ASSERT_TRUE(write.ok() && read.ok());
    SemaphorePoint p1{done.get(), 1}, p2{done.get(), 2};
    ASSERT_TRUE(
        device->QueueFill(1, {}, {&p1, 1}, a.get(), 32, 32, &one, 1).ok());
    ASSERT_TRUE(
        device->QueueCopy(1, {&p1, 1}, {&p2, 1}, b.get(), 0, a.get(), 32, 16)
            .ok());
    ASSERT_TRUE(WaitFor(done.get(), 2).ok());
  }
  SemaphorePoint p3{done.get(), 3};
  ASSERT_TRUE(device->QueueFill(1, {}, {&p3, 1}, a.get(), 0, 32, &two, 1).ok());
  ASSERT_TRUE(WaitFor(done.get(), 3).ok());
  EXPECT_TRUE(SimCheckerReports(device.get()).value().empty());
  std::vector<uint8_t> want(64, 2);
  std::fill(want.begin() + 32, want.begin() + 48, 0);
  std::fill(want.begin() + 48, want.end(), 1);
  EXPECT_EQ(Read(a.get()), want);
}

TEST(SimChecker, CheckingOffReportsNothing) {
  Ref<Device> device = MakeDevice("sim://?seed=9&check=0");
  Ref<Buffer> a = HostBuffer(device.get(), 64, 0);
  Ref<Semaphore> done = device->CreateSemaphore(0).value();
  SemaphorePoint p{done.get(), 1};
  uint8_t one = 1;
  ASSERT_TRUE(device->QueueFill(1, {}, {&p, 1}, a.get(), 0, 64, &one, 1).ok());
  std::vector<uint8_t> out(16);
  EXPECT_TRUE(a->MapRead(8, out.data(), out.size()).ok());
  ASSERT_TRUE(WaitFor(done.get(), 1).ok());
  EXPECT_TRUE(SimCheckerReports(device.get()).value().empty());
}

TEST(SimFaults, NthAllocationFails) {
  Ref<Device> device = MakeDevice("sim://?seed=1&fail_alloc=3");
  BufferParams p;
  EXPECT_TRUE(device->allocator()->AllocateBuffer(p, 64).ok());
  EXPECT_TRUE(device->allocator()->AllocateBuffer(p, 64).ok());
  auto third = device->allocator()->AllocateBuffer(p, 64);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(),
              HasSubstr("injected fault: allocation #3"));
  EXPECT_TRUE(device->allocator()->AllocateBuffer(p, 64).ok());
  // Nothing leaked into the statistics.
  EXPECT_EQ(device->allocator()->statistics().live_allocations, 0u);
}

TEST(SimFaults, AllocaCommitFailureFailsItsSignal) {
  Ref<Device> device = MakeDevice("sim://?seed=1&fail_alloc=1");
  Ref<Semaphore> s = device->CreateSemaphore(0).value();
  SemaphorePoint p{s.get(), 1};
  auto b = device->QueueAlloca(1, {}, {&p, 1}, BufferParams{}, 128);
  ASSERT_TRUE(b.ok());
  Status st = WaitFor(s.get(), 1);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
}

TEST(SimFaults, NthOperationFailsAndPropagates) {
  Ref<Device> device = MakeDevice("sim://?seed=1&fail_op=2");
  Ref<Semaphore> s = device->CreateSemaphore(0).value();
  bool third_ran = false;
  SemaphorePoint w1{s.get(), 1}, w2{s.get(), 2}, w3{s.get(), 3};
  ASSERT_TRUE(device->QueueBarrier(1, {}, {&w1, 1}).ok());
  ASSERT_TRUE(device->QueueBarrier(1, {&w1, 1}, {&w2, 1}).ok());
  ASSERT_TRUE(device
                  ->QueueHostCall(1, {&w2, 1}, {&w3, 1},
                                  [&] {
                                    third_ran = true;
                                    return OkStatus();
                                  })
                  .ok());
  Status st = WaitFor(s.get(), 3);
  EXPECT_EQ(st.code(), StatusCode::kInternal) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("injected fault: operation #2"));
  EXPECT_FALSE(third_ran);
}

TEST(SimFaults, DeviceLossFailsPendingAndFutureWork) {
  Ref<Device> device = MakeDevice("sim://?seed=1&lose_device_at=1");
  Ref<Semaphore> gate = device->CreateSemaphore(0).value();
  Ref<Semaphore> a = device->CreateSemaphore(0).value();
  Ref<Semaphore> pending = device->CreateSemaphore(0).value();
  SemaphorePoint g{gate.get(), 1}, pa{a.get(), 1}, pp{pending.get(), 1};
  ASSERT_TRUE(device->QueueBarrier(1, {}, {&pa, 1}).ok());
  ASSERT_TRUE(
      device->QueueBarrier(1, {&g, 1}, {&pp, 1}).ok());  // never released
  Status st = WaitFor(a.get(), 1);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_EQ(WaitFor(pending.get(), 1).code(), StatusCode::kDataLoss);
  Ref<Semaphore> later = device->CreateSemaphore(0).value();
  SemaphorePoint pl{later.get(), 1};
  ASSERT_TRUE(device->QueueBarrier(1, {}, {&pl, 1}).ok());
  EXPECT_EQ(WaitFor(later.get(), 1).code(), StatusCode::kDataLoss);
  EXPECT_TRUE(device->WaitIdle(Timeout::After(std::chrono::seconds(5))).ok());
}

TEST(SimFaults, SlowOperationsTakeLongerInVirtualTimeOnly) {
  auto run = [](const std::string& uri) {
    Ref<Device> device = MakeDevice(uri);
    Ref<Semaphore> s = device->CreateSemaphore(0).value();
    for (uint64_t i = 1; i <= 20; ++i) {
      SemaphorePoint w{s.get(), i - 1}, p{s.get(), i};
      EXPECT_TRUE(device->QueueBarrier(1, {&w, 1}, {&p, 1}).ok());
    }
    EXPECT_TRUE(WaitFor(s.get(), 20).ok());
    return SimVirtualTimeNs(device.get()).value();
  };
  uint64_t normal = run("sim://?seed=4");
  uint64_t slow = run("sim://?seed=4&slow_ppm=1000000");
  EXPECT_GE(slow, normal * 50) << normal << " vs " << slow;
}

TEST(SimFaults, SeededRatesReplay) {
  auto pattern = [](uint64_t seed) {
    Ref<Device> device =
        MakeDevice("sim://?alloc_fail_ppm=300000&seed=" + std::to_string(seed));
    std::string bits;
    for (int i = 0; i < 40; ++i) {
      bits += device->allocator()->AllocateBuffer(BufferParams{}, 16).ok()
                  ? '1'
                  : '0';
    }
    return bits;
  };
  std::string a = pattern(11), b = pattern(11), c = pattern(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find('0'), std::string::npos);
  EXPECT_NE(a.find('1'), std::string::npos);
  EXPECT_NE(a, c);
}

TEST(SimFaults, SetFaultsThroughTheApi) {
  Ref<Device> device = MakeDevice("sim://?seed=1");
  SimFaultPlan plan;
  plan.fail_alloc = 1;
  ASSERT_TRUE(SimSetFaults(device.get(), plan).ok());
  EXPECT_EQ(
      device->allocator()->AllocateBuffer(BufferParams{}, 16).status().code(),
      StatusCode::kResourceExhausted);
}

TEST(SimDevice, UriErrorsAreClear) {
  auto d = DefaultDriverRegistry().CreateDevice("sim://?mode=fast");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  d = DefaultDriverRegistry().CreateDevice("sim://?sede=1");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("'sede' is not known"));
}

}  // namespace
}  // namespace hal::sim::testing
