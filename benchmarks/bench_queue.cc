// Queue submission, queue_alloca/dealloca, synchronous allocation and
// mapping, each next to a baseline.
//
// The baseline for queue work is a minimal queue: a worker thread fed
// through a mutex + condition variable with std::function items, which is
// the least machinery that runs host work on another thread in order. The
// HAL's queues add semaphores, validation and ownership on top of that.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "benchmarks/bench_common.h"
#include "hal/command_buffer.h"
#include "hal/semaphore.h"

namespace hal::bench {
namespace {

// ---------------------------------------------------------------------------
// The baseline queue.

class MiniQueue {
 public:
  MiniQueue() : worker_([this] { Run(); }) {}
  ~MiniQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  void Submit(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !items_.empty(); });
      if (items_.empty()) return;
      auto fn = std::move(items_.front());
      items_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> items_;
  bool stop_ = false;
  std::thread worker_;
};

// A completion flag the host blocks on.
class Done {
 public:
  void Set(uint64_t value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      value_ = value;
    }
    cv_.notify_one();
  }
  void Wait(uint64_t value) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return value_ >= value; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t value_ = 0;
};

// ---------------------------------------------------------------------------
// Empty execute with one wait and one signal.

StatusOr<Ref<CommandBuffer>> EmptyCommandBuffer(QueueAffinity affinity) {
  HAL_ASSIGN_OR_RETURN(Ref<CommandBuffer> cb,
                       GetDevice()->CreateCommandBuffer(
                           CommandBufferMode::kReusable,
                           CommandCategory::kTransfer, affinity, 0));
  HAL_RETURN_IF_ERROR(cb->Begin());
  HAL_RETURN_IF_ERROR(cb->End());
  return cb;
}

void BM_Baseline_MiniQueueRoundTrip(benchmark::State& state) {
  MiniQueue queue;
  Done done;
  uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    queue.Submit([&done, i] { done.Set(i); });
    done.Wait(i);
  }
}
BENCHMARK(BM_Baseline_MiniQueueRoundTrip)->UseRealTime();

// Submit, then block until the signal semaphore is reached. The wait point
// is already reached (the host signalled it), the usual case of a
// dependency on earlier work.
void BM_Queue_ExecuteEmpty_EndToEnd(benchmark::State& state) {
  Device* device = GetDevice();
  HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, EmptyCommandBuffer(1));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> wait, device->CreateSemaphore(0));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> signal, device->CreateSemaphore(0));
  uint64_t i = 0;
  const CountsBefore counts = TakeCounts();
  for (auto _ : state) {
    ++i;
    HAL_BENCH_CHECK(state, wait->Signal(i));
    SemaphorePoint w{wait.get(), i}, s{signal.get(), i};
    HAL_BENCH_CHECK(state, device->QueueExecute(1, {&w, 1}, {&s, 1}, cb.get()));
    HAL_BENCH_CHECK(state, signal->Wait(i, Timeout::Infinite()));
  }
  ReportCountsPerOp(state, counts);
}
BENCHMARK(BM_Queue_ExecuteEmpty_EndToEnd)->UseRealTime();

void BM_Baseline_MiniQueueSubmit(benchmark::State& state) {
  MiniQueue queue;
  Done done;
  uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    queue.Submit([&done, i] { done.Set(i); });
    if ((i & 1023) == 0) {
      state.PauseTiming();
      done.Wait(i);
      state.ResumeTiming();
    }
  }
  done.Wait(i);
}
BENCHMARK(BM_Baseline_MiniQueueSubmit);

// The submit-only benchmarks keep 1024 operations in flight between drains.
// Operations that no semaphore orders may complete in any order (the
// deterministic simulator picks one by seed), so each signals its own
// semaphore of a ring, once per drain: a shared timeline would be signalled
// out of order and fail.
constexpr uint64_t kSubmitBatch = 1024;

StatusOr<std::vector<Ref<Semaphore>>> SignalRing() {
  std::vector<Ref<Semaphore>> ring;
  for (uint64_t k = 0; k < kSubmitBatch; ++k) {
    HAL_ASSIGN_OR_RETURN(Ref<Semaphore> s, GetDevice()->CreateSemaphore(0));
    ring.push_back(std::move(s));
  }
  return ring;
}

// Only the QueueExecute call; the queue drains (outside the timing) every
// 1024 submissions so the backlog stays bounded. The worker runs
// concurrently, as it would in an application. CPU time of the submitting
// thread.
void BM_Queue_ExecuteEmpty_SubmitOnly(benchmark::State& state) {
  Device* device = GetDevice();
  HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, EmptyCommandBuffer(1));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> wait, device->CreateSemaphore(1));
  HAL_BENCH_ASSIGN(state, std::vector<Ref<Semaphore>> ring, SignalRing());
  uint64_t i = 0;
  for (auto _ : state) {
    SemaphorePoint w{wait.get(), 1};
    SemaphorePoint s{ring[i % kSubmitBatch].get(), i / kSubmitBatch + 1};
    HAL_BENCH_CHECK(state, device->QueueExecute(1, {&w, 1}, {&s, 1}, cb.get()));
    if (++i % kSubmitBatch == 0) {
      state.PauseTiming();
      HAL_BENCH_CHECK(state, device->WaitIdle(Timeout::Infinite()));
      HAL_BENCH_CHECK(state, s.semaphore->Query());
      state.ResumeTiming();
    }
  }
  HAL_BENCH_CHECK(state, device->WaitIdle(Timeout::Infinite()));
  for (auto& r : ring) HAL_BENCH_CHECK(state, r->Query());
}
BENCHMARK(BM_Queue_ExecuteEmpty_SubmitOnly);

// The same with a wait that is not reached at submission (wait-before-
// signal): the host signals it after submitting.
void BM_Queue_ExecuteEmpty_SubmitOnlyUnreachedWait(benchmark::State& state) {
  Device* device = GetDevice();
  HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, EmptyCommandBuffer(1));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> wait, device->CreateSemaphore(0));
  HAL_BENCH_ASSIGN(state, std::vector<Ref<Semaphore>> ring, SignalRing());
  uint64_t i = 0;
  for (auto _ : state) {
    SemaphorePoint w{wait.get(), i + 1};
    SemaphorePoint s{ring[i % kSubmitBatch].get(), i / kSubmitBatch + 1};
    HAL_BENCH_CHECK(state, device->QueueExecute(1, {&w, 1}, {&s, 1}, cb.get()));
    state.PauseTiming();
    HAL_BENCH_CHECK(state, wait->Signal(i + 1));
    if (++i % kSubmitBatch == 0) {
      HAL_BENCH_CHECK(state, device->WaitIdle(Timeout::Infinite()));
      HAL_BENCH_CHECK(state, s.semaphore->Query());
    }
    state.ResumeTiming();
  }
  HAL_BENCH_CHECK(state, device->WaitIdle(Timeout::Infinite()));
  for (auto& r : ring) HAL_BENCH_CHECK(state, r->Query());
}
BENCHMARK(BM_Queue_ExecuteEmpty_SubmitOnlyUnreachedWait);

// An empty barrier (QueueBarrier: no command buffer) with one wait and one
// signal, end to end, as BM_Queue_ExecuteEmpty_EndToEnd: the simulator's
// cost per queue operation with no work in it.
void BM_Queue_Barrier_EndToEnd(benchmark::State& state) {
  Device* device = GetDevice();
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> wait, device->CreateSemaphore(0));
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> signal, device->CreateSemaphore(0));
  uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    HAL_BENCH_CHECK(state, wait->Signal(i));
    SemaphorePoint w{wait.get(), i}, s{signal.get(), i};
    HAL_BENCH_CHECK(state, device->QueueBarrier(1, {&w, 1}, {&s, 1}));
    HAL_BENCH_CHECK(state, signal->Wait(i, Timeout::Infinite()));
  }
}
BENCHMARK(BM_Queue_Barrier_EndToEnd)->UseRealTime();

// ---------------------------------------------------------------------------
// A chain of N dependent submissions alternating between two queues: op k
// waits for k-1 on one timeline semaphore and signals k. The host submits
// the whole chain first (wait-before-signal), then starts it and waits for
// the end. Items are submissions.

void BM_Baseline_MiniQueueChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  MiniQueue q0, q1;
  MiniQueue* queues[2] = {&q0, &q1};
  Done done;
  uint64_t round = 0;
  // hop(k) runs on queue k%2 and posts hop(k+1) on the other queue.
  std::function<void(int64_t)> hop = [&](int64_t k) {
    if (k == n) {
      done.Set(round);
      return;
    }
    queues[(k + 1) % 2]->Submit([&hop, k] { hop(k + 1); });
  };
  for (auto _ : state) {
    ++round;
    queues[0]->Submit([&hop] { hop(1); });
    done.Wait(round);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Baseline_MiniQueueChain)->Arg(16)->Arg(256)->UseRealTime();

void BM_Queue_Chain2Queues(benchmark::State& state) {
  const int64_t n = state.range(0);
  Device* device = GetDevice();
  if (device->queue_count() < 2) {
    state.SkipWithError("needs a device with 2 queues");
    return;
  }
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<Semaphore> sem, device->CreateSemaphore(0));
    for (int64_t k = 1; k <= n; ++k) {
      SemaphorePoint w{sem.get(), static_cast<uint64_t>(k)};
      SemaphorePoint s{sem.get(), static_cast<uint64_t>(k + 1)};
      HAL_BENCH_CHECK(state, device->QueueBarrier(QueueAffinity{1} << (k % 2),
                                                  {&w, 1}, {&s, 1}));
    }
    HAL_BENCH_CHECK(state, sem->Signal(1));
    HAL_BENCH_CHECK(
        state, sem->Wait(static_cast<uint64_t>(n + 1), Timeout::Infinite()));
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Queue_Chain2Queues)->Arg(16)->Arg(256)->UseRealTime();

// ---------------------------------------------------------------------------
// queue_alloca + queue_dealloca round trip (ordered by a semaphore), then a
// host wait for the dealloca. Baseline: the same size from the host heap,
// touched once as the simulator fills fresh memory.

constexpr DeviceSize kSmall = 4096;
constexpr DeviceSize kLarge = 1 << 20;

void BM_Baseline_MallocFree(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::aligned_alloc(64, size);
    std::memset(p, 0xCD, size);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_Baseline_MallocFree)->Arg(kSmall)->Arg(kLarge);

void BM_Queue_AllocaDealloca(benchmark::State& state) {
  const DeviceSize size = static_cast<DeviceSize>(state.range(0));
  Device* device = GetDevice();
  HAL_BENCH_ASSIGN(state, Ref<Semaphore> sem, device->CreateSemaphore(0));
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kDefault;
  uint64_t v = 0;
  for (auto _ : state) {
    SemaphorePoint alloced{sem.get(), v + 1}, freed{sem.get(), v + 2};
    HAL_BENCH_ASSIGN(state, Ref<Buffer> buffer,
                     device->QueueAlloca(1, {}, {&alloced, 1}, params, size));
    HAL_BENCH_CHECK(state, device->QueueDealloca(1, {&alloced, 1}, {&freed, 1},
                                                 buffer.get()));
    HAL_BENCH_CHECK(state, sem->Wait(v + 2, Timeout::Infinite()));
    v += 2;
  }
}
BENCHMARK(BM_Queue_AllocaDealloca)->Arg(kSmall)->Arg(kLarge)->UseRealTime();

// Synchronous allocate + free (the last reference dropped).
void BM_Allocator_AllocateFree(benchmark::State& state) {
  const DeviceSize size = static_cast<DeviceSize>(state.range(0));
  Allocator* allocator = GetDevice()->allocator();
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kDefault;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<Buffer> buffer,
                     allocator->AllocateBuffer(params, size));
    benchmark::DoNotOptimize(buffer.get());
  }
}
BENCHMARK(BM_Allocator_AllocateFree)->Arg(kSmall)->Arg(kLarge);

// ---------------------------------------------------------------------------
// Map + unmap of host-visible memory. Baseline: taking and dropping one
// reference (an atomic increment and decrement), the least bookkeeping a
// mapping that keeps its buffer alive must do.

void BM_Baseline_RefAcquireRelease(benchmark::State& state) {
  std::atomic<uint32_t> count{1};
  for (auto _ : state) {
    count.fetch_add(1, std::memory_order_relaxed);
    benchmark::DoNotOptimize(count.fetch_sub(1, std::memory_order_acq_rel));
  }
}
BENCHMARK(BM_Baseline_RefAcquireRelease);

void BM_Buffer_MapUnmap(benchmark::State& state) {
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  params.usage = BufferUsage::kTransfer | BufferUsage::kMapping;
  HAL_BENCH_ASSIGN(state, Ref<Buffer> buffer,
                   GetDevice()->allocator()->AllocateBuffer(params, kSmall));
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, BufferMapping mapping,
                     buffer->Map(MappingMode::kScoped,
                                 MemoryAccess::kRead | MemoryAccess::kWrite));
    benchmark::DoNotOptimize(mapping.data());
    HAL_BENCH_CHECK(state, mapping.Unmap());
  }
}
BENCHMARK(BM_Buffer_MapUnmap);

}  // namespace
}  // namespace hal::bench

HAL_BENCH_MAIN()
