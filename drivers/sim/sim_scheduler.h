// The simulator's schedulers: they decide when queue operations run.
//
// Every queue operation of the simulator becomes a SimOp: wait points,
// signal points, the buffer ranges it touches, and a function that does the
// work on host memory. A scheduler starts an op once all its waits are
// reached (or dispatches it at once, to fail, when one wait failed), runs it,
// and then signals or fails its signal points.
//
// Two schedulers share this interface:
// - deterministic (default): no device threads. Work runs inside host waits
//   (through hal/progress.h), one step at a time, on a virtual clock. Among
//   ready ops the seed picks the start order and each op's duration, so
//   independent ops complete in a seed-chosen order; an op's memory effects
//   happen at its completion. Same seed + same host calls = same trace.
// - threaded: one worker thread per queue runs ready ops as they come; the
//   same checks and faults apply, without the determinism.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "drivers/sim/sim_context.h"
#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"
#include "hal/types.h"
#include "hal/utils/queue_op.h"

namespace hal::sim {

// A vector that keeps its first N elements inline (no allocation for the
// one or two semaphores a queue operation usually has). Contiguous: past N,
// every element moves to the heap.
template <typename T, size_t N>
class SimSmallVector {
 public:
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (heap_.empty()) {
      if (size_ < N) {
        inline_[size_] = T(std::forward<Args>(args)...);
        return inline_[size_++];
      }
      heap_.reserve(2 * N);
      for (T& x : inline_) heap_.push_back(std::move(x));
    }
    heap_.emplace_back(std::forward<Args>(args)...);
    ++size_;
    return heap_.back();
  }

 private:
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_ : heap_.data(); }

  T inline_[N];
  std::vector<T> heap_;
  size_t size_ = 0;
};

// A per-thread free list of blocks of one size, for the records every queue
// operation allocates and frees (SimOp, the scheduler's entry): a pop and a
// push instead of malloc and free. A thread keeps at most kMaxCached blocks
// and frees them when it exits; a block freed on another thread than the one
// that allocated it joins that thread's list.
template <size_t kSize>
class SimBlockCache {
 public:
  static constexpr size_t kMaxCached = 256;
  static void* Allocate() {
    if (Node* n = head_) {
      head_ = n->next;
      --count_;
      return n;
    }
    return ::operator new(kBlockSize);
  }
  static void Free(void* p) noexcept {
    if (count_ < kMaxCached && !exited_) {
      if (!armed_) {
        armed_ = true;
        reaper_.armed = true;  // constructs it: the list is freed at exit
      }
      Node* n = static_cast<Node*>(p);
      n->next = head_;
      head_ = n;
      ++count_;
      return;
    }
    ::operator delete(p);
  }

 private:
  struct Node {
    Node* next;
  };
  static constexpr size_t kBlockSize =
      kSize < sizeof(Node) ? sizeof(Node) : kSize;
  // Frees the thread's list when the thread exits. The list itself is
  // trivially destructible thread_locals, so the fast paths need no
  // thread_local initialization check.
  struct Reaper {
    bool armed = false;
    ~Reaper() {
      exited_ = true;  // later frees on this thread go to the heap
      while (Node* n = head_) {
        head_ = n->next;
        ::operator delete(n);
      }
      count_ = 0;
    }
  };
  static inline thread_local Node* head_ = nullptr;
  static inline thread_local size_t count_ = 0;
  static inline thread_local bool exited_ = false;
  static inline thread_local bool armed_ = false;
  static inline thread_local Reaper reaper_;
};

// An allocator over SimBlockCache (for std::allocate_shared).
template <typename T>
struct SimCacheAllocator {
  using value_type = T;
  SimCacheAllocator() = default;
  template <typename U>
  SimCacheAllocator(const SimCacheAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(SimBlockCache<sizeof(T)>::Allocate());
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n != 1) return ::operator delete(p);
    SimBlockCache<sizeof(T)>::Free(p);
  }
  template <typename U>
  bool operator==(const SimCacheAllocator<U>&) const {
    return true;
  }
};

struct SimOp {
  static void* operator new(size_t size) {
    return size == sizeof(SimOp) ? SimBlockCache<sizeof(SimOp)>::Allocate()
                                 : ::operator new(size);
  }
  static void operator delete(void* p, size_t size) noexcept {
    if (size == sizeof(SimOp)) return SimBlockCache<sizeof(SimOp)>::Free(p);
    ::operator delete(p);
  }

  uint64_t id = 0;  // per device, in submission order
  static constexpr TraceToken kDefaultName{"op"};
  const TraceToken* name = &kDefaultName;  // a constexpr token
  int queue = 0;
  // The caller's wait list, read only while it submits the op (the
  // scheduler retains the semaphores of the waits it registers): no
  // reference counting for the usual reached wait.
  SemaphoreList waits;
  using Points = SimSmallVector<utils::RetainedPoint, 2>;
  Points signals;
  std::vector<SimAccess> accesses;    // for the hazard checker
  std::vector<Ref<Buffer>> retained;  // keeps `accesses` buffers alive
  // The device work; its error fails the signal points.
  std::function<Status()> run;
  // Called instead of `run` when a wait failed, the device was lost, or the
  // device shut down.
  std::function<void(const Status&)> abandon;

  void SetPoints(SemaphoreList wait, SemaphoreList signal) {
    waits = wait;
    utils::RetainPoints(signal, &signals);
  }
  void AddAccess(Buffer* allocated, uint64_t buffer_id, DeviceSize offset,
                 DeviceSize length, bool write, bool free = false) {
    accesses.push_back(
        SimAccess{allocated, buffer_id, offset, length, write, free});
    retained.emplace_back(allocated);
  }
};

class SimScheduler {
 public:
  // Called with the context lock held as an op is submitted, before anything
  // else of it is traced and before it can run (the device numbers and
  // traces its submission here: one lock for the device and the scheduler).
  using AdmitHook = void (*)(void* arg, SimOp& op);

  virtual ~SimScheduler() = default;
  // Takes the op; never fails (an op that cannot run fails its signals).
  virtual void Submit(std::unique_ptr<SimOp> op, AdmitHook hook = nullptr,
                      void* hook_arg = nullptr) = 0;
  // Waits until no op is in flight (including ops whose waits are unmet);
  // the deterministic scheduler runs work meanwhile.
  virtual Status WaitIdle(Timeout timeout) = 0;
  // Runs what can run, then fails every op left with CANCELLED. Idempotent.
  virtual void Shutdown() = 0;
};

std::unique_ptr<SimScheduler> CreateThreadedScheduler(
    int queue_count, std::shared_ptr<SimContext> context);
std::unique_ptr<SimScheduler> CreateDeterministicScheduler(
    std::shared_ptr<SimContext> context);

// Completes an op: signals its points on success, fails them otherwise
// (utils::CompleteSignals).
void FinishSimOp(SimOp& op, const Status& status);

}  // namespace hal::sim
