// Devices and queue operations.
//
// Every queue operation takes a queue affinity, a wait list and a signal list.
// It starts after every wait is reached and signals after its work is done.
// If a wait fails, the operation does not run and its signal semaphores fail
// with the same status. When a wait semaphore has failed already at
// submission, the signals are failed before the queue method returns (OK),
// on every driver, whatever the queues are busy with; a wait that fails later
// fails the signals when the driver learns of it. Operations on one queue are
// ordered only by their semaphores: independent operations may run in any
// order.
//
// A signal list names each semaphore at most once, and each value must be
// above the semaphore's payload at submission (INVALID_ARGUMENT otherwise).
// A signal overtaken before the operation completes (the payload was raised
// to the value or past it meanwhile, by the host or another operation) fails
// the semaphore with INVALID_ARGUMENT: someone waiting for that signal would
// otherwise see a payload that never belonged to it.
//
// Queues: an operation runs on one queue that its affinity (masked to the
// device's queues), a command buffer's affinity and the queue_affinity of
// every buffer it uses all allow (the lowest such queue); when no queue is
// left the operation is INVALID_ARGUMENT at submission and changes nothing.
//
// The public methods validate their arguments (INVALID_ARGUMENT, OUT_OF_RANGE,
// FAILED_PRECONDITION) and then call the driver's ...Impl. An error returned
// from a queue method means nothing was enqueued and no semaphore changed.
// Alignment rules (fill patterns, dispatch bindings) apply to the offset in
// the allocation: a subspan's own offset counts.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/event.h"
#include "hal/executable.h"
#include "hal/file.h"
#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal {

struct DeviceInfo {
  std::string driver;  // "sim", "cuda", ...
  std::string name;    // human-readable
  std::string uri;     // a URI that opens this device
  std::string uuid;    // stable id where the driver has one
  uint64_t ordinal = 0;
  DeviceSize memory_bytes = 0;
  int queue_count = 1;
  std::map<std::string, std::string> properties;  // driver-specific
};

// Runs on a device thread after the waits; its status decides whether the
// signals are signalled or failed. It must not block on work that is queued
// behind it on the same device.
using HostCallFn = std::function<Status()>;

// A hold on one queue operation (Device::HoldNextOperation): a test API to
// force an interleaving without timing. The held operation waits, besides
// its own waits, until Resume (or until the hold is destroyed), so
// nothing it signals or writes happens before the test says so.
class OperationHold : public RefCounted {
 public:
  const std::string& kind() const { return kind_; }
  // An operation took the hold (it was submitted after HoldNextOperation).
  bool taken() const { return taken_.load(); }
  // Releases the hold: the held operation goes on; before any took it, the
  // next operation of the kind is not held. Idempotent. (Not named Release:
  // that is RefCounted's.)
  void Resume();

 private:
  friend class Device;
  OperationHold(std::string kind, Ref<Semaphore> gate)
      : kind_(std::move(kind)), gate_(std::move(gate)) {}
  ~OperationHold() override { Resume(); }
  std::string kind_;
  Ref<Semaphore> gate_;
  std::atomic<bool> taken_{false}, released_{false};
};

class Device : public RefCounted {
 public:
  const DeviceInfo& info() const { return info_; }
  int queue_count() const { return info_.queue_count; }
  QueueAffinity queue_mask() const {
    return info_.queue_count >= 64
               ? ~QueueAffinity{0}
               : ((QueueAffinity{1} << info_.queue_count) - 1);
  }
  Allocator* allocator() const { return allocator_.get(); }
  // Storage blocks for this device's command buffers (hal/block_pool.h).
  BlockPool* block_pool() const { return block_pool_.get(); }

  StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value);
  StatusOr<Ref<Event>> CreateEvent();
  // INVALID_ARGUMENT for an affinity with no queue of this device.
  StatusOr<Ref<CommandBuffer>> CreateCommandBuffer(CommandBufferMode mode,
                                                   CommandCategory categories,
                                                   QueueAffinity affinity,
                                                   uint32_t binding_capacity);
  // A cache that prepares executables for this device (see
  // hal/executable.h). UNIMPLEMENTED for a driver without one.
  StatusOr<Ref<ExecutableCache>> CreateExecutableCache();

  // Returns a buffer at once; its memory is committed when the waits are
  // reached. Using it before (from the host) is FAILED_PRECONDITION; queue
  // operations ordered after the alloca by semaphores may use it. If a wait
  // fails (or had failed already), the buffer is never committed.
  StatusOr<Ref<Buffer>> QueueAlloca(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal,
                                    const BufferParams& params,
                                    DeviceSize size);
  // Releases the memory after the waits. Any later use of the buffer is
  // FAILED_PRECONDITION, as is a second dealloca; a dealloca racing with the
  // commit of the buffer's alloca is accepted. If a wait fails the memory is
  // not freed and the buffer is usable again (at once when the wait had
  // failed before the call).
  Status QueueDealloca(QueueAffinity affinity, SemaphoreList wait,
                       SemaphoreList signal, Buffer* buffer);
  Status QueueFill(QueueAffinity affinity, SemaphoreList wait,
                   SemaphoreList signal, Buffer* target, DeviceSize offset,
                   DeviceSize length, const void* pattern,
                   size_t pattern_length);
  // The bytes are copied before this returns. Any length is accepted (no
  // limit beyond the buffer's range); the default implementation records
  // it as UpdateBuffer commands of at most kMaxUpdateBytes (64 KiB) each.
  Status QueueUpdate(QueueAffinity affinity, SemaphoreList wait,
                     SemaphoreList signal, const void* source, Buffer* target,
                     DeviceSize offset, DeviceSize length);
  Status QueueCopy(QueueAffinity affinity, SemaphoreList wait,
                   SemaphoreList signal, Buffer* source,
                   DeviceSize source_offset, Buffer* target,
                   DeviceSize target_offset, DeviceSize length);
  Status QueueRead(QueueAffinity affinity, SemaphoreList wait,
                   SemaphoreList signal, File* source, uint64_t source_offset,
                   Buffer* target, DeviceSize target_offset, DeviceSize length);
  Status QueueWrite(QueueAffinity affinity, SemaphoreList wait,
                    SemaphoreList signal, Buffer* source,
                    DeviceSize source_offset, File* target,
                    uint64_t target_offset, DeviceSize length);
  // `command_buffer` may be null (then this is a barrier). The queue is one
  // that the affinity, the command buffer's and every buffer it uses
  // (directly or through `bindings`) allow; INVALID_ARGUMENT when none (the
  // rule of every queue operation that takes buffers: Buffer::
  // queue_affinity).
  Status QueueExecute(QueueAffinity affinity, SemaphoreList wait,
                      SemaphoreList signal, CommandBuffer* command_buffer,
                      BindingTable bindings = {});
  // One dispatch, validated as CommandBuffer::Dispatch is (the bindings must
  // be direct buffers: there is no binding table). Kernel faults found while
  // it runs (the simulator's out-of-bounds checks) fail the signals.
  Status QueueDispatch(QueueAffinity affinity, SemaphoreList wait,
                       SemaphoreList signal, const DispatchParams& params);
  // Runs `fn` on a driver thread once the waits are reached; its error
  // fails the signals.
  //
  // What a host call may wait on (the one statement of the rule; the docs
  // point here, and every driver follows it): `fn` may block on anything
  // that completes without `fn` returning first: work on other queues, host
  // calls on other queues, other host threads (a semaphore the host
  // signals). Later work of its own queue that does not wait on `fn`'s
  // signals is driver-dependent, and portable code does not wait on it:
  // cuda, hip, level_zero, amdgpu and metal run their host calls beside
  // the queue and run that work meanwhile; sim (both modes) keeps it
  // behind `fn` (a worker per queue), so the wait times out. The CTS checks
  // each driver's side (Submission.HostCallWaitingOnLaterWorkOfItsOwnQueue,
  // tag host_call_runs_own_queue). It must not wait on:
  // - later work that waits, directly or not, on `fn`'s signals: that
  //   deadlocks until the wait's timeout, on every driver;
  // - a host call that itself waits, directly or not, on progress of `fn`
  //   (two host calls on two queues handing a token back and forth while
  //   both run): in the deterministic simulator a waiting host call runs
  //   other queues' work inside its wait, on its own thread, so the inner
  //   one cannot see the outer one move again; it times out.
  // The deterministic simulator's side of this: docs/simulator.md.
  Status QueueHostCall(QueueAffinity affinity, SemaphoreList wait,
                       SemaphoreList signal, HostCallFn fn);
  Status QueueBarrier(QueueAffinity affinity, SemaphoreList wait,
                      SemaphoreList signal);
  // Hint: submit anything batched for these queues now.
  Status QueueFlush(QueueAffinity affinity);

  // Blocks until every operation submitted so far has finished (or failed).
  Status WaitIdle(Timeout timeout);

  // Testing: holds the next queue operation of `kind` ("queue_fill",
  // "queue_copy", "queue_execute", "queue_host_call", "queue_alloca", ...:
  // the names of the wait-for graph; "" for any) submitted on this device
  // from now: it is handed to the driver with one more wait, on a
  // semaphore of this device that OperationHold::Resume signals. Works on
  // every driver (the hold is in this layer). An operation whose own wait
  // has already failed is failed at submission and takes no hold. Holds
  // are taken in the order they were made.
  StatusOr<Ref<OperationHold>> HoldNextOperation(std::string kind);

 protected:
  Device(DeviceInfo info, Ref<Allocator> allocator)
      : info_(std::move(info)), allocator_(std::move(allocator)) {}
  ~Device() override;

  // The lowest queue in a validated affinity.
  static int FirstQueue(QueueAffinity affinity);

  virtual StatusOr<Ref<Semaphore>> CreateSemaphoreImpl(uint64_t initial_value);
  virtual StatusOr<Ref<ExecutableCache>> CreateExecutableCacheImpl();
  // `params` are resolved (QueryCompatibility) and allocatable.
  virtual StatusOr<Ref<Buffer>> QueueAllocaImpl(QueueAffinity affinity,
                                                SemaphoreList wait,
                                                SemaphoreList signal,
                                                const BufferParams& params,
                                                DeviceSize size) = 0;
  virtual Status QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal, Buffer* buffer) = 0;
  // Fill, update and copy default to a one-shot command buffer through
  // QueueExecuteImpl; drivers override them where they have a faster path.
  virtual Status QueueFillImpl(QueueAffinity affinity, SemaphoreList wait,
                               SemaphoreList signal, Buffer* target,
                               DeviceSize offset, DeviceSize length,
                               const void* pattern, size_t pattern_length);
  virtual Status QueueUpdateImpl(QueueAffinity affinity, SemaphoreList wait,
                                 SemaphoreList signal, const void* source,
                                 Buffer* target, DeviceSize offset,
                                 DeviceSize length);
  virtual Status QueueCopyImpl(QueueAffinity affinity, SemaphoreList wait,
                               SemaphoreList signal, Buffer* source,
                               DeviceSize source_offset, Buffer* target,
                               DeviceSize target_offset, DeviceSize length);
  // Defaults to a one-shot dispatch command buffer through QueueExecuteImpl.
  // `params` has the queue validated only; recording validates the rest.
  virtual Status QueueDispatchImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal,
                                   const DispatchParams& params);
  virtual Status QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                               SemaphoreList signal, File* source,
                               uint64_t source_offset, Buffer* target,
                               DeviceSize target_offset, DeviceSize length) = 0;
  virtual Status QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                                SemaphoreList signal, Buffer* source,
                                DeviceSize source_offset, File* target,
                                uint64_t target_offset, DeviceSize length) = 0;
  // `command_buffer` is null for a barrier; it has passed ValidateSubmission.
  virtual Status QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                                  SemaphoreList signal,
                                  CommandBuffer* command_buffer,
                                  BindingTable bindings) = 0;
  virtual Status QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal, HostCallFn fn) = 0;
  virtual Status QueueFlushImpl(QueueAffinity /*affinity*/) {
    return OkStatus();
  }
  virtual Status WaitIdleImpl(Timeout timeout) = 0;

 private:
  Status ValidateQueue(QueueAffinity affinity, SemaphoreList wait,
                       SemaphoreList signal, QueueAffinity* out_affinity) const;
  // The status of the first wait semaphore that has failed, or OK.
  static Status FailedWait(SemaphoreList wait);
  static void FailSignals(SemaphoreList signal, const Status& status);
  // A wait that has failed already decides the operation now: fails every
  // signal with its status (the driver is not involved) and returns true.
  static bool FailedAtSubmission(SemaphoreList wait, SemaphoreList signal);
  // Records a submitted operation in the wait-for graph (hal/wait_graph.h)
  // when `submitted` is OK and the graph is on; returns `submitted`.
  Status Track(const char* kind, QueueAffinity affinity, SemaphoreList wait,
               SemaphoreList signal, Status submitted) const;

  // `*wait` plus the gate of the first pending hold for `kind`, if any
  // (stored in `held`, which must outlive the submission).
  void ApplyHold(const char* kind, SemaphoreList* wait,
                 std::vector<SemaphorePoint>* held);

  DeviceInfo info_;
  Ref<Allocator> allocator_;
  Ref<BlockPool> block_pool_ = BlockPool::Create();
  std::mutex holds_mutex_;
  std::vector<Ref<OperationHold>> holds_;  // made, not yet taken
  std::atomic<size_t> hold_count_{0};
};

}  // namespace hal

// The ...Impl overrides, declared in one list each, so that no driver's
// header repeats the argument lists above: a driver's device class expands
// HAL_DEVICE_IMPL_OVERRIDES (what every driver defines) and, where it has
// its own path for transfers, HAL_DEVICE_TRANSFER_IMPL_OVERRIDES.
// clang-format off
#define HAL_DEVICE_IMPL_OVERRIDES \
  ::hal::StatusOr<::hal::Ref<::hal::Semaphore>> CreateSemaphoreImpl(uint64_t initial_value) override; \
  ::hal::StatusOr<::hal::Ref<::hal::ExecutableCache>> CreateExecutableCacheImpl() override; \
  ::hal::StatusOr<::hal::Ref<::hal::Buffer>> QueueAllocaImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, const ::hal::BufferParams& params, ::hal::DeviceSize size) override; \
  ::hal::Status QueueDeallocaImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::Buffer* buffer) override; \
  ::hal::Status QueueReadImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::File* source, uint64_t source_offset, ::hal::Buffer* target, ::hal::DeviceSize target_offset, ::hal::DeviceSize length) override; \
  ::hal::Status QueueWriteImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::Buffer* source, ::hal::DeviceSize source_offset, ::hal::File* target, uint64_t target_offset, ::hal::DeviceSize length) override; \
  ::hal::Status QueueExecuteImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::CommandBuffer* command_buffer, ::hal::BindingTable bindings) override; \
  ::hal::Status QueueHostCallImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::HostCallFn fn) override; \
  ::hal::Status WaitIdleImpl(::hal::Timeout timeout) override;
#define HAL_DEVICE_TRANSFER_IMPL_OVERRIDES \
  ::hal::Status QueueFillImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::Buffer* target, ::hal::DeviceSize offset, ::hal::DeviceSize length, const void* pattern, size_t pattern_length) override; \
  ::hal::Status QueueUpdateImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, const void* source, ::hal::Buffer* target, ::hal::DeviceSize offset, ::hal::DeviceSize length) override; \
  ::hal::Status QueueCopyImpl(::hal::QueueAffinity affinity, ::hal::SemaphoreList wait, ::hal::SemaphoreList signal, ::hal::Buffer* source, ::hal::DeviceSize source_offset, ::hal::Buffer* target, ::hal::DeviceSize target_offset, ::hal::DeviceSize length) override;
// clang-format on
