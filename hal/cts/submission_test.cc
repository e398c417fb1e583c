// CTS: queue submission semantics: wait-before-signal, fan-out, DAGs,
// failure propagation, host calls, affinities.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

using HalBuffer = ::hal::Buffer;

using namespace std::chrono_literals;

Bytes Range(const Bytes& b, size_t offset, size_t length) {
  return Bytes(b.begin() + offset, b.begin() + offset + length);
}

class Submission : public CtsTest {
 protected:
  // Fills `length` bytes at `offset` of `buffer` with `value` (1-byte pattern).
  Status Fill(QueueAffinity affinity, Points wait, Points signal,
              HalBuffer* buffer, DeviceSize offset, DeviceSize length,
              uint8_t value) {
    return device()->QueueFill(affinity, wait, signal, buffer, offset, length,
                               &value, 1);
  }

  // Failure propagation per queue operation kind. An upstream operation on
  // queue 0 signals `mid`; the op under test waits on `mid` on another queue
  // (when there is one) and signals `out` and `side`. The upstream fails
  // after both were submitted and flushed, in two ways (the tests run both):
  //   - kWaiting: a fill waiting on `gate`, a host-only semaphore that fails;
  //   - kIssued: a host call that blocks on `gate` and returns the gate's
  //     failure, then a fill behind it on queue 0 that signals `mid`: the
  //     driver may have issued the fill, and resolved the op's wait on it on
  //     the device, before the failure.
  // The op must not run its work, and each of its signals fails with the
  // upstream's own status (DATA_LOSS).
  enum class UpstreamKind { kWaiting, kIssued };
  struct Upstream {
    Ref<HalSemaphore> gate, mid, out, side, hop;
    Ref<HalBuffer> scratch;
    QueueAffinity downstream = 1;
    UpstreamKind kind = UpstreamKind::kWaiting;
    std::shared_ptr<std::atomic<bool>> started =
        std::make_shared<std::atomic<bool>>(false);
    // Everything was created and the upstream submitted (the tests assert
    // it: under injected faults setup may fail, and then nothing would
    // ever signal `mid`).
    bool ready = false;
    // Fails the gate when the test ends, early or not, so that an upstream
    // never waits past it.
    std::shared_ptr<FailOnExit> fail_gate;
    Points wait() const { return {{mid.get(), 1}}; }
    Points signal() const { return {{out.get(), 1}, {side.get(), 5}}; }
  };
  std::vector<UpstreamKind> UpstreamKinds() const {
    if (!HasTag(kTagHostCall)) return {UpstreamKind::kWaiting};
    return {UpstreamKind::kWaiting, UpstreamKind::kIssued};
  }
  Upstream StartUpstream(UpstreamKind kind) {
    Upstream u;
    u.gate = NewSemaphore(0);
    u.mid = NewSemaphore(0);
    u.out = NewSemaphore(0);
    u.side = NewSemaphore(0);
    u.scratch = NewHostBuffer(4, 0xEE);
    if (device()->queue_count() >= 2) u.downstream = 2;
    u.kind = kind;
    if (!u.gate || !u.mid || !u.out || !u.side || !u.scratch) return u;
    u.fail_gate = std::make_shared<FailOnExit>();
    u.fail_gate->semaphores.push_back(u.gate);
    if (kind == UpstreamKind::kWaiting) {
      Status s = Fill(1, {{u.gate.get(), 1}}, {{u.mid.get(), 1}},
                      u.scratch.get(), 0, 4, 0x01);
      CTS_EXPECT_OK(s);
      u.ready = s.ok();
      return u;
    }
    Ref<HalSemaphore> gate = u.gate;
    auto started = u.started;
    u.hop = NewSemaphore(0);
    if (!u.hop) return u;
    Status s = device()->QueueHostCall(
        1, Points{}, Points{{u.hop.get(), 1}}, [gate, started]() -> Status {
          started->store(true);
          return gate->Wait(1, Timeout::After(kCtsTimeout));
        });
    CTS_EXPECT_OK(s);
    if (!s.ok()) return u;
    // Device work behind it on the same queue: a driver may issue it (and
    // the op under test's wait on it) before the host call returns.
    s = Fill(1, {{u.hop.get(), 1}}, {{u.mid.get(), 1}}, u.scratch.get(), 0, 4,
             0x01);
    CTS_EXPECT_OK(s);
    u.ready = s.ok();
    return u;
  }
  void FailUpstreamAndCheck(const Upstream& u) {
    CTS_EXPECT_OK(device()->QueueFlush(kQueueAffinityAny));
    // The gate fails once the upstream host call runs (kIssued), from
    // another thread: the deterministic simulator runs host calls inside
    // this thread's waits.
    std::thread failer([&u] {
      for (int i = 0;
           i < 20000 && u.kind == UpstreamKind::kIssued && !u.started->load();
           ++i) {
        std::this_thread::sleep_for(1ms);
      }
      std::this_thread::sleep_for(2ms);  // let a driver issue the op
      u.gate->Fail(DataLossError("upstream failed after issue"));
    });
    // (An op's signals fail one after another: wait for each.)
    CTS_EXPECT_CODE(kDataLoss, WaitFor(u.out.get(), 1));
    CTS_EXPECT_CODE(kDataLoss, WaitFor(u.side.get(), 5));
    CTS_EXPECT_CODE(kDataLoss, WaitFor(u.mid.get(), 1));
    failer.join();
    EXPECT_TRUE(u.kind == UpstreamKind::kWaiting || u.started->load())
        << "the upstream host call never ran";
    CTS_EXPECT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
    EXPECT_EQ(ReadBack(u.scratch.get()), Bytes(4, 0xEE)) << "upstream ran";
  }
};

TEST_F(Submission, WaitBeforeSignalDoesNotBlockOtherQueues) {
  CTS_REQUIRE_QUEUES(2);
  auto buffer = NewHostBuffer(16, 0xEE);
  auto a = NewSemaphore(0), s1 = NewSemaphore(0), s2 = NewSemaphore(0),
       s3 = NewSemaphore(0);
  ASSERT_TRUE(buffer && a && s1 && s2 && s3);
  FailOnExit guard{{a}};
  CTS_ASSERT_OK(
      Fill(1, {{a.get(), 1}}, {{s1.get(), 1}}, buffer.get(), 0, 4, 0x11));
  CTS_ASSERT_OK(Fill(1, {}, {{s2.get(), 1}}, buffer.get(), 4, 4, 0x22));
  CTS_ASSERT_OK(Fill(2, {}, {{s3.get(), 1}}, buffer.get(), 8, 4, 0x33));
  // Both independent ops finish while A was never signalled.
  CTS_ASSERT_OK(WaitFor(s2.get(), 1));
  CTS_ASSERT_OK(WaitFor(s3.get(), 1));
  CTS_EXPECT_CODE(kDeadlineExceeded, s1->Wait(1, Timeout::Immediate()));
  Bytes mid = ReadBack(buffer.get());
  EXPECT_EQ(Range(mid, 0, 4), Bytes(4, 0xEE));
  EXPECT_EQ(Range(mid, 4, 4), Bytes(4, 0x22));
  EXPECT_EQ(Range(mid, 8, 4), Bytes(4, 0x33));
  CTS_ASSERT_OK(a->Signal(1));
  CTS_ASSERT_OK(WaitFor(s1.get(), 1));
  Bytes end = ReadBack(buffer.get());
  EXPECT_EQ(Range(end, 0, 4), Bytes(4, 0x11));
  EXPECT_EQ(Range(end, 12, 4), Bytes(4, 0xEE));
}

TEST_F(Submission, WaitBeforeSignalDoesNotBlockSameQueue) {
  // Operations on one queue are ordered only by their semaphores.
  auto buffer = NewHostBuffer(8, 0xEE);
  auto a = NewSemaphore(0), s1 = NewSemaphore(0), s2 = NewSemaphore(0);
  ASSERT_TRUE(buffer && a && s1 && s2);
  FailOnExit guard{{a}};
  CTS_ASSERT_OK(
      Fill(1, {{a.get(), 1}}, {{s1.get(), 1}}, buffer.get(), 0, 4, 0x11));
  CTS_ASSERT_OK(Fill(1, {}, {{s2.get(), 1}}, buffer.get(), 4, 4, 0x22));
  CTS_ASSERT_OK(WaitFor(s2.get(), 1));
  CTS_EXPECT_CODE(kDeadlineExceeded, s1->Wait(1, Timeout::Immediate()));
  CTS_ASSERT_OK(a->Signal(1));
  CTS_ASSERT_OK(WaitFor(s1.get(), 1));
  Bytes want{0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22};
  EXPECT_EQ(ReadBack(buffer.get()), want);
}

TEST_F(Submission, FanOutReleasesEightOps) {
  constexpr int kOps = 8;
  auto buffer = NewHostBuffer(kOps * 8, 0x00);
  auto gate = NewSemaphore(0);
  ASSERT_TRUE(buffer && gate);
  FailOnExit guard{{gate}};
  std::vector<Ref<HalSemaphore>> done;
  Points all;
  for (int i = 0; i < kOps; ++i) {
    done.push_back(NewSemaphore(0));
    ASSERT_TRUE(done.back());
    all.push_back({done.back().get(), 1});
    QueueAffinity affinity = QueueAffinity{1} << (i % device()->queue_count());
    CTS_ASSERT_OK(Fill(affinity, {{gate.get(), 1}}, {{done.back().get(), 1}},
                       buffer.get(), i * 8, 8, static_cast<uint8_t>(0x10 + i)));
  }
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAny, all, Timeout::After(10ms)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(kOps * 8, 0x00));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(
      WaitSemaphores(WaitMode::kAll, all, Timeout::After(kCtsTimeout)));
  Bytes got = ReadBack(buffer.get());
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(Range(got, i * 8, 8), Bytes(8, static_cast<uint8_t>(0x10 + i)))
        << i;
  }
}

TEST_F(Submission, DiamondDag) {
  // a -> {b, c} -> d, submitted in reverse order.
  auto buffer = NewHostBuffer(80, 0x00);
  auto gate = NewSemaphore(0), sa = NewSemaphore(0), sb = NewSemaphore(0),
       sc = NewSemaphore(0), sd = NewSemaphore(0);
  ASSERT_TRUE(buffer && gate && sa && sb && sc && sd);
  FailOnExit guard{{gate}};
  QueueAffinity other = device()->queue_count() > 1 ? 2 : 1;
  // d: copy [16, 48) -> [48, 80) once both b and c are done.
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{sb.get(), 1}, {sc.get(), 1}},
                                    Points{{sd.get(), 1}}, buffer.get(), 16,
                                    buffer.get(), 48, 32));
  // c: fill [32, 48) after a.
  CTS_ASSERT_OK(Fill(other, {{sa.get(), 1}}, {{sc.get(), 1}}, buffer.get(), 32,
                     16, 0x03));
  // b: copy a's [0, 16) -> [16, 32).
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{sa.get(), 1}},
                                    Points{{sb.get(), 1}}, buffer.get(), 0,
                                    buffer.get(), 16, 16));
  // a: fill [0, 16).
  CTS_ASSERT_OK(
      Fill(1, {{gate.get(), 1}}, {{sa.get(), 1}}, buffer.get(), 0, 16, 0x01));
  CTS_EXPECT_CODE(kDeadlineExceeded, sd->Wait(1, Timeout::After(10ms)));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(sd.get(), 1));
  Bytes got = ReadBack(buffer.get());
  EXPECT_EQ(Range(got, 0, 16), Bytes(16, 0x01));
  EXPECT_EQ(Range(got, 16, 16), Bytes(16, 0x01));
  EXPECT_EQ(Range(got, 32, 16), Bytes(16, 0x03));
  EXPECT_EQ(Range(got, 48, 16), Bytes(16, 0x01));
  EXPECT_EQ(Range(got, 64, 16), Bytes(16, 0x03));
}

TEST_F(Submission, ChainSubmittedInReverseOrder) {
  auto buffer = NewDeviceBuffer(32);
  auto s0 = NewSemaphore(0), s1 = NewSemaphore(0), s2 = NewSemaphore(0),
       s3 = NewSemaphore(0);
  ASSERT_TRUE(buffer && s0 && s1 && s2 && s3);
  FailOnExit guard{{s0}};
  const Bytes data{1, 2, 3, 4, 5, 6, 7, 8};
  // op3: copy [8, 16) -> [16, 24); op2: copy [0, 8) -> [8, 16); op1: update [0,
  // 8).
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{s2.get(), 1}},
                                    Points{{s3.get(), 1}}, buffer.get(), 8,
                                    buffer.get(), 16, 8));
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{s1.get(), 1}},
                                    Points{{s2.get(), 1}}, buffer.get(), 0,
                                    buffer.get(), 8, 8));
  CTS_ASSERT_OK(device()->QueueUpdate(1, Points{{s0.get(), 1}},
                                      Points{{s1.get(), 1}}, data.data(),
                                      buffer.get(), 0, 8));
  CTS_EXPECT_CODE(kDeadlineExceeded, s3->Wait(1, Timeout::After(10ms)));
  CTS_ASSERT_OK(s0->Signal(1));
  CTS_ASSERT_OK(WaitFor(s3.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get(), 16, 8), data);
  EXPECT_EQ(ReadBack(buffer.get(), 8, 8), data);
}

TEST_F(Submission, FailedWaitPropagatesThroughChain) {
  auto buffer = NewHostBuffer(12, 0xEE);
  auto w = NewSemaphore(0), s1 = NewSemaphore(0), s2 = NewSemaphore(0),
       s3 = NewSemaphore(0), side = NewSemaphore(0);
  ASSERT_TRUE(buffer && w && s1 && s2 && s3 && side);
  CTS_ASSERT_OK(Fill(1, {{w.get(), 1}}, {{s1.get(), 1}, {side.get(), 4}},
                     buffer.get(), 0, 4, 0x01));
  CTS_ASSERT_OK(
      Fill(1, {{s1.get(), 1}}, {{s2.get(), 1}}, buffer.get(), 4, 4, 0x02));
  CTS_ASSERT_OK(
      Fill(1, {{s2.get(), 1}}, {{s3.get(), 1}}, buffer.get(), 8, 4, 0x03));
  w->Fail(DataLossError("upstream data loss"));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(s3.get(), 1));
  CTS_EXPECT_CODE(kDataLoss, s1->Query());
  CTS_EXPECT_CODE(kDataLoss, s2->Query());
  CTS_EXPECT_CODE(kDataLoss, side->Query());
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(12, 0xEE)) << "a failed op ran";
}

TEST_F(Submission, FailedWaitFailsOpWithOtherWaitsPending) {
  // One failed wait is enough; the op does not wait for the others.
  auto buffer = NewHostBuffer(4, 0xEE);
  auto ok = NewSemaphore(0), bad = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && ok && bad && s);
  FailOnExit guard{{ok}};
  CTS_ASSERT_OK(Fill(1, {{ok.get(), 1}, {bad.get(), 1}}, {{s.get(), 1}},
                     buffer.get(), 0, 4, 0x01));
  bad->Fail(UnavailableError("gone"));
  CTS_EXPECT_CODE(kUnavailable, WaitFor(s.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(4, 0xEE));
}

TEST_F(Submission, HostCallRunsAfterWaits) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(gate && s);
  FailOnExit guard{{gate}};
  // Host calls own what they touch: after an early ASSERT return they may
  // still run while the fixture waits for idle.
  struct State {
    std::atomic<int> calls{0};
    std::atomic<uint64_t> seen{0};
  };
  auto state = std::make_shared<State>();
  CTS_ASSERT_OK(device()->QueueHostCall(1, Points{{gate.get(), 1}},
                                        Points{{s.get(), 1}},
                                        [state, gate]() -> Status {
                                          auto v = gate->Query();
                                          state->seen = v.ok() ? *v : 0;
                                          state->calls.fetch_add(1);
                                          return OkStatus();
                                        }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(state->calls.load(), 0) << "host call ran before its wait";
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(state->calls.load(), 1);
  EXPECT_EQ(state->seen.load(), 1u);
}

TEST_F(Submission, HostCallsFollowSemaphoreOrder) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  FailOnExit guard{{s}};
  struct State {
    std::mutex mutex;
    std::vector<int> order;
  };
  auto state = std::make_shared<State>();
  auto record = [state](int i) {
    return [state, i]() -> Status {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->order.push_back(i);
      return OkStatus();
    };
  };
  // Submitted in reverse; op i waits s=i and signals s=i+1.
  for (int i = 5; i >= 1; --i) {
    QueueAffinity affinity = QueueAffinity{1} << (i % device()->queue_count());
    uint64_t v = static_cast<uint64_t>(i);
    CTS_ASSERT_OK(device()->QueueHostCall(affinity, Points{{s.get(), v}},
                                          Points{{s.get(), v + 1}}, record(i)));
  }
  CTS_ASSERT_OK(s->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 6));
  std::lock_guard<std::mutex> lock(state->mutex);
  EXPECT_EQ(state->order, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST_F(Submission, HostCallErrorFailsSignal) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto buffer = NewHostBuffer(4, 0xEE);
  auto s = NewSemaphore(0), t = NewSemaphore(0);
  ASSERT_TRUE(buffer && s && t);
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{s.get(), 1}},
      []() -> Status { return ResourceExhaustedError("host call ran out"); }));
  CTS_ASSERT_OK(
      Fill(1, {{s.get(), 1}}, {{t.get(), 1}}, buffer.get(), 0, 4, 0x01));
  CTS_EXPECT_CODE(kResourceExhausted, WaitFor(s.get(), 1));
  CTS_EXPECT_CODE(kResourceExhausted, WaitFor(t.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(4, 0xEE));
}

TEST_F(Submission, FailedWaitSkipsHostCall) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto w = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(w && s);
  auto calls = std::make_shared<std::atomic<int>>(0);
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, Points{{w.get(), 1}}, Points{{s.get(), 1}}, [calls]() -> Status {
        calls->fetch_add(1);
        return OkStatus();
      }));
  w->Fail(DataLossError("lost"));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(s.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(calls->load(), 0);
}

TEST_F(Submission, HostCallSignalsWakeDeviceWork) {
  CTS_REQUIRE_TAG(kTagHostCall);
  // host -> device -> host -> device, each step waiting on the previous.
  auto buffer = NewHostBuffer(8, 0x00);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  FailOnExit guard{{s}};
  auto seen = std::make_shared<uint8_t>(0);
  CTS_ASSERT_OK(device()->QueueHostCall(1, Points{{s.get(), 1}},
                                        Points{{s.get(), 2}},
                                        [] { return OkStatus(); }));
  CTS_ASSERT_OK(
      Fill(1, {{s.get(), 2}}, {{s.get(), 3}}, buffer.get(), 0, 8, 0x42));
  CTS_ASSERT_OK(
      device()->QueueHostCall(1, Points{{s.get(), 3}}, Points{{s.get(), 4}},
                              [buffer, seen]() -> Status {
                                return buffer->MapRead(7, seen.get(), 1);
                              }));
  CTS_ASSERT_OK(s->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 4));
  EXPECT_EQ(*seen, 0x42);
}

TEST_F(Submission, ExecuteWithoutCommandBufferIsBarrier) {
  auto buffer = NewHostBuffer(8, 0x00);
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && gate && s);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK(
      Fill(1, {{s.get(), 1}}, {{s.get(), 2}}, buffer.get(), 0, 8, 0x77));
  CTS_ASSERT_OK(device()->QueueExecute(1, Points{{gate.get(), 1}},
                                       Points{{s.get(), 1}}, nullptr));
  CTS_EXPECT_CODE(kDeadlineExceeded, s->Wait(1, Timeout::After(10ms)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(8, 0x00));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(8, 0x77));
}

TEST_F(Submission, SignalsAndWaitsOnSeveralSemaphores) {
  auto buffer = NewHostBuffer(4, 0x00);
  auto a = NewSemaphore(0), b = NewSemaphore(10), x = NewSemaphore(0),
       y = NewSemaphore(3);
  ASSERT_TRUE(buffer && a && b && x && y);
  FailOnExit guard{{a, b}};
  CTS_ASSERT_OK(Fill(1, {{a.get(), 2}, {b.get(), 11}},
                     {{x.get(), 5}, {y.get(), 9}}, buffer.get(), 0, 4, 0x99));
  CTS_ASSERT_OK(a->Signal(2));
  CTS_EXPECT_CODE(kDeadlineExceeded, x->Wait(5, Timeout::After(10ms)));
  CTS_ASSERT_OK(b->Signal(11));
  Points both{{x.get(), 5}, {y.get(), 9}};
  CTS_ASSERT_OK(
      WaitSemaphores(WaitMode::kAll, both, Timeout::After(kCtsTimeout)));
  EXPECT_EQ(Payload(x.get()), 5u);
  EXPECT_EQ(Payload(y.get()), 9u);
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(4, 0x99));
}

TEST_F(Submission, WaitsOnReachedValuesRunAtOnce) {
  auto buffer = NewHostBuffer(4, 0x00);
  auto a = NewSemaphore(7), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && a && s);
  CTS_ASSERT_OK(
      Fill(1, {{a.get(), 3}}, {{s.get(), 1}}, buffer.get(), 0, 4, 0x21));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(4, 0x21));
}

TEST_F(Submission, InvalidAffinityIsInvalidArgument) {
  auto buffer = NewHostBuffer(4, 0x00);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  std::vector<QueueAffinity> bad = {0};
  if (device()->queue_count() < 64) {
    bad.push_back(QueueAffinity{1} << device()->queue_count());
  }
  const uint8_t p = 1;
  for (QueueAffinity affinity : bad) {
    SCOPED_TRACE("affinity " + std::to_string(affinity));
    Points signal{{s.get(), 1}};
    CTS_EXPECT_CODE(
        kInvalidArgument,
        device()->QueueFill(affinity, {}, signal, buffer.get(), 0, 4, &p, 1));
    CTS_EXPECT_CODE(kInvalidArgument,
                    device()->QueueBarrier(affinity, {}, signal));
    CTS_EXPECT_CODE(kInvalidArgument,
                    device()->QueueExecute(affinity, {}, signal, nullptr));
    CTS_EXPECT_CODE(kInvalidArgument,
                    device()->QueueHostCall(affinity, {}, signal,
                                            [] { return OkStatus(); }));
    CTS_EXPECT_CODE(kInvalidArgument, device()->QueueFlush(affinity));
    CTS_EXPECT_CODE(
        kInvalidArgument,
        device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer, affinity, 0));
  }
  EXPECT_EQ(Payload(s.get()), 0u);
  // Any affinity that includes a real queue is fine.
  CTS_ASSERT_OK(
      device()->QueueBarrier(kQueueAffinityAny, {}, Points{{s.get(), 1}}));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
}

TEST_F(Submission, NullSemaphoreIsInvalidArgument) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueBarrier(1, Points{{nullptr, 1}}, Points{{s.get(), 1}}));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueBarrier(1, {}, Points{{s.get(), 1}, {nullptr, 2}}));
  EXPECT_EQ(Payload(s.get()), 0u);
}

TEST_F(Submission, QueueFlushIsOk) {
  CTS_EXPECT_OK(device()->QueueFlush(1));
  CTS_EXPECT_OK(device()->QueueFlush(device()->queue_mask()));
  CTS_EXPECT_OK(device()->QueueFlush(kQueueAffinityAny));
}

TEST_F(Submission, InvalidQueueDispatchLeavesSignalUntouched) {
  // Dispatch itself is covered by the Dispatch area (dispatch_test.cc).
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  DispatchParams params;  // no executable
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueDispatch(1, {}, Points{{s.get(), 1}}, params));
  EXPECT_EQ(Payload(s.get()), 0u);
}

TEST_F(Submission, WaitIdleWaitsForSubmittedWork) {
  auto buffer = NewDeviceBuffer(1024);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  for (uint64_t i = 0; i < 16; ++i) {
    CTS_ASSERT_OK(Fill(QueueAffinity{1} << (i % device()->queue_count()),
                       {{s.get(), i}}, {{s.get(), i + 1}}, buffer.get(), i * 64,
                       64, static_cast<uint8_t>(i)));
  }
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(Payload(s.get()), 16u);
  Bytes got = ReadBack(buffer.get());
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(Range(got, i * 64, 64), Bytes(64, static_cast<uint8_t>(i))) << i;
  }
}

TEST_F(Submission, WaitIdleTimesOutOnBlockedWork) {
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(gate && s);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK(
      device()->QueueBarrier(1, Points{{gate.get(), 1}}, Points{{s.get(), 1}}));
  CTS_EXPECT_CODE(kDeadlineExceeded, device()->WaitIdle(Timeout::After(20ms)));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_EXPECT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(Payload(s.get()), 1u);
}

// Every thread blocked in WaitIdle wakes when the device goes idle, not only
// one of them (the others would sleep to their deadline and then report
// success late: a latency bug no byte comparison sees).
TEST_F(Submission, WaitIdleWakesEveryWaitingThread) {
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(gate && s);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK(
      device()->QueueBarrier(1, Points{{gate.get(), 1}}, Points{{s.get(), 1}}));
  constexpr int kWaiters = 3;
  std::vector<Status> got(kWaiters);
  std::vector<std::chrono::steady_clock::time_point> woke(kWaiters);
  std::atomic<int> started{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      ++started;
      got[i] = device()->WaitIdle(Timeout::After(kCtsTimeout));
      woke[i] = std::chrono::steady_clock::now();
    });
  }
  while (started.load() < kWaiters) std::this_thread::yield();
  // Give the waiters time to fall asleep; a waiter that has not yet slept
  // only makes the check weaker, never wrong.
  std::this_thread::sleep_for(50ms);
  const auto released = std::chrono::steady_clock::now();
  CTS_ASSERT_OK(gate->Signal(1));
  for (auto& t : waiters) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    CTS_EXPECT_OK(got[i]);
    EXPECT_LT(woke[i] - released, 2s) << "waiter " << i << " of " << kWaiters
                                      << " slept on after the device went idle";
  }
  EXPECT_EQ(Payload(s.get()), 1u);
}

// Issue 11 item 5: a queue wait decided by its value stays satisfied when
// the semaphore fails afterwards; a wait on a semaphore already failed at
// submission fails the operation.
TEST_F(Submission, WaitReachedBeforeFailureStaysSatisfied) {
  const QueueAffinity other = device()->queue_count() >= 2 ? 2 : 1;
  auto buffer = NewDeviceBuffer(1 << 20);
  auto s = NewSemaphore(0), t = NewSemaphore(0), g = NewSemaphore(0),
       u = NewSemaphore(0), late = NewSemaphore(0);
  ASSERT_TRUE(buffer && s && t && g && u && late);
  FailOnExit guard{{g}};
  // A device wait: B is released by A's signal, and s fails (on the host)
  // while B may still be running or completing.
  CTS_ASSERT_OK(Fill(1, {}, {{s.get(), 1}}, buffer.get(), 0, 1 << 19, 0x11));
  CTS_ASSERT_OK(Fill(other, {{s.get(), 1}}, {{t.get(), 1}}, buffer.get(),
                     1 << 19, 1 << 19, 0x22));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  s->Fail(DataLossError("failed after B's wait was reached"));
  CTS_EXPECT_OK(WaitFor(t.get(), 1));
  // A host wait: registered before the value, reached, then failed.
  CTS_ASSERT_OK(
      device()->QueueBarrier(1, Points{{g.get(), 1}}, Points{{u.get(), 1}}));
  CTS_ASSERT_OK(g->Signal(1));
  g->Fail(DataLossError("failed after the barrier's wait was reached"));
  CTS_EXPECT_OK(WaitFor(u.get(), 1));
  // Submitted after the failure: the failure decides, whatever the value.
  CTS_ASSERT_OK(
      device()->QueueBarrier(1, Points{{g.get(), 1}}, Points{{late.get(), 1}}));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(late.get(), 1));
  CTS_EXPECT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
}

// Issue 11 item 13: what a host call may wait on (hal/device.h,
// QueueHostCall): anything that completes without it returning.
TEST_F(Submission, HostCallMayWaitForWorkOnAnotherQueue) {
  CTS_REQUIRE_TAG(kTagHostCall);
  CTS_REQUIRE_QUEUES(2);
  auto buffer = NewHostBuffer(64, 0);
  auto gate = NewSemaphore(0), filled = NewSemaphore(0), done = NewSemaphore(0);
  ASSERT_TRUE(buffer && gate && filled && done);
  FailOnExit guard{{gate, filled}};
  auto waited = std::make_shared<Status>(UnknownError("not run"));
  auto seen = std::make_shared<uint8_t>(0);
  HalSemaphore* gate_raw = gate.get();
  HalSemaphore* filled_raw = filled.get();
  // The host call on queue 0 releases a fill on queue 1 (submitted after
  // it) and waits for it.
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{done.get(), 1}},
      [gate_raw, filled_raw, waited, seen, buffer]() -> Status {
        HAL_RETURN_IF_ERROR(gate_raw->Signal(1));
        *waited = filled_raw->Wait(1, Timeout::After(kCtsTimeout));
        HAL_RETURN_IF_ERROR(*waited);
        return buffer->MapRead(63, seen.get(), 1);
      }));
  CTS_ASSERT_OK(Fill(2, {{gate.get(), 1}}, {{filled.get(), 1}}, buffer.get(), 0,
                     64, 0x5C));
  CTS_EXPECT_OK(WaitFor(done.get(), 1));
  CTS_EXPECT_OK(*waited);
  EXPECT_EQ(*seen, 0x5C);
}

TEST_F(Submission, HostCallMayWaitForHostCallOnAnotherQueue) {
  CTS_REQUIRE_TAG(kTagHostCall);
  CTS_REQUIRE_QUEUES(2);
  auto x = NewSemaphore(0), done = NewSemaphore(0);
  ASSERT_TRUE(x && done);
  FailOnExit guard{{x}};
  auto waited = std::make_shared<Status>(UnknownError("not run"));
  HalSemaphore* x_raw = x.get();
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{done.get(), 1}}, [x_raw, waited]() -> Status {
        *waited = x_raw->Wait(1, Timeout::After(kCtsTimeout));
        return *waited;
      }));
  // Submitted after the waiting one, on another queue; signals x when done.
  CTS_ASSERT_OK(device()->QueueHostCall(2, {}, Points{{x.get(), 1}},
                                        [] { return OkStatus(); }));
  CTS_EXPECT_OK(WaitFor(done.get(), 1));
  CTS_EXPECT_OK(*waited);
}

TEST_F(Submission, HostCallMayWaitForAnotherHostThread) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto y = NewSemaphore(0), done = NewSemaphore(0);
  ASSERT_TRUE(y && done);
  FailOnExit guard{{y}};
  struct State {
    std::atomic<bool> started{false};
    Status waited = UnknownError("not run");
  };
  auto state = std::make_shared<State>();
  HalSemaphore* y_raw = y.get();
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{done.get(), 1}}, [y_raw, state]() -> Status {
        state->started.store(true);
        state->waited = y_raw->Wait(1, Timeout::After(kCtsTimeout));
        return state->waited;
      }));
  // Another host thread signals y once the host call runs (in the
  // deterministic simulator it runs inside this thread's WaitFor).
  std::thread signaller([y, state] {
    auto limit = std::chrono::steady_clock::now() + kCtsTimeout;
    while (!state->started.load() && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(1ms);
    }
    y->Signal(1).IgnoreError();
  });
  Status st = WaitFor(done.get(), 1);
  signaller.join();
  CTS_EXPECT_OK(st);
  CTS_EXPECT_OK(state->waited);
}

// Issue 11 item 9: a wait that failed before the submission fails the
// signals before the call returns, on every driver, even while the queue
// is busy with other work (they used to fail only after it).
TEST_F(Submission, AlreadyFailedWaitFailsSignalsAtSubmission) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto buffer = NewHostBuffer(16, 0xEE);
  auto failed = NewSemaphore(0), busy = NewSemaphore(0), s = NewSemaphore(0),
       t = NewSemaphore(0);
  ASSERT_TRUE(buffer && failed && busy && s && t);
  auto release = std::make_shared<std::atomic<bool>>(false);
  // Keeps queue 1 busy until the checks below are done.
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{busy.get(), 1}}, [release]() -> Status {
        auto deadline = std::chrono::steady_clock::now() + kCtsTimeout;
        while (!release->load() &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(100us);
        }
        return OkStatus();
      }));
  failed->Fail(DataLossError("upstream data loss"));
  CTS_ASSERT_OK(
      Fill(1, {{failed.get(), 1}}, {{s.get(), 1}}, buffer.get(), 0, 4, 0x11));
  CTS_ASSERT_OK(device()->QueueBarrier(1, Points{{failed.get(), 1}},
                                       Points{{t.get(), 1}}));
  // No wait of any kind before these checks.
  CTS_EXPECT_CODE(kDataLoss, s->Query());
  CTS_EXPECT_CODE(kDataLoss, t->Query());
  release->store(true);
  CTS_ASSERT_OK(WaitFor(busy.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(16, 0xEE)) << "a failed op ran";
}

TEST_F(Submission, AlreadyFailedWaitLeavesAllocaUncommittedAndDeallocaUndone) {
  CTS_REQUIRE_TAG(kTagAlloca);
  auto failed = NewSemaphore(0), sa = NewSemaphore(0), sd = NewSemaphore(0);
  ASSERT_TRUE(failed && sa && sd);
  failed->Fail(AbortedError("upstream abort"));
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> reserved,
      device()->QueueAlloca(1, Points{{failed.get(), 1}}, Points{{sa.get(), 1}},
                            HostParams(), 64));
  CTS_EXPECT_CODE(kAborted, sa->Query());
  auto live = NewHostBuffer(64, 0x5A);
  ASSERT_TRUE(live);
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{failed.get(), 1}},
                                        Points{{sd.get(), 1}}, live.get()));
  CTS_EXPECT_CODE(kAborted, sd->Query());
  // Undone at once: the buffer is usable without waiting for anything.
  EXPECT_EQ(live->state(), BufferState::kLive);
  EXPECT_EQ(ReadBack(live.get()), Bytes(64, 0x5A));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(reserved->state(), BufferState::kReserved);
  CTS_EXPECT_CODE(kFailedPrecondition, reserved->MapZero(0, 64));
  EXPECT_EQ(live->state(), BufferState::kLive);
}

// Issue 11 item 11: a signal list names each semaphore once, with values
// above the payload; anything else is INVALID_ARGUMENT and changes nothing.
TEST_F(Submission, InvalidSignalListIsInvalidArgument) {
  auto buffer = NewHostBuffer(4, 0xEE);
  auto a = NewSemaphore(3), b = NewSemaphore(0);
  ASSERT_TRUE(buffer && a && b);
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueBarrier(1, {}, Points{{a.get(), 4}, {a.get(), 5}}));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueBarrier(1, {}, Points{{b.get(), 1}, {a.get(), 3}}));
  CTS_EXPECT_CODE(kInvalidArgument,
                  Fill(1, {}, {{a.get(), 2}}, buffer.get(), 0, 4, 0x11));
  CTS_EXPECT_CODE(kInvalidArgument, Fill(1, {}, {{b.get(), 1}, {b.get(), 2}},
                                         buffer.get(), 0, 4, 0x11));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(Payload(a.get()), 3u);
  EXPECT_EQ(Payload(b.get()), 0u);
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(4, 0xEE));
}

// A signal that was valid at submission but overtaken before the operation
// completed (the host raised the payload past it) fails the semaphore with
// INVALID_ARGUMENT instead of vanishing.
TEST_F(Submission, SignalOvertakenBeforeCompletionFailsSemaphore) {
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(gate && s);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK(
      device()->QueueBarrier(1, Points{{gate.get(), 1}}, Points{{s.get(), 2}}));
  CTS_ASSERT_OK(s->Signal(5));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  CTS_EXPECT_CODE(kInvalidArgument, s->Query());
}

// A buffer's queue_affinity limits the queues that may use it: an
// operation runs on a queue both its own affinity and every buffer it uses
// allow, and one with no such queue is INVALID_ARGUMENT at submission,
// changing nothing (issue 25 item 3: the AMDGPU agent group lost the device
// for a buffer used outside its affinity; other drivers ran it).
TEST_F(Submission, BufferQueueAffinityLimitsTheQueues) {
  CTS_REQUIRE_QUEUES(2);
  BufferParams params = HostParams();
  params.queue_affinity = QueueAffinity{1} << 1;  // queue 1 only
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> only1,
                           allocator()->AllocateBuffer(params, 16));
  const uint8_t zero = 0;
  CTS_ASSERT_OK(only1->MapFill(0, 16, &zero, 1));
  auto other = NewHostBuffer(16, 0x00);
  ASSERT_TRUE(other);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  const uint8_t pattern = 0x5A;
  // Queue 0 only: none of its queues may use the buffer.
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueFill(1, {}, Points{{s.get(), 1}}, only1.get(),
                                      0, 16, &pattern, 1));
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueCopy(1, {}, Points{{s.get(), 1}}, only1.get(),
                                      0, other.get(), 0, 16));
  EXPECT_EQ(Payload(s.get()), 0u);
  // A command buffer using it (directly and through a slot), submitted to
  // queue 0: refused, and a one-shot one stays submittable.
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<CommandBuffer> direct,
      device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                    CommandCategory::kTransfer,
                                    kQueueAffinityAny, 0));
  CTS_ASSERT_OK(direct->Begin());
  CTS_ASSERT_OK(
      direct->FillBuffer(BufferRef::Direct(only1.get()), &pattern, 1));
  CTS_ASSERT_OK(direct->End());
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, direct.get()));
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<CommandBuffer> slotted,
      device()->CreateCommandBuffer(CommandBufferMode::kReusable,
                                    CommandCategory::kTransfer,
                                    kQueueAffinityAny, 1));
  CTS_ASSERT_OK(slotted->Begin());
  CTS_ASSERT_OK(slotted->FillBuffer(BufferRef::Slot(0), &pattern, 1));
  CTS_ASSERT_OK(slotted->End());
  const Binding binding{only1.get(), 0, kWholeBuffer};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueExecute(1, {}, Points{{s.get(), 1}},
                                         slotted.get(), {&binding, 1}));
  EXPECT_EQ(Payload(s.get()), 0u);
  // Any queue: the operation runs on queue 1, the one the buffer allows.
  CTS_ASSERT_OK(device()->QueueExecute(kQueueAffinityAny, {},
                                       Points{{s.get(), 1}}, direct.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(Diff(ReadBack(only1.get()), Bytes(16, 0x5A)), "");
  CTS_ASSERT_OK(device()->QueueCopy(kQueueAffinityAny, {}, Points{{s.get(), 2}},
                                    only1.get(), 0, other.get(), 0, 16));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  EXPECT_EQ(Diff(ReadBack(other.get()), Bytes(16, 0x5A)), "");
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsFill) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto target = NewHostBuffer(16, 0xEE);
    ASSERT_TRUE(u.ready && target);
    CTS_ASSERT_OK(
        Fill(u.downstream, u.wait(), u.signal(), target.get(), 0, 16, 0x11));
    FailUpstreamAndCheck(u);
    EXPECT_EQ(ReadBack(target.get()), Bytes(16, 0xEE)) << "the fill ran";
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsUpdate) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto target = NewHostBuffer(16, 0xEE);
    ASSERT_TRUE(u.ready && target);
    const Bytes data(16, 0x22);
    CTS_ASSERT_OK(device()->QueueUpdate(u.downstream, u.wait(), u.signal(),
                                        data.data(), target.get(), 0, 16));
    FailUpstreamAndCheck(u);
    EXPECT_EQ(ReadBack(target.get()), Bytes(16, 0xEE)) << "the update ran";
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsCopy) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto source = NewHostBuffer(16, 0x33), target = NewHostBuffer(16, 0xEE);
    ASSERT_TRUE(u.ready && source && target);
    CTS_ASSERT_OK(device()->QueueCopy(u.downstream, u.wait(), u.signal(),
                                      source.get(), 0, target.get(), 0, 16));
    FailUpstreamAndCheck(u);
    EXPECT_EQ(ReadBack(target.get()), Bytes(16, 0xEE)) << "the copy ran";
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsExecute) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto target = NewHostBuffer(16, 0xEE);
    ASSERT_TRUE(u.ready && target);
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<CommandBuffer> cb,
        device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer,
                                      kQueueAffinityAny, 0));
    const uint8_t pattern = 0x44;
    CTS_ASSERT_OK(cb->Begin());
    CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(target.get()), &pattern, 1));
    CTS_ASSERT_OK(cb->End());
    CTS_ASSERT_OK(
        device()->QueueExecute(u.downstream, u.wait(), u.signal(), cb.get()));
    FailUpstreamAndCheck(u);
    EXPECT_EQ(ReadBack(target.get()), Bytes(16, 0xEE))
        << "the command buffer ran";
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsBarrier) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    ASSERT_TRUE(u.ready);
    CTS_ASSERT_OK(device()->QueueBarrier(u.downstream, u.wait(), u.signal()));
    FailUpstreamAndCheck(u);
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsHostCall) {
  CTS_REQUIRE_TAG(kTagHostCall);
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    ASSERT_TRUE(u.ready);
    auto ran = std::make_shared<std::atomic<bool>>(false);
    CTS_ASSERT_OK(device()->QueueHostCall(u.downstream, u.wait(), u.signal(),
                                          [ran]() -> Status {
                                            ran->store(true);
                                            return OkStatus();
                                          }));
    FailUpstreamAndCheck(u);
    EXPECT_FALSE(ran->load()) << "the host call ran";
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsAlloca) {
  CTS_REQUIRE_TAG(kTagAlloca);
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    ASSERT_TRUE(u.ready);
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<HalBuffer> buffer,
        device()->QueueAlloca(u.downstream, u.wait(), u.signal(),
                              DeviceParams(), 64));
    FailUpstreamAndCheck(u);
  }
}

TEST_F(Submission, UpstreamFailureAfterIssueFailsFileWriteAndRead) {
  CTS_REQUIRE_TAG(kTagFiles);
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto source = NewHostBuffer(16, 0x55), target = NewHostBuffer(16, 0xEE);
    auto read_done = NewSemaphore(0);
    ASSERT_TRUE(u.ready && source && target && read_done);
    std::vector<uint8_t> memory(16, 0xAB);
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<::hal::File> file,
        ::hal::File::WrapMemory(memory, FileAccess::kReadWrite));
    CTS_ASSERT_OK(device()->QueueWrite(u.downstream, u.wait(), u.signal(),
                                       source.get(), 0, file.get(), 0, 16));
    CTS_ASSERT_OK(device()->QueueRead(u.downstream, u.wait(),
                                      Points{{read_done.get(), 1}}, file.get(),
                                      0, target.get(), 0, 16));
    FailUpstreamAndCheck(u);
    CTS_EXPECT_CODE(kDataLoss, read_done->Query());
    EXPECT_EQ(memory, Bytes(16, 0xAB)) << "the file write ran";
    EXPECT_EQ(ReadBack(target.get()), Bytes(16, 0xEE)) << "the file read ran";
  }
}

// The same through a chain that crosses queues twice: every op behind the
// failure fails with its status, none runs.
TEST_F(Submission, UpstreamFailureAfterIssueCrossesQueuesTransitively) {
  for (UpstreamKind kind : UpstreamKinds()) {
    SCOPED_TRACE(kind == UpstreamKind::kIssued ? "upstream issued"
                                               : "upstream waiting");
    Upstream u = StartUpstream(kind);
    auto target = NewHostBuffer(12, 0xEE);
    auto hop = NewSemaphore(0);
    ASSERT_TRUE(u.ready && target && hop);
    CTS_ASSERT_OK(Fill(u.downstream, u.wait(), {{hop.get(), 1}}, target.get(),
                       0, 4, 0x01));
    CTS_ASSERT_OK(Fill(1, {{hop.get(), 1}}, {{u.side.get(), 5}}, target.get(),
                       4, 4, 0x02));
    CTS_ASSERT_OK(Fill(u.downstream, {{u.side.get(), 5}}, {{u.out.get(), 1}},
                       target.get(), 8, 4, 0x03));
    FailUpstreamAndCheck(u);
    CTS_EXPECT_CODE(kDataLoss, hop->Query());
    EXPECT_EQ(ReadBack(target.get()), Bytes(12, 0xEE)) << "a failed op ran";
  }
}

// Lifetime: an operation keeps what it uses alive until it ran. The test
// drops its own references while the operation still waits, then allocates
// and fills buffers of the same size (a driver that freed the memory early
// hands it out again), then lets the operation run. Simulators that
// quarantine freed memory report the late use; every driver must copy the
// original bytes.
TEST_F(Submission, ExecutionKeepsItsCommandBufferAndBindingsAlive) {
  auto gate = NewSemaphore(0), done = NewSemaphore(0);
  auto target = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(gate && done && target);
  FailOnExit guard{{gate}};
  {
    auto source = NewHostBuffer(64, 0x77), direct = NewHostBuffer(64, 0x66);
    auto direct_target = NewHostBuffer(64, 0xEE);
    ASSERT_TRUE(source && direct && direct_target);
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<CommandBuffer> cb,
        device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer,
                                      kQueueAffinityAny, 2));
    CTS_ASSERT_OK(cb->Begin());
    CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Slot(0), BufferRef::Slot(1), 64));
    CTS_ASSERT_OK(cb->ExecutionBarrier());
    CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Direct(direct.get()),
                                 BufferRef::Slot(1, 32, 32), 32));
    CTS_ASSERT_OK(cb->End());
    const Binding table[] = {{source.get(), 0, kWholeBuffer},
                             {target.get(), 0, kWholeBuffer}};
    CTS_ASSERT_OK(device()->QueueExecute(
        1, Points{{gate.get(), 1}}, Points{{done.get(), 1}}, cb.get(), table));
  }  // the test's references to the command buffer and `source` are gone
  std::vector<Ref<Buffer>> reuse;
  for (int i = 0; i < 4; ++i) reuse.push_back(NewHostBuffer(64, 0x11));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(done.get(), 1));
  Bytes want(64, 0x77);
  std::fill(want.begin() + 32, want.end(), 0x66);
  EXPECT_EQ(Diff(ReadBack(target.get()), want), "");
}

// A binding table may name subspans: the execution keeps the subspan
// objects alive, not only the allocations under them. New subspans made
// while the execution waits are the likeliest to take a released one's
// memory (same size), so a dangling table entry reads their bytes, or ASan
// reports it.
TEST_F(Submission, ExecutionKeepsSubspansInItsBindingTableAlive) {
  auto gate = NewSemaphore(0), done = NewSemaphore(0);
  auto target = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(gate && done && target);
  FailOnExit guard{{gate}};
  {
    auto source = NewHostBuffer(128, 0x77);
    ASSERT_TRUE(source);
    CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> head, source->Subspan(0, 64));
    CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> tail, target->Subspan(32, 32));
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<CommandBuffer> cb,
        device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                      CommandCategory::kTransfer,
                                      kQueueAffinityAny, 2));
    CTS_ASSERT_OK(cb->Begin());
    CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Slot(0, 0, 32),
                                 BufferRef::Slot(1, 0, 32), 32));
    CTS_ASSERT_OK(cb->End());
    const Binding table[] = {{head.get(), 0, kWholeBuffer},
                             {tail.get(), 0, kWholeBuffer}};
    CTS_ASSERT_OK(device()->QueueExecute(
        1, Points{{gate.get(), 1}}, Points{{done.get(), 1}}, cb.get(), table));
  }  // the subspans, the source and the command buffer are the queue's now
  auto decoy = NewHostBuffer(128, 0x11);
  ASSERT_TRUE(decoy);
  std::vector<Ref<Buffer>> reuse;
  for (int i = 0; i < 8; ++i) {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> sub, decoy->Subspan(64, 64));
    reuse.push_back(std::move(sub));
  }
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(done.get(), 1));
  Bytes want(64, 0xEE);
  std::fill(want.begin() + 32, want.end(), 0x77);
  EXPECT_EQ(Diff(ReadBack(target.get()), want), "");
  EXPECT_EQ(Diff(ReadBack(decoy.get()), Bytes(128, 0x11)), "");
}

// The rule of QueueHostCall (hal/device.h) for later work of the host
// call's own queue that does not wait on it: a driver either runs that work
// while the host call waits (tag host_call_runs_own_queue: the GPU-stream
// drivers, whose host calls run beside the stream) or keeps it behind the
// host call, whose wait then times out; either way everything finishes
// once the host call returns.
TEST_F(Submission, HostCallWaitingOnLaterWorkOfItsOwnQueue) {
  CTS_REQUIRE_TAG(kTagHostCall);
  auto buffer = NewDeviceBuffer(256);
  auto go = NewSemaphore(0), called = NewSemaphore(0), filled = NewSemaphore(0);
  ASSERT_TRUE(buffer && go && called && filled);
  auto inner = std::make_shared<std::atomic<int>>(-1);
  HalSemaphore* go_raw = go.get();
  HalSemaphore* filled_raw = filled.get();
  // The fill waits on `go`, which the host call signals once it runs: the
  // fill cannot have finished before the host call started, whatever order
  // a driver (or a seed) picks for two unordered operations.
  CTS_ASSERT_OK(device()->QueueHostCall(
      1, {}, Points{{called.get(), 1}},
      [inner, go_raw, filled_raw]() -> Status {
        HAL_RETURN_IF_ERROR(go_raw->Signal(1));
        Status s = filled_raw->Wait(1, Timeout::After(300ms));
        inner->store(static_cast<int>(s.code()));
        return OkStatus();
      }));
  CTS_ASSERT_OK(Fill(1, {{go.get(), 1}}, {{filled.get(), 1}}, buffer.get(), 0,
                     256, uint8_t{0x5a}));
  CTS_ASSERT_OK(WaitFor(called.get(), 1));
  CTS_ASSERT_OK(WaitFor(filled.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(256, 0x5a));
  const StatusCode want = HasTag(kTagHostCallRunsOwnQueue)
                              ? StatusCode::kOk
                              : StatusCode::kDeadlineExceeded;
  EXPECT_EQ(inner->load(), static_cast<int>(want))
      << "the host call's wait on later work of its own queue ended with "
      << (inner->load() < 0
              ? "nothing (it never ran)"
              : StatusCodeName(static_cast<StatusCode>(inner->load())))
      << "; the backend's tags say "
      << (HasTag(kTagHostCallRunsOwnQueue) ? "it runs" : "it stays behind");
}

// Hold and release (Device::HoldNextOperation): an exact interleaving with
// no timing. A held copy holds everything behind it on another queue; the
// device cannot go idle; on release both run, in order.
TEST_F(Submission, HeldOperationHoldsEveryWaiterUntilReleased) {
  const QueueAffinity other = device()->queue_count() >= 2 ? 2 : 1;
  auto src = NewHostBuffer(64, 0x11), mid = NewHostBuffer(64, 0xEE),
       dst = NewHostBuffer(64, 0xEE);
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(src && mid && dst && a && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<OperationHold> hold,
                           device()->HoldNextOperation("queue_copy"));
  CTS_ASSERT_OK(device()->QueueCopy(1, {}, Points{{a.get(), 1}}, src.get(), 0,
                                    mid.get(), 0, 64));
  EXPECT_TRUE(hold->taken());
  CTS_ASSERT_OK(device()->QueueCopy(other, Points{{a.get(), 1}},
                                    Points{{b.get(), 1}}, mid.get(), 0,
                                    dst.get(), 0, 64));
  CTS_EXPECT_CODE(kDeadlineExceeded, device()->WaitIdle(Timeout::After(20ms)));
  EXPECT_EQ(Payload(a.get()), 0u);
  EXPECT_EQ(Payload(b.get()), 0u);
  EXPECT_EQ(Diff(ReadBack(mid.get()), Bytes(64, 0xEE)), "");
  EXPECT_EQ(Diff(ReadBack(dst.get()), Bytes(64, 0xEE)), "");
  hold->Resume();
  CTS_ASSERT_OK(WaitFor(b.get(), 1));
  EXPECT_EQ(Diff(ReadBack(dst.get()), Bytes(64, 0x11)), "");
}

// queue_dealloca against a use it is ordered after, with the use held:
// the memory stays until the use ran (a dealloca that ignored its wait
// would free it under the held copy: the simulators report the use after
// free, ASan the rest).
TEST_F(Submission, DeallocaBehindAHeldUseWaitsForIt) {
  CTS_REQUIRE_TAG(kTagAlloca);
  const QueueAffinity other = device()->queue_count() >= 2 ? 2 : 1;
  auto out = NewHostBuffer(256, 0xEE);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(out && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<OperationHold> hold,
                           device()->HoldNextOperation("queue_copy"));
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> buffer,
      device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, DeviceParams(), 256));
  CTS_ASSERT_OK(
      Fill(1, {{s.get(), 1}}, {{s.get(), 2}}, buffer.get(), 0, 256, 0x77));
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{s.get(), 2}},
                                    Points{{s.get(), 3}}, buffer.get(), 0,
                                    out.get(), 0, 256));
  CTS_ASSERT_OK(device()->QueueDealloca(other, Points{{s.get(), 3}},
                                        Points{{s.get(), 4}}, buffer.get()));
  buffer.reset();
  // The fill is not held: it finishes; the held copy and the dealloca
  // behind it cannot.
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  CTS_EXPECT_CODE(kDeadlineExceeded, device()->WaitIdle(Timeout::After(20ms)));
  EXPECT_EQ(Payload(s.get()), 2u) << "the copy is held";
  hold->Resume();
  CTS_ASSERT_OK(WaitFor(s.get(), 4));
  EXPECT_EQ(Diff(ReadBack(out.get()), Bytes(256, 0x77)), "");
}

TEST_F(Submission, QueueCopyKeepsItsSourceAlive) {
  auto gate = NewSemaphore(0), done = NewSemaphore(0);
  auto target = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(gate && done && target);
  FailOnExit guard{{gate}};
  {
    auto source = NewHostBuffer(64, 0x77);
    ASSERT_TRUE(source);
    CTS_ASSERT_OK(device()->QueueCopy(1, Points{{gate.get(), 1}},
                                      Points{{done.get(), 1}}, source.get(), 0,
                                      target.get(), 0, 64));
  }
  std::vector<Ref<Buffer>> reuse;
  for (int i = 0; i < 4; ++i) reuse.push_back(NewHostBuffer(64, 0x11));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(done.get(), 1));
  EXPECT_EQ(Diff(ReadBack(target.get()), Bytes(64, 0x77)), "");
}

}  // namespace
}  // namespace hal::cts
