// Unit tests of the simulated-GPU engine itself (no vendor skin): signals
// and waits across queues, seeded order determinism, the race checker, the
// fault plan, memory checks, native kernel bounds and graph order. Several
// engines live in this one process, which is the point of an object.
#include "sim/engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sim/engine/engine_graph.h"
#include "sim/engine/engine_kernels.h"

namespace hal::sim::engine {
namespace {

// Engines that step as soon as work is ready: the tests make the order
// deterministic by enqueueing everything behind a gate signal first.
Options FastOptions() {
  Options o;
  o.log_prefix = "engine_test";
  o.settle_ns = 0;
  return o;
}

Op WaitOp(const SignalPtr& s, Cond cond, uint64_t v) {
  Op op;
  op.name = "wait";
  op.zero_time = true;
  op.waits.push_back({s, cond, v});
  return op;
}

Op SignalOpOf(const SignalPtr& s, SignalOp kind, uint64_t v,
              const Domain* status_from = nullptr) {
  Op op;
  op.name = "signal";
  op.signals.push_back({s, kind, v, status_from});
  return op;
}

TEST(EngineTest, SignalOrdersTwoQueues) {
  Engine engine(FastOptions());
  Domain domain;
  Queue* a = engine.CreateQueue();
  Queue* b = engine.CreateQueue();
  void* p = nullptr;
  ASSERT_EQ(engine.Allocate(64, MemoryKind::kDevice, 256, &p), Error::kOk);
  auto dst = reinterpret_cast<uintptr_t>(p);
  SignalPtr s = engine.CreateSignal(0);
  // b waits for a's fill before it overwrites the first half: wait before
  // signal (b's wait is enqueued first).
  ASSERT_EQ(engine.Enqueue(b, WaitOp(s, Cond::kGe, 1)), Error::kOk);
  Op fill_b;
  fill_b.name = "fill";
  fill_b.run = engine.FillWork(&domain, dst, 0x22, 1, 32);
  fill_b.write = Range::Of(dst, 32);
  ASSERT_EQ(engine.Enqueue(b, std::move(fill_b)), Error::kOk);
  Op fill_a;
  fill_a.name = "fill";
  fill_a.run = engine.FillWork(&domain, dst, 0x11, 1, 64);
  fill_a.write = Range::Of(dst, 64);
  ASSERT_EQ(engine.Enqueue(a, std::move(fill_a)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(a, SignalOpOf(s, SignalOp::kMax, 1, &domain)),
            Error::kOk);
  EXPECT_EQ(engine.WaitSignal(s, Cond::kGe, 1), Error::kOk);
  engine.Synchronize(b);
  auto* bytes = static_cast<uint8_t*>(p);
  EXPECT_EQ(bytes[0], 0x22);
  EXPECT_EQ(bytes[31], 0x22);
  EXPECT_EQ(bytes[32], 0x11);
  EXPECT_EQ(engine.counters().races, 0u);
  EXPECT_EQ(engine.counters().work_done, 2u);
  engine.DestroyQueue(a);
  engine.DestroyQueue(b);
}

TEST(EngineTest, WaitConditions) {
  Engine engine(FastOptions());
  Queue* q = engine.CreateQueue();
  SignalPtr s = engine.CreateSignal(5);
  SignalPtr done = engine.CreateSignal(0);
  // Each wait holds until the host moves the signal; the ops after it count.
  ASSERT_EQ(engine.Enqueue(q, WaitOp(s, Cond::kLt, 5)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, SignalOpOf(done, SignalOp::kAdd, 1)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, WaitOp(s, Cond::kEq, 9)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, SignalOpOf(done, SignalOp::kAdd, 1)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, WaitOp(s, Cond::kNe, 9)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, SignalOpOf(done, SignalOp::kAdd, 1)), Error::kOk);
  EXPECT_EQ(engine.SignalValue(done), 0u);
  engine.UpdateSignal(s, SignalOp::kSub, 1);  // 4 < 5
  engine.WaitSignal(done, Cond::kEq, 1);
  engine.UpdateSignal(s, SignalOp::kSet, 8);  // not 9: still waits
  engine.UpdateSignal(s, SignalOp::kAdd, 1);  // 9
  engine.WaitSignal(done, Cond::kEq, 2);
  EXPECT_EQ(engine.SignalValue(done), 2u);
  engine.UpdateSignal(s, SignalOp::kMax, 12);
  engine.Synchronize(q);
  EXPECT_EQ(engine.SignalValue(done), 3u);
  EXPECT_TRUE(Holds(3, Cond::kGe, 3));
  EXPECT_FALSE(Holds(3, Cond::kLt, 3));
  engine.DestroyQueue(q);
}

// Two racing queues of copies behind one gate: the trace hash of a run.
uint64_t RacingRun(uint64_t seed, uint64_t* races = nullptr) {
  Engine engine(FastOptions());
  EXPECT_EQ(engine.ResetSchedule(seed), Error::kOk);
  Domain domain;
  std::vector<Queue*> queues = {engine.CreateQueue(), engine.CreateQueue(),
                                engine.CreateQueue()};
  SignalPtr gate = engine.CreateSignal(0);
  std::vector<void*> buffers(queues.size());
  for (size_t i = 0; i < queues.size(); ++i) {
    EXPECT_EQ(engine.Allocate(4096, MemoryKind::kDevice, 256, &buffers[i]),
              Error::kOk);
    EXPECT_EQ(engine.Enqueue(queues[i], WaitOp(gate, Cond::kGe, 1)),
              Error::kOk);
    for (int k = 0; k < 8; ++k) {
      Op op;
      op.name = "fill";
      op.bytes = 4096;
      auto p = reinterpret_cast<uintptr_t>(buffers[i]);
      op.run = engine.FillWork(&domain, p, k, 4, 1024);
      op.write = Range::Of(p, 4096);
      EXPECT_EQ(engine.Enqueue(queues[i], std::move(op)), Error::kOk);
    }
  }
  engine.UpdateSignal(gate, SignalOp::kSet, 1);
  for (Queue* q : queues) engine.DestroyQueue(q);
  if (races) *races = engine.counters().races;
  EXPECT_EQ(engine.trace_length(), queues.size() * 9);
  EXPECT_FALSE(domain.failed());
  return engine.trace_hash();
}

TEST(EngineTest, SameSeedSameTraceDifferentSeedsDiffer) {
  for (uint64_t seed : {0ull, 1ull, 77ull}) {
    uint64_t races = 1;
    uint64_t first = RacingRun(seed, &races);
    EXPECT_EQ(races, 0u) << "disjoint buffers, seed " << seed;
    EXPECT_EQ(RacingRun(seed), first) << "seed " << seed << " did not replay";
    EXPECT_NE(RacingRun(seed + 1000), first)
        << "seeds " << seed << " and " << seed + 1000 << " gave one trace";
  }
}

TEST(EngineTest, RaceIsReported) {
  Engine engine(FastOptions());
  Domain domain;
  Queue* a = engine.CreateQueue();
  Queue* b = engine.CreateQueue();
  void* p = nullptr;
  ASSERT_EQ(engine.Allocate(256, MemoryKind::kDevice, 256, &p), Error::kOk);
  auto base = reinterpret_cast<uintptr_t>(p);
  SignalPtr gate = engine.CreateSignal(0);
  for (Queue* q : {a, b}) {
    ASSERT_EQ(engine.Enqueue(q, WaitOp(gate, Cond::kGe, 1)), Error::kOk);
    Op op;
    op.name = "fill";
    op.run = engine.FillWork(&domain, base + 64, 7, 1, 64);
    op.write = Range::Of(base + 64, 64);
    ASSERT_EQ(engine.Enqueue(q, std::move(op)), Error::kOk);
  }
  engine.UpdateSignal(gate, SignalOp::kSet, 1);
  engine.Synchronize(a);
  engine.Synchronize(b);
  EXPECT_EQ(engine.counters().races, 1u);  // found once, by the later start
  engine.DestroyQueue(a);
  engine.DestroyQueue(b);
}

// The race checker's self-test: every hazard class (RAW, WAR, WAW) between
// every pair of op shapes that touch memory (a copy's source and
// destination, a fill, a kernel's read-only and read-write bindings), on
// two queues with nothing ordering them, is one race; the same pair
// ordered by a signal, two reads, or disjoint ranges, none. A checker blind
// to any class fails here, not in a user's program.
TEST(EngineTest, RaceCheckerSeesEveryHazardClassAndNothingElse) {
  Engine engine(FastOptions());
  Queue* qa = engine.CreateQueue();
  Queue* qb = engine.CreateQueue();
  void* p = nullptr;
  ASSERT_EQ(engine.Allocate(4096, MemoryKind::kDevice, 256, &p), Error::kOk);
  const auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t x = base, other_a = base + 1024, other_b = base + 2048;
  enum Shape { kCopyDst, kCopySrc, kFill, kKernelRw, kKernelRo };
  const char* names[] = {"copy-dst", "copy-src", "fill", "kernel-rw",
                         "kernel-ro"};
  // `at`: the shared range's start; `other`: a private range.
  auto make = [&](Shape shape, uintptr_t at, uintptr_t other) {
    Op op;
    op.name = names[shape];
    op.extra_ns = 1'000'000;  // long enough to overlap
    switch (shape) {
      case kCopyDst:
        op.write = Range::Of(at, 64);
        op.read = Range::Of(other, 64);
        break;
      case kCopySrc:
        op.read = Range::Of(at, 64);
        op.write = Range::Of(other, 64);
        break;
      case kFill:
        op.write = Range::Of(at, 64);
        break;
      case kKernelRw:
        op.more_reads = {Range::Of(other, 64)};
        op.more_writes = {Range::Of(at, 64)};
        break;
      case kKernelRo:
        op.more_reads = {Range::Of(at, 64)};
        op.more_writes = {Range::Of(other, 64)};
        break;
    }
    return op;
  };
  auto writes = [](Shape s) { return s != kCopySrc && s != kKernelRo; };
  // Races found when `first` (queue a) and `second` (queue b) run.
  auto run = [&](Shape first, Shape second, bool ordered, uintptr_t second_at) {
    const uint64_t before = engine.counters().races;
    SignalPtr gate = engine.CreateSignal(0), done = engine.CreateSignal(0);
    EXPECT_EQ(engine.Enqueue(qa, WaitOp(gate, Cond::kGe, 1)), Error::kOk);
    Op a = make(first, x, other_a);
    a.signals.push_back({done, SignalOp::kSet, 1});
    EXPECT_EQ(engine.Enqueue(qa, std::move(a)), Error::kOk);
    EXPECT_EQ(engine.Enqueue(qb, WaitOp(ordered ? done : gate, Cond::kGe, 1)),
              Error::kOk);
    EXPECT_EQ(engine.Enqueue(qb, make(second, second_at, other_b)), Error::kOk);
    engine.UpdateSignal(gate, SignalOp::kSet, 1);
    engine.Synchronize(qa);
    engine.Synchronize(qb);
    return engine.counters().races - before;
  };
  for (Shape first : {kCopyDst, kCopySrc, kFill, kKernelRw, kKernelRo}) {
    for (Shape second : {kCopyDst, kCopySrc, kFill, kKernelRw, kKernelRo}) {
      SCOPED_TRACE(std::string(names[first]) + " then " + names[second]);
      const bool hazard = writes(first) || writes(second);
      EXPECT_EQ(run(first, second, /*ordered=*/false, x + 32), hazard ? 1u : 0u)
          << (hazard ? "an unordered hazard was not reported"
                     : "two reads are no race");
      EXPECT_EQ(run(first, second, /*ordered=*/true, x + 32), 0u)
          << "ordered by a signal";
      EXPECT_EQ(run(first, second, /*ordered=*/false, x + 64), 0u)
          << "adjacent, not overlapping";
    }
  }
  engine.DestroyQueue(qa);
  engine.DestroyQueue(qb);
}

// An op with several ranges (a dispatch's bindings): each one is checked,
// and ranges that only meet other reads are not a race.
TEST(EngineTest, RaceOnAFurtherRangeIsReported) {
  Engine engine(FastOptions());
  Queue* a = engine.CreateQueue();
  Queue* b = engine.CreateQueue();
  void* p = nullptr;
  ASSERT_EQ(engine.Allocate(1024, MemoryKind::kDevice, 256, &p), Error::kOk);
  auto base = reinterpret_cast<uintptr_t>(p);
  auto run = [&](std::vector<Range> a_writes, std::vector<Range> a_reads,
                 std::vector<Range> b_writes) -> uint64_t {
    const uint64_t before = engine.counters().races;
    SignalPtr gate = engine.CreateSignal(0);
    for (Queue* q : {a, b}) {
      EXPECT_EQ(engine.Enqueue(q, WaitOp(gate, Cond::kGe, 1)), Error::kOk);
      Op op;
      op.name = "kernel";
      // Both start at the same virtual time: long enough to overlap.
      op.extra_ns = 1'000'000;
      op.more_writes = q == a ? a_writes : b_writes;
      if (q == a) op.more_reads = a_reads;
      EXPECT_EQ(engine.Enqueue(q, std::move(op)), Error::kOk);
    }
    engine.UpdateSignal(gate, SignalOp::kSet, 1);
    engine.Synchronize(a);
    engine.Synchronize(b);
    return engine.counters().races - before;
  };
  // The second binding of `a` meets `b`'s write.
  EXPECT_EQ(run({Range::Of(base, 64), Range::Of(base + 512, 64)}, {},
                {Range::Of(base + 540, 8)}),
            1u);
  // A read binding of `a` meets `b`'s write.
  EXPECT_EQ(run({Range::Of(base, 64)}, {Range::Of(base + 256, 64)},
                {Range::Of(base + 300, 4)}),
            1u);
  // Disjoint.
  EXPECT_EQ(run({Range::Of(base, 64), Range::Of(base + 512, 64)},
                {Range::Of(base + 256, 64)}, {Range::Of(base + 128, 64)}),
            0u);
  engine.DestroyQueue(a);
  engine.DestroyQueue(b);
}

// Ranges beyond `write` and `read` (a kernel's pointer arguments) race
// too: a's second extra write overlaps b's extra read in round 0; in round
// 1 every range is apart.
TEST(EngineTest, MoreRangesRace) {
  Engine engine(FastOptions());
  Queue* a = engine.CreateQueue();
  Queue* b = engine.CreateQueue();
  SignalPtr gate = engine.CreateSignal(0);
  auto ranged = [](uintptr_t first, uintptr_t write, uintptr_t read) {
    Op op;
    op.name = "kernel";
    op.more_writes = {Range::Of(first, 4), Range::Of(write, 8)};
    op.more_reads = {Range::Of(read, 8)};
    return op;
  };
  for (int round = 0; round < 2; ++round) {
    const uint64_t before = engine.counters().races;
    for (Queue* q : {a, b}) {
      ASSERT_EQ(engine.Enqueue(q, WaitOp(gate, Cond::kGe, round + 1)),
                Error::kOk);
    }
    const uintptr_t shift = round == 0 ? 0 : 0x100;
    ASSERT_EQ(engine.Enqueue(a, ranged(0x1000, 0x2000, 0x3000)), Error::kOk);
    ASSERT_EQ(engine.Enqueue(b, ranged(0x1010, 0x4000, 0x2004 + shift)),
              Error::kOk);
    engine.UpdateSignal(gate, SignalOp::kSet, round + 1);
    engine.Synchronize(a);
    engine.Synchronize(b);
    EXPECT_EQ(engine.counters().races - before, round == 0 ? 1u : 0u)
        << "round " << round;
  }
  engine.DestroyQueue(a);
  engine.DestroyQueue(b);
}

// wait_any (an OR barrier) and masked, signed waits (HSA BARRIER_VALUE).
TEST(EngineTest, AnyWaitsAndMaskedSignedWaits) {
  Wait w;
  w.cond = Cond::kEq;
  w.value = 0x56;
  w.mask = 0xff;
  EXPECT_TRUE(Holds(w, 0x1256));
  EXPECT_FALSE(Holds(w, 0x1257));
  w.cond = Cond::kLt;
  w.value = 0;
  w.mask = ~uint64_t{0};
  EXPECT_FALSE(Holds(w, static_cast<uint64_t>(-2)));  // unsigned
  w.is_signed = true;
  EXPECT_TRUE(Holds(w, static_cast<uint64_t>(-2)));
  w.cond = Cond::kGe;
  EXPECT_FALSE(Holds(w, static_cast<uint64_t>(-2)));

  Engine engine(FastOptions());
  Queue* q = engine.CreateQueue();
  SignalPtr x = engine.CreateSignal(1), y = engine.CreateSignal(1);
  SignalPtr done = engine.CreateSignal(0);
  Op any;
  any.name = "or";
  any.zero_time = true;
  any.wait_any = true;
  any.waits = {{x, Cond::kEq, 0}, {y, Cond::kEq, 0}};
  ASSERT_EQ(engine.Enqueue(q, std::move(any)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, SignalOpOf(done, SignalOp::kSet, 1)), Error::kOk);
  Op none;  // wait_any with no waits: does not wait
  none.wait_any = true;
  none.zero_time = true;
  ASSERT_EQ(engine.Enqueue(q, std::move(none)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(q, SignalOpOf(done, SignalOp::kSet, 2)), Error::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(engine.SignalValue(done), 0u) << "x = y = 1: still waits";
  engine.UpdateSignal(y, SignalOp::kSet, 0);
  engine.Synchronize(q);
  EXPECT_EQ(engine.SignalValue(done), 2u);
  EXPECT_EQ(engine.SignalValue(x), 1u);
  engine.DestroyQueue(q);
}

// lose_device_at needs a skin's handler; with one, the first step at or
// past the time runs it once, before that step's work, and the loss stays.
TEST(EngineTest, DeviceLossRunsTheHandlerOnce) {
  Engine engine(FastOptions());
  FaultPlan lose;
  lose.lose_device_at = 1;
  std::string error;
  EXPECT_FALSE(engine.SetFaults(lose, &error));
  EXPECT_NE(error.find("lose_device_at"), std::string::npos) << error;
  int calls = 0;
  bool work_ran_before_loss = false;
  engine.SetDeviceLossHandler([&] { ++calls; });
  ASSERT_TRUE(engine.SetFaults(lose));
  Queue* q = engine.CreateQueue();
  for (int i = 0; i < 3; ++i) {
    Op op;
    op.name = "work";
    op.run = [&] {
      if (calls == 0) work_ran_before_loss = true;
    };
    ASSERT_EQ(engine.Enqueue(q, std::move(op)), Error::kOk);
  }
  engine.Synchronize(q);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(work_ran_before_loss);
  EXPECT_TRUE(engine.device_lost());
  EXPECT_EQ(engine.trace_length(), 4u);  // 3 ops and the loss
  ASSERT_TRUE(engine.SetFaults(FaultPlan()));
  EXPECT_TRUE(engine.device_lost()) << "a lost device stays lost";
  engine.DestroyQueue(q);
}

TEST(EngineTest, FaultPlanFires) {
  Engine engine(FastOptions());
  FaultPlan plan;
  std::string error;
  ASSERT_TRUE(FaultPlan::Parse("fail_alloc=2,op=3", &plan, &error)) << error;
  EXPECT_EQ(plan.fail_alloc, 2u);
  EXPECT_EQ(plan.fail_op, 3u);  // `op` is the older alias
  ASSERT_TRUE(engine.SetFaults(plan));
  void* p = nullptr;
  EXPECT_EQ(engine.Allocate(64, MemoryKind::kDevice, 256, &p), Error::kOk);
  void* q = nullptr;
  EXPECT_EQ(engine.Allocate(64, MemoryKind::kDevice, 256, &q),
            Error::kOutOfMemory);
  EXPECT_EQ(q, nullptr);
  Domain domain;
  Queue* queue = engine.CreateQueue();
  auto base = reinterpret_cast<uintptr_t>(p);
  SignalPtr s = engine.CreateSignal(0);
  for (int i = 0; i < 4; ++i) {
    Op op;
    op.name = "fill";
    op.run = engine.FillWork(&domain, base, i, 1, 64);
    ASSERT_EQ(engine.Enqueue(queue, std::move(op)), Error::kOk);
  }
  ASSERT_EQ(engine.Enqueue(queue, SignalOpOf(s, SignalOp::kSet, 1, &domain)),
            Error::kOk);
  Error status = engine.WaitSignal(s, Cond::kGe, 1);
  EXPECT_EQ(status, Error::kLaunchFailed);
  EXPECT_EQ(domain.error(), Error::kLaunchFailed);
  EXPECT_EQ(static_cast<uint8_t*>(p)[0], 1);  // the 3rd and 4th were skipped
  EXPECT_EQ(engine.counters().work_done, 2u);
  // Malformed plans and faults the engine does not model are refused.
  EXPECT_FALSE(FaultPlan::Parse("fail_alloc=x", &plan, &error));
  EXPECT_FALSE(FaultPlan::Parse("op_ppm=1000001", &plan, &error));
  EXPECT_FALSE(FaultPlan::Parse("nonsense=1", &plan, &error));
  FaultPlan lose;
  lose.lose_device_at = 5;
  EXPECT_FALSE(engine.SetFaults(lose));
  engine.DestroyQueue(queue);
}

TEST(EngineTest, RangesAndUseAfterFree) {
  Engine engine(FastOptions());
  Queue* queue = engine.CreateQueue();
  void* p = nullptr;
  ASSERT_EQ(engine.Allocate(100, MemoryKind::kDevice, 256, &p), Error::kOk);
  auto base = reinterpret_cast<uintptr_t>(p);
  EXPECT_EQ(static_cast<uint8_t*>(p)[99], 0xCD);
  Allocation a;
  ASSERT_TRUE(engine.FindAllocation(base + 50, &a));
  EXPECT_EQ(a.base, base);
  EXPECT_EQ(a.size, 100u);
  EXPECT_EQ(engine.Free(base, /*host=*/true), Error::kInvalidValue);
  {
    Domain domain;  // past the end
    Op op;
    op.run = engine.FillWork(&domain, base + 90, 0, 1, 20);
    engine.Enqueue(queue, std::move(op));
    engine.Synchronize(queue);
    EXPECT_EQ(domain.error(), Error::kIllegalAddress);
  }
  // The boundary, byte exact: up to the last byte is fine, one past is not
  // (fills and copies alike).
  auto run = [&](Work work) {
    Op op;
    op.run = std::move(work);
    engine.Enqueue(queue, std::move(op));
    engine.Synchronize(queue);
  };
  {
    Domain domain;
    run(engine.FillWork(&domain, base + 90, 0, 1, 10));
    EXPECT_EQ(domain.error(), Error::kOk) << "a fill up to the last byte";
    run(engine.CopyWork(&domain, base, base + 50, 50));
    EXPECT_EQ(domain.error(), Error::kOk) << "a copy up to the last byte";
  }
  {
    Domain domain;
    run(engine.FillWork(&domain, base + 90, 0, 1, 11));
    EXPECT_EQ(domain.error(), Error::kIllegalAddress) << "one byte past";
  }
  {
    Domain domain;
    run(engine.CopyWork(&domain, base, base + 50, 51));
    EXPECT_EQ(domain.error(), Error::kIllegalAddress)
        << "a copy reading one past";
  }
  ASSERT_EQ(engine.Free(base, /*host=*/false), Error::kOk);
  EXPECT_FALSE(engine.FindAllocation(base, &a));
  {
    Domain domain;  // after the free: quarantined, reported
    Op op;
    op.run = engine.FillWork(&domain, base, 0, 1, 10);
    engine.Enqueue(queue, std::move(op));
    engine.Synchronize(queue);
    EXPECT_EQ(domain.error(), Error::kIllegalAddress);
  }
  std::vector<char> host(64);
  auto h = reinterpret_cast<uintptr_t>(host.data());
  EXPECT_EQ(engine.Register(h, 64), Error::kOk);
  EXPECT_EQ(engine.Register(h + 8, 8), Error::kAlreadyRegistered);
  EXPECT_EQ(engine.Unregister(h), Error::kOk);
  EXPECT_EQ(engine.Unregister(h), Error::kNotRegistered);
  engine.DestroyQueue(queue);
}

// A native kernel: out[i] = in[i] + constant for 4 invocations per
// workgroup; reports a fault for an access past a binding.
void AddKernel(hal_sim_dispatch_state* s) {
  for (uint64_t wg = s->workgroup_begin; wg < s->workgroup_end; ++wg) {
    for (uint32_t i = 0; i < 4; ++i) {
      uint64_t offset = (wg * 4 + i) * 4;
      for (uint32_t b = 0; b < 2; ++b) {
        if (offset + 4 > s->binding_lengths[b]) {
          if (s->fault == HAL_SIM_FAULT_NONE) {
            s->fault = HAL_SIM_FAULT_READ_OUT_OF_BOUNDS;
            s->fault_binding = b;
            s->fault_offset = offset;
            s->fault_length = 4;
          }
          return;
        }
      }
      uint32_t v;
      std::memcpy(&v, s->binding_data[0] + offset, 4);
      v += s->constants[0];
      std::memcpy(s->binding_data[1] + offset, &v, 4);
    }
  }
}

TEST(EngineTest, KernelRunsWithPerBindingBounds) {
  Engine engine(FastOptions());
  static const hal_sim_kernel_info kInfo = {
      HAL_SIM_KERNEL_ABI_VERSION, 2, 1, {4, 1, 1}};
  Kernel kernel{"add", &AddKernel, &kInfo};
  Queue* queue = engine.CreateQueue();
  void* in = nullptr;
  void* out = nullptr;
  ASSERT_EQ(engine.Allocate(32, MemoryKind::kDevice, 256, &in), Error::kOk);
  ASSERT_EQ(engine.Allocate(32, MemoryKind::kDevice, 256, &out), Error::kOk);
  for (uint32_t i = 0; i < 8; ++i) static_cast<uint32_t*>(in)[i] = i;
  auto pin = reinterpret_cast<uintptr_t>(in);
  auto pout = reinterpret_cast<uintptr_t>(out);
  Domain ok;
  const uint32_t grid2[3] = {2, 1, 1};
  Op op;
  op.name = "kernel";
  op.run = engine.KernelWork(&ok, &kernel, grid2, {pin, pout}, {100});
  engine.Enqueue(queue, std::move(op));
  engine.Synchronize(queue);
  EXPECT_FALSE(ok.failed());
  EXPECT_EQ(static_cast<uint32_t*>(out)[7], 107u);
  EXPECT_EQ(engine.counters().kernels_run, 1u);
  // Three workgroups read 48 bytes of a 32-byte binding.
  Domain bad;
  const uint32_t grid3[3] = {3, 1, 1};
  Op over;
  over.run = engine.KernelWork(&bad, &kernel, grid3, {pin, pout}, {1});
  engine.Enqueue(queue, std::move(over));
  engine.Synchronize(queue);
  EXPECT_EQ(bad.error(), Error::kIllegalAddress);
  EXPECT_EQ(engine.counters().kernels_run, 1u);
  // A binding that starts inside its allocation reaches only what is left
  // of it: two workgroups (32 bytes) from 16 bytes in overrun by 16.
  Domain offset;
  Op from_middle;
  from_middle.run =
      engine.KernelWork(&offset, &kernel, grid2, {pin + 16, pout}, {1});
  engine.Enqueue(queue, std::move(from_middle));
  engine.Synchronize(queue);
  EXPECT_EQ(offset.error(), Error::kIllegalAddress)
      << "a binding's length counts from its pointer, not the allocation's "
         "base";
  // More workgroups than the simulator runs in one launch (a garbage
  // indirect count): refused before any runs, not a near-endless loop.
  Domain huge;
  const uint32_t grid_huge[3] = {65535, 65535, 1};
  Op too_big;
  too_big.run = engine.KernelWork(&huge, &kernel, grid_huge, {pin, pout}, {1});
  engine.Enqueue(queue, std::move(too_big));
  engine.Synchronize(queue);
  EXPECT_EQ(huge.error(), Error::kLaunchFailed);
  EXPECT_EQ(engine.counters().kernels_run, 1u);
  engine.DestroyQueue(queue);
}

TEST(EngineTest, LaunchParamsFollowTheKernelAbi) {
  static const hal_sim_kernel_info kInfo = {
      HAL_SIM_KERNEL_ABI_VERSION, 2, 1, {4, 1, 1}};
  Kernel kernel{"add", &AddKernel, &kInfo};
  EXPECT_TRUE(SignatureMatches(kernel, {8, 8, 4}));
  EXPECT_FALSE(SignatureMatches(kernel, {8, 4, 4}));  // a constant too soon
  EXPECT_FALSE(SignatureMatches(kernel, {8, 8}));     // one missing
  uint64_t a = 0x1000, b = 0x2000;
  uint32_t c = 77;
  void* params[] = {&a, &b, &c};
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  ReadLaunchParams(kernel, params, &pointers, &constants);
  EXPECT_EQ(pointers, (std::vector<uintptr_t>{0x1000, 0x2000}));
  EXPECT_EQ(constants, (std::vector<uint32_t>{77}));
}

TEST(EngineTest, GraphOrderIsTopological) {
  // a -> c, b -> c, c -> d; e free.
  Graph graph;
  auto* a = graph.AddNode({}, nullptr, false);
  auto* b = graph.AddNode({}, nullptr, false);
  auto* c = graph.AddNode({a, b}, nullptr, false);
  auto* d = graph.AddNode({c}, nullptr, false);
  graph.AddNode({}, nullptr, false);
  EXPECT_EQ(graph.AddNode({a, a}, nullptr, false), nullptr);  // duplicate
  Graph other;
  EXPECT_EQ(other.AddNode({a}, nullptr, false), nullptr);  // foreign
  (void)d;
  // Without a seed: the ready node added last first.
  EXPECT_EQ(graph.Order(), (std::vector<size_t>{4, 1, 0, 2, 3}));
  auto valid = [](const std::vector<size_t>& order) {
    std::vector<size_t> pos(order.size());
    for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    return order.size() == 5 && pos[0] < pos[2] && pos[1] < pos[2] &&
           pos[2] < pos[3];
  };
  bool differs = false;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    SimRandom r1(seed), r2(seed);
    std::vector<size_t> order = graph.Order(&r1);
    EXPECT_TRUE(valid(order)) << "seed " << seed;
    EXPECT_EQ(graph.Order(&r2), order) << "seed " << seed;
    differs = differs || order != graph.Order();
  }
  EXPECT_TRUE(differs) << "no seed chose another order";
}

TEST(EngineTest, GraphLaunchesRunInOrderAcrossQueues) {
  Engine engine(FastOptions());
  Graph graph;
  std::vector<int> log;
  auto* first = graph.AddNode(
      {}, [&] { log.push_back(1); }, false);
  graph.AddNode({first}, Engine::AsHostCallback([&] {
                  log.push_back(Engine::InHostCallback() ? 2 : -2);
                }),
                true);
  GraphExec exec(engine, graph);
  EXPECT_TRUE(exec.has_host_nodes());
  Queue* a = engine.CreateQueue();
  Queue* b = engine.CreateQueue();
  ASSERT_EQ(exec.Launch(a), Error::kOk);
  ASSERT_EQ(exec.Launch(b), Error::kOk);
  ASSERT_EQ(exec.Launch(a), Error::kOk);
  engine.Synchronize(a);
  engine.Synchronize(b);
  EXPECT_EQ(log, (std::vector<int>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(engine.counters().graphs_run, 3u);
  engine.DestroyQueue(a);
  engine.DestroyQueue(b);
}

// Host threads enqueue, signal and wait at once (the engine is shared by
// every thread of a process): run under TSan in the tsan preset.
TEST(EngineTest, ConcurrentHostThreads) {
  Engine engine(FastOptions());
  constexpr int kThreads = 4, kOps = 50;
  SignalPtr done = engine.CreateSignal(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&engine, &done, t] {
      Engine::HostCall call(engine);
      Domain domain;
      Queue* queue = engine.CreateQueue();
      void* p = nullptr;
      ASSERT_EQ(engine.Allocate(256, MemoryKind::kDevice, 256, &p), Error::kOk);
      for (int i = 0; i < kOps; ++i) {
        Op fill;
        fill.name = "fill";
        fill.run = engine.FillWork(&domain, reinterpret_cast<uintptr_t>(p),
                                   t * 1000 + i, 4, 64);
        ASSERT_EQ(engine.Enqueue(queue, std::move(fill)), Error::kOk);
        ASSERT_EQ(engine.Enqueue(queue, SignalOpOf(done, SignalOp::kAdd, 1)),
                  Error::kOk);
      }
      // Everyone's work, not only this thread's.
      engine.WaitSignal(done, Cond::kGe, kThreads * kOps);
      EXPECT_EQ(static_cast<uint32_t*>(p)[63], uint32_t(t * 1000 + kOps - 1));
      EXPECT_EQ(engine.Free(reinterpret_cast<uintptr_t>(p), false), Error::kOk);
      engine.DestroyQueue(queue);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(engine.SignalValue(done), uint64_t{kThreads * kOps});
  EXPECT_EQ(engine.counters().work_done, uint64_t{kThreads * kOps});
  EXPECT_EQ(engine.counters().races, 0u);
}

// The settle rule waits for a host thread that a step woke until it is
// back inside a call or blocked, however long it runs in between (a Level
// Zero driver's host-function thread: wait for A, run the function, signal
// B). Without that, the device would step on while the thread runs and the
// trace would depend on the OS.
TEST(EngineTest, SettleWaitsForAWokenHostThreadToBlockAgain) {
  Options o;
  o.log_prefix = "engine_test";
  o.settle_ns = 200'000;
  Engine engine(o);
  Queue* device = engine.CreateQueue();
  Queue* busy = engine.CreateQueue();
  SignalPtr gate = engine.CreateSignal(0);
  SignalPtr a = engine.CreateSignal(0);
  SignalPtr b = engine.CreateSignal(0);
  // `device` signals A once the host opens the gate, then waits for B;
  // `busy` has work of its own that the engine could step through
  // meanwhile.
  ASSERT_EQ(engine.Enqueue(device, WaitOp(gate, Cond::kGe, 1)), Error::kOk);
  ASSERT_EQ(engine.Enqueue(device, SignalOpOf(a, SignalOp::kSet, 1)),
            Error::kOk);
  ASSERT_EQ(engine.Enqueue(device, WaitOp(b, Cond::kGe, 1)), Error::kOk);
  for (int i = 0; i < 1000; ++i) {
    Op op;
    op.name = "work";
    ASSERT_EQ(engine.Enqueue(busy, std::move(op)), Error::kOk);
  }
  uint64_t steps_at_wake = 0, steps_after_run = 0;
  std::thread host([&] {
    {
      // One call: A cannot be signalled before this thread blocks on it,
      // so no step is in flight when it wakes.
      Engine::HostCall call(engine);
      engine.UpdateSignal(gate, SignalOp::kSet, 1);
      engine.WaitSignal(a, Cond::kGe, 1);
      steps_at_wake = engine.counters().steps;
    }
    // Runs 5 ms (25 settle windows, under the 20 ms cap) outside any call.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    volatile uint64_t spin = 0;
    while (std::chrono::steady_clock::now() < until) spin = spin + 1;
    // Inside a call before reading the counters: counters() takes the
    // engine's lock, which the engine holds while it reads the threads'
    // states, and a thread blocked on it looks quiet (the engine may then
    // step before this read).
    Engine::HostCall call(engine);
    steps_after_run = engine.counters().steps;
    engine.UpdateSignal(b, SignalOp::kSet, 1);
  });
  host.join();
  engine.Synchronize(device);
  engine.Synchronize(busy);
  EXPECT_EQ(steps_at_wake, steps_after_run)
      << "the engine stepped while a host thread it woke was running";
  EXPECT_EQ(engine.counters().unsettled_steps, 0u);
  engine.DestroyQueue(device);
  engine.DestroyQueue(busy);
}

TEST(EngineTest, HostFunctionsPauseAndResetRefusedWhileBusy) {
  Engine engine(FastOptions());
  Queue* q = engine.CreateQueue();
  engine.PauseHostFunctions(true);
  bool ran = false;
  ASSERT_EQ(
      engine.EnqueueHostFunction(q, [&] { ran = Engine::InHostCallback(); }),
      Error::kOk);
  EXPECT_EQ(engine.ResetSchedule(3), Error::kBusy);
  EXPECT_EQ(engine.counters().host_functions_run, 0u);
  engine.PauseHostFunctions(false);
  engine.Synchronize(q);
  EXPECT_TRUE(ran);
  EXPECT_FALSE(Engine::InHostCallback());
  EXPECT_EQ(engine.counters().host_functions_launched, 1u);
  EXPECT_EQ(engine.counters().host_functions_run, 1u);
  EXPECT_EQ(engine.ResetSchedule(3), Error::kOk);
  EXPECT_EQ(engine.seed(), 3u);
  EXPECT_EQ(engine.trace_length(), 0u);
  EXPECT_EQ(engine.virtual_time_ns(), 0u);
  engine.DestroyQueue(q);
}

// One step can complete what several blocked host threads wait for: every
// one of them wakes (a step that woke one would leave the others asleep
// with nothing left to wake them, a hang that only shows with two or more
// waiters).
TEST(EngineTest, OneStepWakesEveryHostThreadItReleases) {
  Engine engine(FastOptions());
  Queue* q = engine.CreateQueue();
  constexpr int kWaiters = 3;
  std::vector<SignalPtr> done;
  for (int i = 0; i < kWaiters; ++i) done.push_back(engine.CreateSignal(0));
  std::atomic<int> blocked{0}, woke{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      ++blocked;
      EXPECT_EQ(engine.WaitSignal(done[i], Cond::kGe, 1), Error::kOk);
      ++woke;
    });
  }
  while (blocked.load() < kWaiters) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The enqueue wakes everyone (nothing is done yet, so they sleep again);
  // the host function's sleep lets them; then its one step sets every
  // signal and must wake them all.
  std::vector<SignalUpdate> signals;
  for (const SignalPtr& d : done) {
    signals.push_back({d, SignalOp::kSet, 1, nullptr});
  }
  ASSERT_EQ(
      engine.EnqueueHostFunction(
          q,
          [] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
          std::move(signals)),
      Error::kOk);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (woke.load() < kWaiters &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(woke.load(), kWaiters)
      << "host threads still asleep 5 s after the step that released them";
  // Unstick any sleeper so that a failure ends instead of hanging.
  for (const SignalPtr& d : done) engine.UpdateSignal(d, SignalOp::kSet, 1);
  for (auto& t : waiters) t.join();
  engine.DestroyQueue(q);
}

// The race check inside a graph: nodes with no path of edges between them
// run at the same time on the vendor's GPU, so conflicting ranges are a
// race; a path through other nodes (or an empty node) orders them, and two
// reads never conflict.
TEST(EngineGraph, UnorderedConflictingNodesAreRacesAndPathsOrderThem) {
  Graph g;
  const Range a = Range::Of(0x1000, 64), b = Range::Of(0x2000, 64);
  auto* w1 = g.AddNode({}, nullptr, false, "fill", a, {});
  auto* r1 = g.AddNode({}, nullptr, false, "read", {}, a);      // races w1
  auto* r2 = g.AddNode({}, nullptr, false, "read", {}, a);      // races w1 only
  auto* join = g.AddNode({w1, r1, r2}, nullptr, false);         // empty node
  auto* w2 = g.AddNode({join}, nullptr, false, "copy", a, b);   // after all
  auto* w3 = g.AddNode({w2}, nullptr, false, "fill", b, {});    // ordered
  auto* w4 = g.AddNode({join}, nullptr, false, "fill", b, {});  // races w2, w3
  ASSERT_TRUE(w1 && r1 && r2 && join && w2 && w3 && w4);
  std::vector<std::string> races = g.UnorderedConflicts();
  ASSERT_EQ(races.size(), 4u);
  EXPECT_NE(races[0].find("nodes 0 (fill"), std::string::npos) << races[0];
  EXPECT_NE(races[0].find("and 1 (read"), std::string::npos) << races[0];
  EXPECT_NE(races[1].find("nodes 0 (fill"), std::string::npos) << races[1];
  EXPECT_NE(races[1].find("and 2 (read"), std::string::npos) << races[1];
  EXPECT_NE(races[2].find("nodes 4 (copy"), std::string::npos) << races[2];
  EXPECT_NE(races[2].find("and 6 (fill"), std::string::npos) << races[2];
  EXPECT_NE(races[3].find("nodes 5 (fill"), std::string::npos) << races[3];
  EXPECT_NE(races[3].find("and 6 (fill"), std::string::npos) << races[3];
  // Each launch reports them as races of the engine.
  Engine engine(FastOptions());
  Queue* q = engine.CreateQueue();
  GraphExec exec(engine, g);
  ASSERT_EQ(exec.Launch(q), Error::kOk);
  engine.Synchronize(q);
  EXPECT_EQ(engine.counters().races, 4u);
  engine.DestroyQueue(q);
}

// Kernel nodes declare their bindings (Engine::KernelBindingRanges) as
// extra written ranges; the same check covers them.
TEST(EngineGraph, KernelNodesRaceOnTheirBindings) {
  Graph g;
  const Range a = Range::Of(0x1000, 4), b = Range::Of(0x2000, 4);
  auto* k1 = g.AddNode({}, nullptr, false, "kernel", {}, {}, {a, b});
  auto* k2 = g.AddNode({}, nullptr, false, "kernel", {}, {}, {b});  // races k1
  auto* f = g.AddNode({k1, k2}, nullptr, false, "fill", a, {});  // after both
  auto* k3 = g.AddNode({k1}, nullptr, false, "kernel", {}, {}, {a});  // races f
  ASSERT_TRUE(k1 && k2 && f && k3);
  std::vector<std::string> races = g.UnorderedConflicts();
  ASSERT_EQ(races.size(), 2u);
  EXPECT_NE(races[0].find("nodes 0 (kernel [0x2000"), std::string::npos)
      << races[0];
  EXPECT_NE(races[0].find("and 1 (kernel"), std::string::npos) << races[0];
  EXPECT_NE(races[1].find("nodes 2 (fill"), std::string::npos) << races[1];
  EXPECT_NE(races[1].find("and 3 (kernel"), std::string::npos) << races[1];
}

}  // namespace
}  // namespace hal::sim::engine
