// Timeline semaphores: uncontended signal/query, host-to-host wake latency
// and multi-semaphore waits, each next to its baseline.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "benchmarks/bench_common.h"
#include "hal/semaphore.h"

namespace hal::bench {
namespace {

// ---------------------------------------------------------------------------
// Uncontended signal and query.

// Baseline: the cheapest possible timeline, a bare (seq_cst) atomic.
void BM_Baseline_AtomicStoreLoad(benchmark::State& state) {
  std::atomic<uint64_t> payload{0};
  uint64_t value = 0;
  for (auto _ : state) {
    payload.store(++value);
    benchmark::DoNotOptimize(payload.load());
  }
}
BENCHMARK(BM_Baseline_AtomicStoreLoad);

void BM_Baseline_AtomicLoad(benchmark::State& state) {
  std::atomic<uint64_t> payload{1};
  for (auto _ : state) benchmark::DoNotOptimize(payload.load());
}
BENCHMARK(BM_Baseline_AtomicLoad);

void BM_Baseline_AtomicStore(benchmark::State& state) {
  std::atomic<uint64_t> payload{0};
  uint64_t value = 0;
  for (auto _ : state) {
    payload.store(++value);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Baseline_AtomicStore);

void BM_Semaphore_SignalQuery(benchmark::State& state) {
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> sem, GetDevice()->CreateSemaphore(0));
  uint64_t value = 0;
  for (auto _ : state) {
    Status s = sem->Signal(++value);
    StatusOr<uint64_t> q = sem->Query();
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(q);
  }
  if (sem->Query().value() != value) state.SkipWithError("payload mismatch");
}
BENCHMARK(BM_Semaphore_SignalQuery);

void BM_Semaphore_Query(benchmark::State& state) {
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> sem, GetDevice()->CreateSemaphore(1));
  for (auto _ : state) {
    StatusOr<uint64_t> q = sem->Query();
    benchmark::DoNotOptimize(q);
  }
}
BENCHMARK(BM_Semaphore_Query);

void BM_Semaphore_Signal(benchmark::State& state) {
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> sem, GetDevice()->CreateSemaphore(0));
  uint64_t value = 0;
  for (auto _ : state) {
    Status s = sem->Signal(++value);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_Semaphore_Signal);

// ---------------------------------------------------------------------------
// Host-to-host wake latency. Each benchmark plays ping-pong between the
// benchmark thread and a partner thread: one iteration is a round trip, i.e.
// two wakes. Real time, since the point is how long the other side sleeps.

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
                 op | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}

// A 32-bit turn counter: side A waits for odd->even, side B for even->odd.
// Each wait is for `seq` to leave the value it had.
class RawFutexTurn {
 public:
  void Pass(uint32_t next) {
    seq_.store(next, std::memory_order_release);
    Futex(&seq_, FUTEX_WAKE, 1);
  }
  void Await(uint32_t expected) {
    uint32_t v;
    while ((v = seq_.load(std::memory_order_acquire)) != expected) {
      Futex(&seq_, FUTEX_WAIT, v);
    }
  }

 private:
  std::atomic<uint32_t> seq_{0};
};

// What fast runtimes do: spin briefly (the partner is often about to
// answer), then sleep on a futex; the waker skips the syscall when nobody
// sleeps. The spin is bounded by time, `spin_us` microseconds, checking the
// clock every 32 pauses (a pause is 10 to 140 cycles depending on the CPU).
class SpinFutexTurn {
 public:
  explicit SpinFutexTurn(int64_t spin_us)
      : spin_(std::chrono::microseconds(spin_us)) {}
  void Pass(uint32_t next) {
    seq_.store(next, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) {
      Futex(&seq_, FUTEX_WAKE, 1);
    }
  }
  void Await(uint32_t expected) {
    const auto limit = std::chrono::steady_clock::now() + spin_;
    do {
      for (int i = 0; i < 32; ++i) {
        if (seq_.load(std::memory_order_acquire) == expected) return;
        __builtin_ia32_pause();
      }
    } while (std::chrono::steady_clock::now() < limit);
    uint32_t v;
    while ((v = seq_.load(std::memory_order_seq_cst)) != expected) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (seq_.load(std::memory_order_seq_cst) == v)
        Futex(&seq_, FUTEX_WAIT, v);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

 private:
  const std::chrono::nanoseconds spin_;
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> sleepers_{0};
};

class CondVarTurn {
 public:
  void Pass(uint32_t next) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seq_ = next;
    }
    cv_.notify_one();
  }
  void Await(uint32_t expected) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return seq_ == expected; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  uint32_t seq_ = 0;
};

// Runs the ping-pong: the benchmark thread passes odd turns, the partner
// even ones. `kStop` ends the partner.
template <typename Turn, typename... Args>
void PingPong(benchmark::State& state, Args... args) {
  Turn turn(args...);
  std::atomic<bool> stop{false};
  std::thread partner([&] {
    for (uint32_t i = 1;; i += 2) {
      turn.Await(i);
      if (stop.load(std::memory_order_acquire)) return;
      turn.Pass(i + 1);
    }
  });
  uint32_t i = 1;
  for (auto _ : state) {
    turn.Pass(i);
    turn.Await(i + 1);
    i += 2;
  }
  stop.store(true, std::memory_order_release);
  turn.Pass(i);
  partner.join();
}

void BM_Baseline_WakeCondVar(benchmark::State& state) {
  PingPong<CondVarTurn>(state);
}
BENCHMARK(BM_Baseline_WakeCondVar)->UseRealTime();

void BM_Baseline_WakeFutex(benchmark::State& state) {
  PingPong<RawFutexTurn>(state);
}
BENCHMARK(BM_Baseline_WakeFutex)->UseRealTime();

// The argument is the spin budget in microseconds; 10 is what
// Semaphore::Wait uses (hal/semaphore.cc, kSpinBudget).
void BM_Baseline_WakeSpinFutex(benchmark::State& state) {
  PingPong<SpinFutexTurn>(state, state.range(0));
}
BENCHMARK(BM_Baseline_WakeSpinFutex)->Arg(10)->UseRealTime();

// The same ping-pong on two HAL semaphores (one per direction), with
// blocking Wait and Signal.
void BM_Semaphore_Wake(benchmark::State& state) {
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> ping, GetDevice()->CreateSemaphore(0));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> pong, GetDevice()->CreateSemaphore(0));
  std::thread partner([&] {
    for (uint64_t i = 1;; ++i) {
      if (!ping->Wait(i, Timeout::Infinite()).ok()) return;
      if (!pong->Signal(i).ok()) return;
    }
  });
  uint64_t i = 1;
  Status status;
  for (auto _ : state) {
    status = ping->Signal(i);
    if (status.ok()) status = pong->Wait(i, Timeout::Infinite());
    if (!status.ok()) break;
    ++i;
  }
  ping->Fail(CancelledError("benchmark done"));
  partner.join();
  if (!status.ok()) SkipWithStatus(state, status);
}
BENCHMARK(BM_Semaphore_Wake)->UseRealTime();

// ---------------------------------------------------------------------------
// Waits on lists of 1, 8 and 64 semaphores. "Reached": every point is
// already reached, so this is the cost of the call itself. For ANY,
// "LastReached" has only the last point reached.

std::vector<Ref<Semaphore>> MakeSemaphores(benchmark::State& state, int count,
                                           uint64_t initial) {
  std::vector<Ref<Semaphore>> sems;
  for (int i = 0; i < count; ++i) {
    auto s = GetDevice()->CreateSemaphore(initial);
    if (!s.ok()) {
      SkipWithStatus(state, s.status());
      return {};
    }
    sems.push_back(std::move(s).value());
  }
  return sems;
}

// Baseline: checking `count` atomics, the least a multi-wait that is already
// satisfied must do.
void BM_Baseline_PollAtomics(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  std::vector<std::atomic<uint64_t>> payloads(count);
  for (auto& p : payloads) p.store(1);
  for (auto _ : state) {
    bool all = true;
    for (auto& p : payloads) all &= p.load(std::memory_order_acquire) >= 1;
    benchmark::DoNotOptimize(all);
  }
}
BENCHMARK(BM_Baseline_PollAtomics)->Arg(1)->Arg(8)->Arg(64);

void WaitList(benchmark::State& state, WaitMode mode, bool only_last) {
  const int count = static_cast<int>(state.range(0));
  auto sems = MakeSemaphores(state, count, 0);
  if (static_cast<int>(sems.size()) != count) return;
  std::vector<SemaphorePoint> points;
  for (int i = 0; i < count; ++i) {
    if (!only_last || i == count - 1)
      HAL_BENCH_CHECK(state, sems[i]->Signal(1));
    points.push_back({sems[i].get(), 1});
  }
  for (auto _ : state) {
    HAL_BENCH_CHECK(state, WaitSemaphores(mode, points, Timeout::Infinite()));
  }
}

void BM_WaitAll_Reached(benchmark::State& state) {
  WaitList(state, WaitMode::kAll, false);
}
BENCHMARK(BM_WaitAll_Reached)->Arg(1)->Arg(8)->Arg(64);

void BM_WaitAny_Reached(benchmark::State& state) {
  WaitList(state, WaitMode::kAny, false);
}
BENCHMARK(BM_WaitAny_Reached)->Arg(1)->Arg(8)->Arg(64);

void BM_WaitAny_LastReached(benchmark::State& state) {
  WaitList(state, WaitMode::kAny, true);
}
BENCHMARK(BM_WaitAny_LastReached)->Arg(1)->Arg(8)->Arg(64);

// A blocking ALL wait that the partner completes: the partner signals the
// N semaphores in turn, the benchmark thread waits on all of them, then
// releases the partner for the next round. Real time.
void BM_WaitAll_Blocking(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  auto sems = MakeSemaphores(state, count, 0);
  if (static_cast<int>(sems.size()) != count) return;
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> go, GetDevice()->CreateSemaphore(0));
  std::thread partner([&] {
    for (uint64_t round = 1;; ++round) {
      if (!go->Wait(round, Timeout::Infinite()).ok()) return;
      for (auto& s : sems) s->Signal(round).IgnoreError();
    }
  });
  std::vector<SemaphorePoint> points(count);
  uint64_t round = 1;
  Status status;
  for (auto _ : state) {
    for (int i = 0; i < count; ++i) points[i] = {sems[i].get(), round};
    status = go->Signal(round);
    if (status.ok())
      status = WaitSemaphores(WaitMode::kAll, points, Timeout::Infinite());
    if (!status.ok()) break;
    ++round;
  }
  go->Fail(CancelledError("benchmark done"));
  partner.join();
  if (!status.ok()) SkipWithStatus(state, status);
}
BENCHMARK(BM_WaitAll_Blocking)->Arg(1)->Arg(8)->Arg(64)->UseRealTime();

}  // namespace
}  // namespace hal::bench

HAL_BENCH_MAIN()
