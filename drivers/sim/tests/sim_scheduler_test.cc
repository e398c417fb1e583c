// The simulator's schedulers (drivers/sim/sim_scheduler.cc): who ends an op,
// when its resources go, device loss, how far a poll runs device work, and what
// a host call may wait on (issue 11 items 6, 7, 12, 13).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "drivers/sim/tests/sim_test_util.h"
#include "hal/progress.h"
#include "hal/semaphore.h"

namespace hal::sim::testing {
namespace {

using namespace std::chrono_literals;

// Runs in both modes; the parameter is the mode's URI value.
class SimScheduler : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Uri(const std::string& extra = "") const {
    return "sim://?mode=" + GetParam() + "&queues=4&seed=7" + extra;
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, SimScheduler,
                         ::testing::Values("threaded", "deterministic"),
                         [](const auto& info) { return info.param; });

// Item 6: the last reference to an imported buffer is held by an operation.
// Its release callback calls into the device (SimTraceHash takes the device
// lock): the threaded scheduler used to destroy finished ops on its worker
// while holding that lock (a deadlock), and after WaitIdle could already
// have returned (so the release had not run yet when WaitIdle said idle).
TEST_P(SimScheduler, ReleaseCallbackMayCallIntoTheDeviceBeforeIdle) {
  Ref<Device> device = MakeDevice(Uri());
  ASSERT_TRUE(device);
  for (int round = 0; round < 20; ++round) {
    std::vector<uint8_t> memory(256, 0);
    auto released = std::make_shared<std::atomic<int>>(0);
    auto hash_ok = std::make_shared<std::atomic<bool>>(false);
    Device* raw = device.get();
    BufferParams params;
    params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
    params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
    auto buffer = device->allocator()->ImportHostAllocation(
        params, memory.data(), memory.size(), [raw, released, hash_ok] {
          hash_ok->store(SimTraceHash(raw).ok());
          released->fetch_add(1);
        });
    ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
    Ref<Semaphore> s = device->CreateSemaphore(0).value();
    SemaphorePoint signal{s.get(), 1};
    uint8_t pattern = 0x5A;
    ASSERT_TRUE(device
                    ->QueueFill(1u << (round % 4), {}, {&signal, 1},
                                buffer->get(), 0, memory.size(), &pattern, 1)
                    .ok());
    *buffer = nullptr;  // the op holds the last reference
    ASSERT_TRUE(WaitFor(s.get(), 1).ok());
    Status idle = device->WaitIdle(Timeout::After(20s));
    ASSERT_TRUE(idle.ok()) << idle.ToString();
    // Idle means every finished op is gone, its releases run.
    EXPECT_EQ(released->load(), 1) << "round " << round;
    EXPECT_TRUE(hash_ok->load()) << "round " << round;
    EXPECT_EQ(memory[0], 0x5A);
  }
}

// Item 7: after a device loss, ops still waiting are abandoned; failing
// their signals resolves the waits of later ops in the same chain, which
// used to be queued (and counted out of the in-flight count) a second
// time: WaitIdle then reported 2^64-1 ops in flight and never became idle.
TEST_P(SimScheduler, DeviceLossAbandonsPendingChainOnce) {
  for (int seed = 1; seed <= 10; ++seed) {
    Ref<Device> device =
        MakeDevice("sim://?mode=" + GetParam() +
                   "&queues=4&lose_device_at=1&seed=" + std::to_string(seed));
    ASSERT_TRUE(device);
    Ref<Semaphore> gate = device->CreateSemaphore(0).value();
    Ref<Semaphore> chain = device->CreateSemaphore(0).value();
    Ref<Semaphore> other = device->CreateSemaphore(0).value();
    Ref<Semaphore> trigger = device->CreateSemaphore(0).value();
    auto ran = std::make_shared<std::atomic<int>>(0);
    // The barrier's completion loses the device (lose_device_at=1). Nobody
    // signals chain>=1: the whole chain is still waiting then, and the
    // abandonment of each op fails the wait of the next.
    SemaphorePoint g{gate.get(), 1}, t{trigger.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&g, 1}, {&t, 1}).ok());
    for (uint64_t i = 1; i <= 16; ++i) {
      SemaphorePoint w{chain.get(), i}, sig{chain.get(), i + 1};
      SemaphorePoint o{other.get(), i};
      SemaphorePoint signals[] = {sig, o};
      ASSERT_TRUE(device
                      ->QueueHostCall(QueueAffinity{1} << (i % 4), {&w, 1},
                                      signals,
                                      [ran]() -> Status {
                                        ran->fetch_add(1);
                                        return OkStatus();
                                      })
                      .ok());
    }
    ASSERT_TRUE(gate->Signal(1).ok());
    // OK or DATA_LOSS: the threaded scheduler runs it before its clock
    // moves past the loss time, the deterministic one after.
    Status trig = WaitFor(trigger.get(), 1);
    EXPECT_TRUE(trig.ok() || trig.code() == StatusCode::kDataLoss)
        << trig.ToString();
    Status st = WaitFor(chain.get(), 17);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss)
        << "seed " << seed << ": " << st.ToString();
    Status idle = device->WaitIdle(Timeout::After(20s));
    EXPECT_TRUE(idle.ok()) << "seed " << seed << ": " << idle.ToString();
    idle = device->WaitIdle(Timeout::Immediate());
    EXPECT_TRUE(idle.ok()) << "seed " << seed << ": " << idle.ToString();
    EXPECT_EQ(ran->load(), 0) << "seed " << seed;
    EXPECT_EQ(other->Query().status().code(), StatusCode::kDataLoss);
    // The device stays usable for host work and its destruction is clean.
    EXPECT_EQ(chain->pending_timepoint_count(), 0u);
  }
}

// Issue 25 item 2: submissions racing a device loss in threaded mode. An
// admitted op is visible to the loss (AbandonAll takes it); Submit touched
// it after dropping the lock (about 5 crashes in 150 runs on a loaded
// machine). Ops that wait on a value nobody signals take exactly that path.
TEST(SimSchedulerThreaded, SubmissionsRacingDeviceLossAreSafe) {
  for (int round = 0; round < 40; ++round) {
    Ref<Device> device =
        MakeDevice("sim://?mode=threaded&queues=4&lose_device_at=1&seed=" +
                   std::to_string(round));
    ASSERT_TRUE(device);
    Ref<Semaphore> gate = device->CreateSemaphore(0).value();
    Ref<Semaphore> trigger = device->CreateSemaphore(0).value();
    Ref<Semaphore> never = device->CreateSemaphore(0).value();
    SemaphorePoint g{gate.get(), 1}, t{trigger.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&g, 1}, {&t, 1}).ok());
    std::atomic<bool> start{false};
    std::thread submitter([&] {
      while (!start.load()) std::this_thread::yield();
      for (int i = 0; i < 300; ++i) {
        SemaphorePoint w{never.get(), 1};
        // OK before the loss, DATA_LOSS after: either is fine here.
        (void)device->QueueBarrier(QueueAffinity{2} << (i % 3), {&w, 1}, {});
      }
    });
    start.store(true);
    ASSERT_TRUE(gate->Signal(1).ok());
    submitter.join();
    Status trig = WaitFor(trigger.get(), 1);
    EXPECT_TRUE(trig.ok() || trig.code() == StatusCode::kDataLoss)
        << "round " << round << ": " << trig.ToString();
    Status idle = device->WaitIdle(Timeout::After(20s));
    EXPECT_TRUE(idle.ok()) << "round " << round << ": " << idle.ToString();
  }
}

// An op retains the semaphores it waits on (the wait list it is given is
// only borrowed): the host may drop its last reference to a wait semaphore
// that nobody will signal, and destroying the device then cancels the
// op's timepoint on a live semaphore (no use after free; valgrind or ASan
// see one otherwise) and fails the op's signals with CANCELLED.
TEST_P(SimScheduler, PendingOpRetainsItsWaitSemaphores) {
  Ref<Semaphore> done;
  {
    Ref<Device> device = MakeDevice(Uri());
    ASSERT_TRUE(device);
    Ref<Semaphore> never = device->CreateSemaphore(0).value();
    done = device->CreateSemaphore(0).value();
    SemaphorePoint w{never.get(), 1}, s{done.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&w, 1}, {&s, 1}).ok());
    never.reset();
    EXPECT_EQ(device->WaitIdle(Timeout::Immediate()).code(),
              StatusCode::kDeadlineExceeded);
  }
  EXPECT_EQ(done->Query().status().code(), StatusCode::kCancelled);
}

// Item 13: a host call may wait on work of another queue; while it waits,
// only other queues' work runs (its own queue's later work waits behind it
// in every mode, as behind a worker per queue).
TEST_P(SimScheduler, HostCallWaitsRunOtherQueuesOnly) {
  for (int seed = 1; seed <= 10; ++seed) {
    Ref<Device> device = MakeDevice("sim://?mode=" + GetParam() +
                                    "&queues=4&seed=" + std::to_string(seed));
    ASSERT_TRUE(device);
    Ref<Semaphore> gate = device->CreateSemaphore(0).value();
    Ref<Semaphore> other_done = device->CreateSemaphore(0).value();
    Ref<Semaphore> same_done = device->CreateSemaphore(0).value();
    Ref<Semaphore> call_done = device->CreateSemaphore(0).value();
    auto wait_status = std::make_shared<Status>(UnknownError("not run"));
    auto same_ran_early = std::make_shared<std::atomic<bool>>(false);
    SemaphorePoint g{gate.get(), 1}, od{other_done.get(), 1},
        sd{same_done.get(), 1}, cd{call_done.get(), 1};
    Semaphore* gate_raw = gate.get();
    Semaphore* other_raw = other_done.get();
    Semaphore* same_raw = same_done.get();
    // The host call on queue 0 releases both the op on queue 1 and the op
    // behind it on queue 0, then waits for the one on queue 1.
    ASSERT_TRUE(
        device
            ->QueueHostCall(1, {}, {&cd, 1},
                            [=]() -> Status {
                              Status st = gate_raw->Signal(1);
                              if (!st.ok()) return st;
                              *wait_status =
                                  other_raw->Wait(1, Timeout::After(20s));
                              same_ran_early->store(same_raw->Reached(1));
                              return *wait_status;
                            })
            .ok());
    ASSERT_TRUE(device->QueueBarrier(2, {&g, 1}, {&od, 1}).ok());
    ASSERT_TRUE(device->QueueBarrier(1, {&g, 1}, {&sd, 1}).ok());
    ASSERT_TRUE(WaitFor(call_done.get(), 1).ok()) << "seed " << seed;
    EXPECT_TRUE(wait_status->ok())
        << "seed " << seed << ": " << wait_status->ToString();
    EXPECT_FALSE(same_ran_early->load())
        << "seed " << seed
        << ": work behind the host call on its own queue ran while it waited";
    EXPECT_TRUE(WaitFor(same_done.get(), 1).ok());
    EXPECT_TRUE(device->WaitIdle(Timeout::After(20s)).ok());
  }
}

// Item 13: with the pump re-entered by a host call's wait, the order is
// still a function of the seed.
TEST(SimSchedulerDeterministic, HostCallWaitsReplay) {
  auto run = [](uint64_t seed) {
    Ref<Device> device =
        MakeDevice("sim://?queues=4&seed=" + std::to_string(seed));
    // One semaphore per fill: fills on different queues signalling one
    // semaphore would overtake each other (which fails it, hal/device.h).
    std::vector<Ref<Semaphore>> a;
    Ref<Semaphore> b = device->CreateSemaphore(0).value();
    Ref<Buffer> buffer = HostBuffer(device.get(), 1024, 0);
    for (int i = 0; i < 4; ++i) {
      a.push_back(device->CreateSemaphore(0).value());
      Semaphore* a_raw = a.back().get();
      uint8_t pattern = static_cast<uint8_t>(i);
      SemaphorePoint sig{a_raw, 1};
      EXPECT_TRUE(device
                      ->QueueFill(QueueAffinity{1} << (1 + i % 3), {},
                                  {&sig, 1}, buffer.get(), i * 256, 256,
                                  &pattern, 1)
                      .ok());
      SemaphorePoint bsig{b.get(), static_cast<uint64_t>(i + 1)};
      EXPECT_TRUE(device
                      ->QueueHostCall(1, {}, {&bsig, 1},
                                      [a_raw]() -> Status {
                                        return a_raw->Wait(1,
                                                           Timeout::After(20s));
                                      })
                      .ok());
    }
    EXPECT_TRUE(WaitFor(b.get(), 4).ok());
    EXPECT_TRUE(device->WaitIdle(Timeout::After(20s)).ok());
    return SimTraceHash(device.get()).value();
  };
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    EXPECT_EQ(run(seed), run(seed)) << "seed " << seed;
  }
}

// Item 12: waits check their deadline between pump steps. Counts the ops
// run, not time: a poll, an expired timed wait, a poll of a multi-wait and
// a WaitIdle poll each run at most one of 100 ready fills.
TEST(SimSchedulerDeterministic, PollsAndTimedWaitsDoNotRunAllReadyWork) {
  Ref<Device> device = MakeDevice("sim://?queues=4&seed=3");
  ASSERT_TRUE(device);
  Ref<Buffer> buffer = HostBuffer(device.get(), 100 * 64, 0);
  std::vector<Ref<Semaphore>> done;
  for (int i = 0; i < 100; ++i) {
    done.push_back(device->CreateSemaphore(0).value());
    SemaphorePoint sig{done.back().get(), 1};
    uint8_t pattern = 0x77;
    ASSERT_TRUE(device
                    ->QueueFill(QueueAffinity{1} << (i % 4), {}, {&sig, 1},
                                buffer.get(), i * 64, 64, &pattern, 1)
                    .ok());
  }
  auto ran = [&] {
    int n = 0;
    for (auto& s : done) n += s->Reached(1) ? 1 : 0;
    return n;
  };
  Ref<Semaphore> host = device->CreateSemaphore(0).value();
  Ref<Semaphore> host2 = device->CreateSemaphore(0).value();
  EXPECT_EQ(host->Wait(1, Timeout::Immediate()).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LE(ran(), 1) << "a poll ran device work beyond one step";
  int before = ran();
  EXPECT_EQ(host->Wait(1, Timeout::At(Timeout::Clock::now() - 1s)).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LE(ran() - before, 1) << "an expired timed wait ran more than one op";
  before = ran();
  SemaphorePoint both[] = {{host.get(), 1}, {host2.get(), 1}};
  EXPECT_EQ(WaitSemaphores(WaitMode::kAny, both, Timeout::Immediate()).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LE(ran() - before, 1) << "a multi-wait poll ran more than one op";
  before = ran();
  EXPECT_EQ(device->WaitIdle(Timeout::Immediate()).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LE(ran() - before, 1) << "a WaitIdle poll ran more than one op";
  // Polling makes progress, one op at a time.
  for (int i = 0; i < 1000 && ran() < 100; ++i) {
    host->Wait(1, Timeout::Immediate()).IgnoreError();
  }
  EXPECT_EQ(ran(), 100);
  EXPECT_TRUE(device->WaitIdle(Timeout::After(20s)).ok());
  EXPECT_EQ(Read(buffer.get()), std::vector<uint8_t>(100 * 64, 0x77));
}

// Issue 12 (wake): waits pump only while the deterministic scheduler
// publishes runnable work (hal/progress.h, AddPumpWork), and otherwise spin
// and sleep. What it publishes must balance when ops complete, are
// abandoned at destruction, or are abandoned after a device loss: a count
// left behind would make every later wait in the process take the pumping
// path.
TEST(SimSchedulerDeterministic, PublishedPumpWorkBalances) {
  ASSERT_FALSE(HavePumpWork());
  {
    Ref<Device> device = MakeDevice("sim://?queues=4&seed=5");
    ASSERT_TRUE(device);
    Ref<Semaphore> gate = device->CreateSemaphore(0).value();
    Ref<Semaphore> done = device->CreateSemaphore(0).value();
    for (uint64_t i = 1; i <= 8; ++i) {
      SemaphorePoint sig{done.get(), i};
      ASSERT_TRUE(
          device->QueueBarrier(QueueAffinity{1} << (i % 4), {}, {&sig, 1})
              .ok());
    }
    // Ready ops out of order may overtake each other's signals: only count
    // that work is published, then run it.
    EXPECT_TRUE(HavePumpWork());
    device->WaitIdle(Timeout::After(20s)).IgnoreError();
    EXPECT_FALSE(HavePumpWork()) << "completed ops left published work";
    // Blocked ops are not runnable; once released they are, until run.
    SemaphorePoint g{gate.get(), 1};
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(device->QueueBarrier(1, {&g, 1}, {}).ok());
    }
    EXPECT_FALSE(HavePumpWork()) << "ops blocked on a wait were published";
    ASSERT_TRUE(gate->Signal(1).ok());
    EXPECT_TRUE(HavePumpWork());
    // Destroyed with released work not run and work still blocked.
    SemaphorePoint g2{gate.get(), 2};
    ASSERT_TRUE(device->QueueBarrier(1, {&g2, 1}, {}).ok());
  }
  EXPECT_FALSE(HavePumpWork()) << "destruction left published work";
  {
    Ref<Device> device = MakeDevice("sim://?queues=4&seed=5&lose_device_at=1");
    ASSERT_TRUE(device);
    Ref<Semaphore> s = device->CreateSemaphore(0).value();
    for (uint64_t i = 1; i <= 8; ++i) {
      SemaphorePoint w{s.get(), i}, sig{s.get(), i + 1};
      ASSERT_TRUE(
          device
              ->QueueBarrier(1, i == 1 ? SemaphoreList{} : SemaphoreList{&w, 1},
                             {&sig, 1})
              .ok());
    }
    device->WaitIdle(Timeout::After(20s)).IgnoreError();
    EXPECT_FALSE(HavePumpWork()) << "a device loss left published work";
  }
  EXPECT_FALSE(HavePumpWork());
}

// A waiter that sleeps (nothing runnable) while its semaphore needs an op
// that another host thread releases later: nobody else pumps in
// deterministic mode, so the sleeper must come back to run it.
TEST(SimSchedulerDeterministic, SleepingWaiterRunsWorkReleasedByAnotherThread) {
  Ref<Device> device = MakeDevice("sim://?queues=2&seed=9");
  ASSERT_TRUE(device);
  for (int round = 0; round < 20; ++round) {
    Ref<Semaphore> gate = device->CreateSemaphore(0).value();
    Ref<Semaphore> done = device->CreateSemaphore(0).value();
    SemaphorePoint g{gate.get(), 1}, d{done.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&g, 1}, {&d, 1}).ok());
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(round % 4));
      gate->Signal(1).IgnoreError();
    });
    const auto start = std::chrono::steady_clock::now();
    Status st = done->Wait(1, Timeout::After(20s));
    releaser.join();
    EXPECT_TRUE(st.ok()) << "round " << round << ": " << st.ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  }
  EXPECT_TRUE(device->WaitIdle(Timeout::After(20s)).ok());
}

}  // namespace
}  // namespace hal::sim::testing
