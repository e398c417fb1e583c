// MetalDevice (metal_device.h): queue operations as MTLCommandBuffers,
// with encoded event waits where committed work will signal the value and
// host waits for the others.
#include "drivers/metal/metal_device.h"

#include <cstring>
#include <deque>
#include <thread>
#include <utility>

#include "drivers/metal/metal_allocator.h"
#include "drivers/metal/metal_buffer.h"
#include "drivers/metal/metal_encoder.h"
#include "drivers/metal/metal_executable.h"
#include "drivers/metal/metal_semaphore.h"
#include "hal/utils/file_staging.h"
#include "hal/utils/queue_op.h"

namespace hal::metal {

// One queue operation from submission to its signals.
struct MetalOp {
  MetalDevice* device;
  int queue = 0;
  // Signals ended on the host after `on_done` (queue_alloca, dealloca and
  // host calls), not encoded into the command buffer.
  bool host_signals = false;
  // Runs when the operation ends (OK, or the failure it ended with),
  // before its host signals.
  // Its error fails the host signals.
  std::function<Status(const Status&)> on_done;
  // A host call: runs on the queue's host-call thread after the waits.
  HostCallFn host_fn;
  // The work, encoded when the operation is committed: at submission when
  // no wait is held on the host, else once the last one is reached (a
  // buffer of a queue_alloca the operation waits for exists only then).
  std::function<Status(Encoder&)> encode;
  id<MTLCommandBuffer> cb = nil;  // retained until committed
  std::vector<utils::RetainedPoint> device_waits, signals;
  std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> timepoints;
  std::atomic<int> open{1};  // host waits + 1 for the submission itself
  std::mutex mutex;
  Status failure;  // the first failed host wait
};

// A file transfer's staging: a Shared MTLBuffer (nil for 0 bytes).
struct MetalDevice::FileStage {
  id<MTLBuffer> buffer = nil;  // owned by `memory` (released before this)
  std::shared_ptr<utils::FileStaging> memory;
};

// Runs the host calls of one queue, in order, on their own thread: a host
// call may block on other queues' work, whose completion handlers run on
// Metal's thread.
class MetalDevice::HostCallWorker {
 public:
  explicit HostCallWorker(MetalDevice* device)
      : device_(device), thread_([this] { Main(); }) {}
  ~HostCallWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Post(MetalOp* op) {
    std::lock_guard<std::mutex> lock(mutex_);
    ops_.push_back(op);
    cv_.notify_all();
  }

 private:
  void Main() {
    for (;;) {
      MetalOp* op;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !ops_.empty(); });
        if (ops_.empty()) return;
        op = ops_.front();
        ops_.pop_front();
      }
      Status status = op->host_fn();
      utils::CompleteSignals(op->signals, status);
      device_->Finish(op);
    }
  }
  MetalDevice* device_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<MetalOp*> ops_;
  bool stop_ = false;
  std::thread thread_;
};

StatusOr<Ref<Device>> MetalDevice::Create(const DeviceUri& uri) {
  HAL_RETURN_IF_ERROR(uri.CheckKnownParams({"queues", "managed"}));
  HAL_ASSIGN_OR_RETURN(uint64_t queues, uri.GetUint("queues", 1, 1, 64));
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (!device) {
      return UnavailableError(
          "Metal: MTLCreateSystemDefaultDevice returned nil (no Metal "
          "device)");
    }
    // Managed storage where the GPU has its own memory (an Intel Mac with
    // a discrete GPU); `managed=1` selects it anywhere (the simulated
    // framework gives Managed buffers two copies either way).
    StatusOr<bool> managed = uri.GetBool("managed", ![device hasUnifiedMemory]);
    if (!managed.ok()) {
      [device release];
      return managed.status();
    }
    DeviceInfo info;
    info.driver = "metal";
    info.name = [[device name] UTF8String];
    info.uri = "metal:0";
    info.memory_bytes = [device recommendedMaxWorkingSetSize];
    info.queue_count = static_cast<int>(queues);
    Ref<Allocator> allocator =
        Ref<Allocator>::Adopt(new MetalAllocator(device, *managed));
    auto* d = new MetalDevice(std::move(info), std::move(allocator), device);
    [device release];
    return Ref<Device>::Adopt(d);
  }
}

MetalDevice::~MetalDevice() {
  std::vector<MetalOp*> held;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (MetalOp* op : held_) {
      // Pins the operation (it cannot end while the count is above 0).
      int n = op->open.load();
      while (n > 0 && !op->open.compare_exchange_weak(n, n + 1)) {
      }
      if (n > 0) held.push_back(op);
    }
  }
  for (MetalOp* op : held) {
    std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> points;
    {
      std::lock_guard<std::mutex> lock(op->mutex);
      points = op->timepoints;
    }
    for (auto& [semaphore, id] : points) {
      if (semaphore->CancelTimepoint(id)) {
        HostWaitDone(op, CancelledError("Metal: the device was destroyed"));
      }
    }
    HostWaitDone(op, OkStatus());  // unpins
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
  }
  workers_.clear();
  @autoreleasepool {
    for (id<MTLCommandQueue> q : queues_) [q release];
    [listener_ release];
    [device_ release];
  }
}

void MetalDevice::HostWaitDone(MetalOp* op, const Status& status) {
  bool first_failure = false;
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(op->mutex);
    if (op->failure.ok()) {
      op->failure = status;
      first_failure = true;
    }
  }
  if (first_failure) CancelHostWaits(op);
  if (op->open.fetch_sub(1) == 1) Release(op);
}

void MetalDevice::CancelHostWaits(MetalOp* op) {
  std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> points;
  {
    std::lock_guard<std::mutex> lock(op->mutex);
    points = op->timepoints;
  }
  for (auto& [semaphore, id] : points) {
    if (semaphore->CancelTimepoint(id)) op->open.fetch_sub(1);
  }
}

StatusOr<Ref<Semaphore>> MetalDevice::CreateSemaphoreImpl(uint64_t initial) {
  @autoreleasepool {
    id<MTLSharedEvent> event = [device_ newSharedEvent];
    if (!event) return InternalError("Metal: newSharedEvent returned nil");
    Ref<Semaphore> s =
        Ref<Semaphore>::Adopt(new MetalSemaphore(event, initial));
    [event release];
    return s;
  }
}

StatusOr<Ref<ExecutableCache>> MetalDevice::CreateExecutableCacheImpl() {
  return Ref<ExecutableCache>::Adopt(new MetalExecutableCache(device_));
}

Status MetalDevice::QueueFillImpl(QueueAffinity affinity, SemaphoreList wait,
                                  SemaphoreList signal, Buffer* target,
                                  DeviceSize offset, DeviceSize length,
                                  const void* pattern, size_t pattern_length) {
  uint32_t p = 0;
  std::memcpy(&p, pattern, pattern_length);
  const DeviceSize off = target->byte_offset() + offset;
  return Submit(
      affinity, wait, signal,
      [t = Ref<Buffer>(target), off, length, p, pattern_length](Encoder& e) {
        return e.Fill(t.get(), off, length, p, pattern_length);
      });
}

Status MetalDevice::QueueUpdateImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, const void* source,
                                    Buffer* target, DeviceSize offset,
                                    DeviceSize length) {
  const DeviceSize off = target->byte_offset() + offset;
  const auto* bytes = static_cast<const uint8_t*>(source);
  return Submit(affinity, wait, signal,
                [data = std::vector<uint8_t>(bytes, bytes + length),
                 t = Ref<Buffer>(target), off, length](Encoder& e) {
                  return e.Update(data.data(), t.get(), off, length);
                });
}

Status MetalDevice::QueueCopyImpl(QueueAffinity affinity, SemaphoreList wait,
                                  SemaphoreList signal, Buffer* source,
                                  DeviceSize source_offset, Buffer* target,
                                  DeviceSize target_offset, DeviceSize length) {
  const DeviceSize so = source->byte_offset() + source_offset;
  const DeviceSize to = target->byte_offset() + target_offset;
  return Submit(
      affinity, wait, signal,
      [s = Ref<Buffer>(source), t = Ref<Buffer>(target), so, to, length](
          Encoder& e) { return e.Copy(s.get(), so, t.get(), to, length); });
}

Status MetalDevice::QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                                     SemaphoreList signal,
                                     CommandBuffer* command_buffer,
                                     BindingTable bindings) {
  std::vector<Binding> table(bindings.begin(), bindings.end());
  std::vector<Ref<Buffer>> keep;
  for (const Binding& b : table) keep.emplace_back(b.buffer);
  return Submit(affinity, wait, signal,
                [cb = Ref<CommandBuffer>(command_buffer),
                 table = std::move(table), keep = std::move(keep)](Encoder& e) {
                  return cb ? e.Commands(cb.get(), table) : OkStatus();
                });
}

StatusOr<Ref<Buffer>> MetalDevice::QueueAllocaImpl(QueueAffinity affinity,
                                                   SemaphoreList wait,
                                                   SemaphoreList signal,
                                                   const BufferParams& params,
                                                   DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(
      Ref<Buffer> buffer,
      static_cast<MetalAllocator*>(allocator())->Reserve(params, size));
  auto op = std::make_unique<MetalOp>();
  op->host_signals = true;
  op->on_done = [buffer](const Status& status) -> Status {
    if (!status.ok()) return status;
    HAL_RETURN_IF_ERROR(static_cast<MetalBuffer*>(buffer.get())->Commit());
    // A dealloca may already be queued behind it; it keeps its state.
    buffer->MarkCommitted();
    return OkStatus();
  };
  HAL_RETURN_IF_ERROR(Submit(
      affinity, wait, signal, [](Encoder&) { return OkStatus(); },
      std::move(op)));
  return buffer;
}

Status MetalDevice::QueueDeallocaImpl(QueueAffinity affinity,
                                      SemaphoreList wait, SemaphoreList signal,
                                      Buffer* buffer) {
  Ref<MetalBuffer> metal(
      dynamic_cast<MetalBuffer*>(buffer->allocated_buffer()));
  if (!metal) return InvalidArgumentError("Metal: a buffer of another driver");
  auto op = std::make_unique<MetalOp>();
  op->host_signals = true;
  op->on_done = [metal](const Status& status) {
    if (status.ok()) {
      metal->Decommit();
      metal->MarkFreed();
    } else {
      // The dealloca did not happen: the buffer is usable again.
      metal->CancelDealloca();
    }
    return OkStatus();
  };
  return Submit(
      affinity, wait, signal, [](Encoder&) { return OkStatus(); },
      std::move(op));
}

Status MetalDevice::QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                                  SemaphoreList signal, File* source,
                                  uint64_t source_offset, Buffer* target,
                                  DeviceSize target_offset, DeviceSize length) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<FileStage> stage, NewStage(length));
  utils::StagedHalves halves;
  HAL_RETURN_IF_ERROR(QueueHostCallImpl(
      affinity, wait, halves.list(),
      [file = Ref<File>(source), stage, source_offset]() -> Status {
        return stage->memory->ReadFrom(*file, source_offset);
      }));
  const DeviceSize offset = target->byte_offset() + target_offset;
  return Submit(affinity, halves.list(), signal,
                [stage, t = Ref<Buffer>(target), offset, length](Encoder& e) {
                  return e.CopyFrom(stage->buffer, t.get(), offset, length);
                });
}

Status MetalDevice::QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal, Buffer* source,
                                   DeviceSize source_offset, File* target,
                                   uint64_t target_offset, DeviceSize length) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<FileStage> stage, NewStage(length));
  utils::StagedHalves halves;
  const DeviceSize offset = source->byte_offset() + source_offset;
  HAL_RETURN_IF_ERROR(
      Submit(affinity, wait, halves.list(),
             [stage, s = Ref<Buffer>(source), offset, length](Encoder& e) {
               return e.CopyTo(s.get(), offset, stage->buffer, length);
             }));
  return QueueHostCallImpl(
      affinity, halves.list(), signal,
      [file = Ref<File>(target), stage, target_offset]() -> Status {
        return stage->memory->WriteTo(*file, target_offset);
      });
}

Status MetalDevice::QueueHostCallImpl(QueueAffinity affinity,
                                      SemaphoreList wait, SemaphoreList signal,
                                      HostCallFn fn) {
  auto op = std::make_unique<MetalOp>();
  op->host_signals = true;
  op->host_fn = std::move(fn);
  return Submit(
      affinity, wait, signal, [](Encoder&) { return OkStatus(); },
      std::move(op));
}

Status MetalDevice::WaitIdleImpl(Timeout timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto idle = [&] { return in_flight_ == 0; };
  if (timeout.is_infinite()) {
    idle_cv_.wait(lock, idle);
  } else if (!idle_cv_.wait_until(lock, timeout.deadline(), idle)) {
    return DeadlineExceededError("Metal: the device is still busy");
  }
  return OkStatus();
}

MetalDevice::MetalDevice(DeviceInfo info, Ref<Allocator> allocator,
                         id<MTLDevice> device)
    : Device(std::move(info), std::move(allocator)),
      device_([device retain]),
      listener_([[MTLSharedEventListener alloc] init]) {
  for (int i = 0; i < queue_count(); ++i) {
    queues_.push_back([device_ newCommandQueue]);
    workers_.push_back(std::make_unique<HostCallWorker>(this));
  }
}

StatusOr<std::shared_ptr<MetalDevice::FileStage>> MetalDevice::NewStage(
    DeviceSize length) {
  auto stage = std::make_shared<FileStage>();
  id<MTLDevice> device = device_;
  FileStage* raw = stage.get();
  HAL_ASSIGN_OR_RETURN(
      stage->memory,
      utils::FileStaging::Create(
          length,
          [device, raw](DeviceSize n, void** host) -> Status {
            raw->buffer =
                [device newBufferWithLength:(NSUInteger)n
                                    options:MTLResourceStorageModeShared];
            if (!raw->buffer) {
              return ResourceExhaustedError(
                  "Metal: a %llu-byte file staging buffer",
                  (unsigned long long)n);
            }
            *host = [raw->buffer contents];
            return OkStatus();
          },
          [buffer_of = raw](void*) {
            @autoreleasepool {
              [buffer_of->buffer release];
            }
          }));
  return stage;
}

Status MetalDevice::Submit(QueueAffinity affinity, SemaphoreList wait,
                           SemaphoreList signal,
                           std::function<Status(Encoder&)> encode,
                           std::unique_ptr<MetalOp> op) {
  if (!op) op = std::make_unique<MetalOp>();
  op->encode = std::move(encode);
  op->device = this;
  op->queue = FirstQueue(affinity);
  std::vector<SemaphorePoint> host_waits;
  @autoreleasepool {
    id<MTLCommandBuffer> cb = [queues_[op->queue] commandBuffer];
    for (const SemaphorePoint& w : wait) {
      MetalSemaphore* m = AsMetal(w.semaphore);
      if (w.semaphore->Reached(w.value)) continue;
      if (m && m->pending_signal() >= w.value) {
        [cb encodeWaitForEvent:m->event() value:w.value];
        op->device_waits.emplace_back(Ref<Semaphore>(w.semaphore), w.value);
        encoded_waits_.fetch_add(1, std::memory_order_relaxed);
      } else {
        host_waits.push_back(w);
        host_waits_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    utils::RetainPoints(signal, &op->signals);
    op->cb = [cb retain];
    // Nothing held: encode now, so that an error is returned with
    // nothing enqueued.
    if (host_waits.empty()) {
      Status status = EncodeWork(op.get());
      if (!status.ok()) {
        [op->cb release];
        return status;
      }
    }
  }
  MetalOp* raw = op.release();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
    if (!host_waits.empty()) held_.insert(raw);
  }
  raw->open.fetch_add(static_cast<int>(host_waits.size()));
  for (const SemaphorePoint& w : host_waits) {
    Semaphore::TimepointId id = w.semaphore->NotifyAt(
        w.value, [raw](const Status& s) { raw->device->HostWaitDone(raw, s); });
    if (id != 0) {
      std::lock_guard<std::mutex> lock(raw->mutex);
      raw->timepoints.emplace_back(Ref<Semaphore>(w.semaphore), id);
    }
  }
  bool failed;
  {
    std::lock_guard<std::mutex> lock(raw->mutex);
    failed = !raw->failure.ok();
  }
  // A wait failed while the others were being registered.
  if (failed) CancelHostWaits(raw);
  HostWaitDone(raw, OkStatus());  // the submission's own count
  return OkStatus();
}

Status MetalDevice::EncodeWork(MetalOp* op) {
  {
    Encoder encoder(device_, op->cb);
    HAL_RETURN_IF_ERROR(op->encode(encoder));
    encoder.SynchronizeManaged();
  }
  op->encode = nullptr;
  if (!op->host_signals) {
    for (auto& [semaphore, value] : op->signals) {
      if (MetalSemaphore* m = AsMetal(semaphore.get())) {
        [op->cb encodeSignalEvent:m->event() value:value];
      }
    }
  }
  return OkStatus();
}

void MetalDevice::Release(MetalOp* op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase(op);
  }
  Status failure;
  {
    std::lock_guard<std::mutex> lock(op->mutex);
    failure = op->failure;
  }
  @autoreleasepool {
    if (failure.ok() && op->encode) failure = EncodeWork(op);
    if (!failure.ok()) {
      [op->cb release];  // never committed
      if (op->on_done) op->on_done(failure).IgnoreError();
      utils::CompleteSignals(op->signals, failure);
      Finish(op);
      return;
    }
    // Noted once committed: an operation encodes a wait only for a
    // value that committed work will signal (never one behind it on an
    // in-order Metal queue). `op` may be gone once committed.
    std::vector<utils::RetainedPoint> signals = op->signals;
    const bool host_signals = op->host_signals;
    id<MTLCommandBuffer> cb = op->cb;
    // The payload of a semaphore follows its event: a listener signals
    // it when the command buffer's encoded signal raised the event (the
    // listener blocks and completion handlers run in order on one
    // thread, so a chain across queues signals in order), unless a wait
    // the command buffer encoded had failed.
    auto waits =
        std::make_shared<std::vector<utils::RetainedPoint>>(op->device_waits);
    for (auto& [semaphore, value] : signals) {
      MetalSemaphore* m = AsMetal(semaphore.get());
      if (!m || op->host_signals) continue;
      std::shared_ptr<SemaphoreToken> token = m->token();
      const uint64_t v = value;
      [m->event()
          notifyListener:listener_
                 atValue:v
                   block:^(id<MTLSharedEvent>, uint64_t) {
                     Status status;
                     for (auto& [w, wv] : *waits) {
                       Status f;
                       if (utils::CheckWait(*w, wv, &f) ==
                           utils::WaitState::kFailed) {
                         status = f;
                         break;
                       }
                     }
                     std::lock_guard<std::recursive_mutex> lock(token->mutex);
                     if (token->semaphore) {
                       utils::CompleteSignal(*token->semaphore, v, status);
                     }
                   }];
    }
    [cb addCompletedHandler:^(id<MTLCommandBuffer> done) {
      Completed(op, done);
    }];
    [cb commit];
    [cb release];
    // Host signals come later, from the host, and may fail: waits for
    // them stay on the host, so that a failure stops the work behind.
    for (auto& [semaphore, value] : signals) {
      MetalSemaphore* m = AsMetal(semaphore.get());
      if (m && !host_signals) m->NoteCommittedSignal(value);
    }
  }
}

// The signals of Metal semaphores were ended by their listeners when the
// command buffer succeeded (they ran before this handler); a failed
// command buffer raised no event, so its signals fail here.
void MetalDevice::Completed(MetalOp* op, id<MTLCommandBuffer> cb) {
  const bool failed = [cb status] == MTLCommandBufferStatusError;
  Status status =
      failed ? DataLossError("Metal: the command buffer failed on the device")
             : OkStatus();
  // A wait released by its semaphore's failure (OnFailed).
  for (auto& [semaphore, value] : op->device_waits) {
    Status f;
    if (status.ok() &&
        utils::CheckWait(*semaphore, value, &f) == utils::WaitState::kFailed) {
      status = f;
    }
  }
  if (op->host_fn && status.ok()) {
    workers_[op->queue]->Post(op);
    return;
  }
  if (op->on_done) {
    Status done = op->on_done(status);
    if (status.ok()) status = done;
  }
  for (auto& [semaphore, value] : op->signals) {
    if (op->host_signals || failed || !AsMetal(semaphore.get())) {
      utils::CompleteSignal(*semaphore, value, status);
    }
  }
  Finish(op);
}

void MetalDevice::Finish(MetalOp* op) {
  delete op;
  std::lock_guard<std::mutex> lock(mutex_);
  if (--in_flight_ == 0) idle_cv_.notify_all();
}

}  // namespace hal::metal
