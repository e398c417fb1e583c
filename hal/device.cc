#include "hal/device.h"

#include <bit>
#include <cstring>

#include "hal/wait_graph.h"

namespace hal {

int Device::FirstQueue(QueueAffinity affinity) {
  return affinity ? std::countr_zero(affinity) : 0;
}

// The usual case (valid lists, no failed semaphore) is one pass over each
// list with inline payload loads; the messages are found by the slow path.
Status Device::ValidateQueue(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal,
                             QueueAffinity* out_affinity) const {
  QueueAffinity masked = affinity & queue_mask();
  if (masked == 0) {
    return InvalidArgumentError(
        "queue affinity 0x%llx selects none of the device's %d queue(s)",
        (unsigned long long)affinity, queue_count());
  }
  for (const SemaphorePoint& p : wait) {
    if (!p.semaphore) return ValidateSemaphoreList(wait, "wait");
  }
  for (const SemaphorePoint& p : signal) {
    if (!p.semaphore) return ValidateSemaphoreList(signal, "signal");
  }
  for (size_t i = 0; i < signal.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (signal[j].semaphore == signal[i].semaphore) {
        return InvalidArgumentError(
            "signal semaphores %zu and %zu are the same semaphore; a signal "
            "list names each semaphore once",
            j, i);
      }
    }
    // A failed semaphore is no misuse: the signal will simply not happen.
    uint64_t payload;
    if (signal[i].semaphore->LoadPayload(&payload) &&
        signal[i].value <= payload) {
      return InvalidArgumentError(
          "signal semaphore %zu: value %llu is not above its current payload "
          "%llu",
          i, (unsigned long long)signal[i].value, (unsigned long long)payload);
    }
  }
  *out_affinity = masked;
  return OkStatus();
}

Status Device::FailedWait(SemaphoreList wait) {
  for (const SemaphorePoint& p : wait) {
    uint64_t payload;
    if (!p.semaphore->LoadPayload(&payload)) {
      StatusOr<uint64_t> failed = p.semaphore->Query();
      if (!failed.ok()) return failed.status();
    }
  }
  return OkStatus();
}

void Device::FailSignals(SemaphoreList signal, const Status& status) {
  for (const SemaphorePoint& p : signal) p.semaphore->Fail(status);
}

bool Device::FailedAtSubmission(SemaphoreList wait, SemaphoreList signal) {
  Status failed = FailedWait(wait);
  if (failed.ok()) return false;
  FailSignals(signal, failed);
  return true;
}

Device::~Device() { WaitGraphForget(this); }

Status Device::Track(const char* kind, QueueAffinity affinity,
                     SemaphoreList wait, SemaphoreList signal,
                     Status submitted) const {
  if (submitted.ok() && WaitGraphEnabled()) {
    WaitGraphRecord(this, kind, affinity, wait, signal);
  }
  return submitted;
}

StatusOr<Ref<Semaphore>> Device::CreateSemaphore(uint64_t initial_value) {
  return CreateSemaphoreImpl(initial_value);
}

StatusOr<Ref<Semaphore>> Device::CreateSemaphoreImpl(uint64_t initial_value) {
  return Semaphore::Create(initial_value);
}

StatusOr<Ref<Event>> Device::CreateEvent() { return Event::Create(); }

StatusOr<Ref<ExecutableCache>> Device::CreateExecutableCache() {
  return CreateExecutableCacheImpl();
}

StatusOr<Ref<ExecutableCache>> Device::CreateExecutableCacheImpl() {
  return UnimplementedError("driver '%s' has no executable cache",
                            info_.driver.c_str());
}

StatusOr<Ref<CommandBuffer>> Device::CreateCommandBuffer(
    CommandBufferMode mode, CommandCategory categories, QueueAffinity affinity,
    uint32_t binding_capacity) {
  if ((affinity & queue_mask()) == 0) {
    return InvalidArgumentError(
        "command buffer affinity 0x%llx selects none of the device's queues",
        (unsigned long long)affinity);
  }
  return CommandBuffer::Create(mode, categories, affinity & queue_mask(),
                               binding_capacity, block_pool());
}

StatusOr<Ref<Buffer>> Device::QueueAlloca(QueueAffinity affinity,
                                          SemaphoreList wait,
                                          SemaphoreList signal,
                                          const BufferParams& params,
                                          DeviceSize size) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  HAL_RETURN_IF_ERROR(allocator()->ValidateParams(params));
  BufferParams resolved;
  if (!Any(allocator()->QueryCompatibility(params, size, &resolved) &
           BufferCompatibility::kAllocatable)) {
    return InvalidArgumentError(
        "queue_alloca: cannot allocate %llu bytes of %s with usage %s",
        (unsigned long long)size, MemoryTypeString(params.type).c_str(),
        BufferUsageString(params.usage).c_str());
  }
  Status failed = FailedWait(wait);
  if (!failed.ok()) {
    // The driver still makes the buffer; its op sees the failed wait and
    // never commits the memory. The signals fail now, not behind the queue.
    HAL_ASSIGN_OR_RETURN(Ref<Buffer> buffer,
                         QueueAllocaImpl(q, wait, {}, resolved, size));
    FailSignals(signal, failed);
    return buffer;
  }
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_alloca", &wait, &held);
  auto buffer = QueueAllocaImpl(q, wait, signal, resolved, size);
  if (buffer.ok()) {
    Track("queue_alloca", q, wait, signal, OkStatus()).IgnoreError();
  }
  return buffer;
}

Status Device::QueueDealloca(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal, Buffer* buffer) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  if (!buffer) return InvalidArgumentError("queue_dealloca of a null buffer");
  if (buffer->allocated_buffer() != buffer) {
    return InvalidArgumentError(
        "queue_dealloca of a subspan; pass the allocated buffer");
  }
  // One transition, so an alloca committing meanwhile cannot make it fail.
  HAL_RETURN_IF_ERROR(buffer->BeginDealloca());
  Status failed = FailedWait(wait);
  if (!failed.ok()) {
    // The dealloca does not happen: the buffer stays usable.
    buffer->CancelDealloca();
    FailSignals(signal, failed);
    return OkStatus();
  }
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_dealloca", &wait, &held);
  Status s = QueueDeallocaImpl(q, wait, signal, buffer);
  if (!s.ok()) buffer->CancelDealloca();
  return Track("queue_dealloca", q, wait, signal, std::move(s));
}

namespace {
Status ValidateFill(Buffer* target, DeviceSize offset, DeviceSize length,
                    const void* pattern, size_t pattern_length,
                    DeviceSize* out_length) {
  if (!target) return InvalidArgumentError("queue_fill of a null buffer");
  if (!pattern) return InvalidArgumentError("queue_fill: pattern is null");
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError(
        "queue_fill: pattern length %zu is not 1, 2 or 4", pattern_length);
  }
  HAL_RETURN_IF_ERROR(target->ValidateAccess(
      BufferUsage::kTransferTarget, offset, length, out_length, "queue_fill"));
  // Alignment is a property of the address: a subspan's own offset counts.
  DeviceSize absolute = target->byte_offset() + offset;
  if (absolute % pattern_length || *out_length % pattern_length) {
    return InvalidArgumentError(
        "queue_fill: offset %llu in the allocation (%llu in the buffer) and "
        "length %llu must be multiples of the pattern length %zu",
        (unsigned long long)absolute, (unsigned long long)offset,
        (unsigned long long)*out_length, pattern_length);
  }
  return OkStatus();
}

Status ValidateExplicit(DeviceSize length, const char* what) {
  if (length == kWholeBuffer) {
    return InvalidArgumentError("%s: length must be explicit", what);
  }
  return OkStatus();
}
}  // namespace

Status Device::QueueFill(QueueAffinity affinity, SemaphoreList wait,
                         SemaphoreList signal, Buffer* target,
                         DeviceSize offset, DeviceSize length,
                         const void* pattern, size_t pattern_length) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  DeviceSize resolved;
  HAL_RETURN_IF_ERROR(
      ValidateFill(target, offset, length, pattern, pattern_length, &resolved));
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(target, "queue_fill", &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_fill", &wait, &held);
  return Track("queue_fill", q, wait, signal,
               QueueFillImpl(q, wait, signal, target, offset, resolved, pattern,
                             pattern_length));
}

Status Device::QueueUpdate(QueueAffinity affinity, SemaphoreList wait,
                           SemaphoreList signal, const void* source,
                           Buffer* target, DeviceSize offset,
                           DeviceSize length) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  HAL_RETURN_IF_ERROR(ValidateExplicit(length, "queue_update"));
  if (!target) return InvalidArgumentError("queue_update of a null buffer");
  if (!source && length)
    return InvalidArgumentError("queue_update: source is null");
  DeviceSize resolved;
  HAL_RETURN_IF_ERROR(target->ValidateAccess(
      BufferUsage::kTransferTarget, offset, length, &resolved, "queue_update"));
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(target, "queue_update", &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_update", &wait, &held);
  return Track(
      "queue_update", q, wait, signal,
      QueueUpdateImpl(q, wait, signal, source, target, offset, length));
}

Status Device::QueueCopy(QueueAffinity affinity, SemaphoreList wait,
                         SemaphoreList signal, Buffer* source,
                         DeviceSize source_offset, Buffer* target,
                         DeviceSize target_offset, DeviceSize length) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  HAL_RETURN_IF_ERROR(ValidateExplicit(length, "queue_copy"));
  if (!source || !target)
    return InvalidArgumentError("queue_copy of a null buffer");
  DeviceSize r;
  HAL_RETURN_IF_ERROR(source->ValidateAccess(BufferUsage::kTransferSource,
                                             source_offset, length, &r,
                                             "queue_copy source"));
  HAL_RETURN_IF_ERROR(target->ValidateAccess(BufferUsage::kTransferTarget,
                                             target_offset, length, &r,
                                             "queue_copy target"));
  if (source->allocated_buffer() == target->allocated_buffer() && length) {
    DeviceSize s = source->byte_offset() + source_offset;
    DeviceSize d = target->byte_offset() + target_offset;
    if (s < d + length && d < s + length) {
      return InvalidArgumentError(
          "queue_copy: source and target ranges overlap");
    }
  }
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(source, "queue_copy source", &q));
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(target, "queue_copy target", &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_copy", &wait, &held);
  return Track("queue_copy", q, wait, signal,
               QueueCopyImpl(q, wait, signal, source, source_offset, target,
                             target_offset, length));
}

Status Device::QueueRead(QueueAffinity affinity, SemaphoreList wait,
                         SemaphoreList signal, File* source,
                         uint64_t source_offset, Buffer* target,
                         DeviceSize target_offset, DeviceSize length) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  HAL_RETURN_IF_ERROR(ValidateExplicit(length, "queue_read"));
  if (!source) return InvalidArgumentError("queue_read of a null file");
  if (!target) return InvalidArgumentError("queue_read into a null buffer");
  if (!source->can_read()) {
    return PermissionDeniedError("queue_read: file was not opened for reading");
  }
  DeviceSize r;
  HAL_RETURN_IF_ERROR(target->ValidateAccess(BufferUsage::kTransferTarget,
                                             target_offset, length, &r,
                                             "queue_read target"));
  HAL_ASSIGN_OR_RETURN(uint64_t file_length, source->Length());
  if (source_offset > file_length || length > file_length - source_offset) {
    return OutOfRangeError(
        "queue_read: [%llu, +%llu) past the end of the file (%llu bytes)",
        (unsigned long long)source_offset, (unsigned long long)length,
        (unsigned long long)file_length);
  }
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(target, "queue_read target", &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_read", &wait, &held);
  return Track("queue_read", q, wait, signal,
               QueueReadImpl(q, wait, signal, source, source_offset, target,
                             target_offset, length));
}

Status Device::QueueWrite(QueueAffinity affinity, SemaphoreList wait,
                          SemaphoreList signal, Buffer* source,
                          DeviceSize source_offset, File* target,
                          uint64_t target_offset, DeviceSize length) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  HAL_RETURN_IF_ERROR(ValidateExplicit(length, "queue_write"));
  if (!source) return InvalidArgumentError("queue_write of a null buffer");
  if (!target) return InvalidArgumentError("queue_write into a null file");
  if (!target->can_write()) {
    return PermissionDeniedError(
        "queue_write: file was not opened for writing");
  }
  DeviceSize r;
  HAL_RETURN_IF_ERROR(source->ValidateAccess(BufferUsage::kTransferSource,
                                             source_offset, length, &r,
                                             "queue_write source"));
  if (!target->grows()) {
    HAL_ASSIGN_OR_RETURN(uint64_t file_length, target->Length());
    if (target_offset > file_length || length > file_length - target_offset) {
      return OutOfRangeError(
          "queue_write: [%llu, +%llu) past the end of the file (%llu bytes)",
          (unsigned long long)target_offset, (unsigned long long)length,
          (unsigned long long)file_length);
    }
  }
  HAL_RETURN_IF_ERROR(NarrowQueueAffinity(source, "queue_write source", &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_write", &wait, &held);
  return Track("queue_write", q, wait, signal,
               QueueWriteImpl(q, wait, signal, source, source_offset, target,
                              target_offset, length));
}

Status Device::QueueExecute(QueueAffinity affinity, SemaphoreList wait,
                            SemaphoreList signal, CommandBuffer* command_buffer,
                            BindingTable bindings) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  if (command_buffer) {
    if ((command_buffer->queue_affinity() & q) == 0) {
      return InvalidArgumentError(
          "queue_execute: affinity 0x%llx does not intersect the command "
          "buffer's 0x%llx",
          (unsigned long long)q,
          (unsigned long long)command_buffer->queue_affinity());
    }
    q &= command_buffer->queue_affinity();
    // Before ValidateSubmission, which marks a one-shot buffer submitted.
    HAL_RETURN_IF_ERROR(command_buffer->NarrowAffinity(bindings, &q));
    HAL_RETURN_IF_ERROR(command_buffer->ValidateSubmission(bindings));
  }
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_execute", &wait, &held);
  return Track("queue_execute", q, wait, signal,
               QueueExecuteImpl(q, wait, signal, command_buffer, bindings));
}

Status Device::QueueDispatch(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal,
                             const DispatchParams& params) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  for (size_t i = 0; i < params.bindings.size(); ++i) {
    if (params.bindings[i].is_slot()) {
      return InvalidArgumentError(
          "queue_dispatch: binding %zu is a binding-table slot; queue_dispatch "
          "has no binding table",
          i);
    }
  }
  if (params.indirect_workgroup_count &&
      params.indirect_workgroup_count->is_slot()) {
    return InvalidArgumentError(
        "queue_dispatch: the indirect workgroup count is a binding-table slot");
  }
  for (const BufferRef& b : params.bindings) {
    HAL_RETURN_IF_ERROR(
        NarrowQueueAffinity(b.buffer, "queue_dispatch binding", &q));
  }
  if (params.indirect_workgroup_count) {
    HAL_RETURN_IF_ERROR(
        NarrowQueueAffinity(params.indirect_workgroup_count->buffer,
                            "queue_dispatch workgroup count", &q));
  }
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_dispatch", &wait, &held);
  return Track("queue_dispatch", q, wait, signal,
               QueueDispatchImpl(q, wait, signal, params));
}

Status Device::QueueHostCall(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal, HostCallFn fn) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  if (!fn) return InvalidArgumentError("queue_host_call: function is empty");
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_host_call", &wait, &held);
  return Track("queue_host_call", q, wait, signal,
               QueueHostCallImpl(q, wait, signal, std::move(fn)));
}

Status Device::QueueBarrier(QueueAffinity affinity, SemaphoreList wait,
                            SemaphoreList signal) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, wait, signal, &q));
  if (FailedAtSubmission(wait, signal)) return OkStatus();
  std::vector<SemaphorePoint> held;
  ApplyHold("queue_barrier", &wait, &held);
  return Track("queue_barrier", q, wait, signal,
               QueueExecuteImpl(q, wait, signal, nullptr, {}));
}

Status Device::QueueFlush(QueueAffinity affinity) {
  QueueAffinity q;
  HAL_RETURN_IF_ERROR(ValidateQueue(affinity, {}, {}, &q));
  return QueueFlushImpl(q);
}

Status Device::WaitIdle(Timeout timeout) { return WaitIdleImpl(timeout); }

void OperationHold::Resume() {
  if (released_.exchange(true)) return;
  gate_->Signal(1).IgnoreError();  // a failed gate fails the held op
}

StatusOr<Ref<OperationHold>> Device::HoldNextOperation(std::string kind) {
  HAL_ASSIGN_OR_RETURN(Ref<Semaphore> gate, CreateSemaphore(0));
  Ref<OperationHold> hold =
      Ref<OperationHold>::Adopt(new OperationHold(std::move(kind), gate));
  std::lock_guard<std::mutex> lock(holds_mutex_);
  holds_.push_back(hold);
  hold_count_.fetch_add(1);
  return hold;
}

void Device::ApplyHold(const char* kind, SemaphoreList* wait,
                       std::vector<SemaphorePoint>* held) {
  if (hold_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(holds_mutex_);
  for (auto it = holds_.begin(); it != holds_.end(); ++it) {
    const std::string& want = (*it)->kind();
    if (!want.empty() && want != kind) continue;
    held->assign(wait->begin(), wait->end());
    held->push_back({(*it)->gate_.get(), 1});
    *wait = SemaphoreList(held->data(), held->size());
    (*it)->taken_.store(true);
    holds_.erase(it);
    hold_count_.fetch_sub(1);
    return;
  }
}

// The default transfer implementations record a one-shot command buffer, so
// a driver that can execute command buffers gets every transfer for free.
namespace {
template <typename RecordFn>
StatusOr<Ref<CommandBuffer>> RecordTransient(
    BlockPool* pool, QueueAffinity affinity, RecordFn record,
    CommandCategory category = CommandCategory::kTransfer) {
  HAL_ASSIGN_OR_RETURN(Ref<CommandBuffer> cb,
                       CommandBuffer::Create(CommandBufferMode::kOneShot,
                                             category, affinity, 0, pool));
  HAL_RETURN_IF_ERROR(cb->Begin());
  HAL_RETURN_IF_ERROR(record(cb.get()));
  HAL_RETURN_IF_ERROR(cb->End());
  HAL_RETURN_IF_ERROR(cb->ValidateSubmission({}));
  return cb;
}
}  // namespace

Status Device::QueueFillImpl(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal, Buffer* target,
                             DeviceSize offset, DeviceSize length,
                             const void* pattern, size_t pattern_length) {
  HAL_ASSIGN_OR_RETURN(
      Ref<CommandBuffer> cb,
      RecordTransient(block_pool(), affinity, [&](CommandBuffer* c) {
        return c->FillBuffer(BufferRef::Direct(target, offset, length), pattern,
                             pattern_length);
      }));
  return QueueExecuteImpl(affinity, wait, signal, cb.get(), {});
}

Status Device::QueueUpdateImpl(QueueAffinity affinity, SemaphoreList wait,
                               SemaphoreList signal, const void* source,
                               Buffer* target, DeviceSize offset,
                               DeviceSize length) {
  HAL_ASSIGN_OR_RETURN(
      Ref<CommandBuffer> cb,
      RecordTransient(block_pool(), affinity, [&](CommandBuffer* c) {
        const uint8_t* src = static_cast<const uint8_t*>(source);
        for (DeviceSize done = 0; done < length; done += kMaxUpdateBytes) {
          DeviceSize n = std::min(kMaxUpdateBytes, length - done);
          HAL_RETURN_IF_ERROR(c->UpdateBuffer(
              src + done, BufferRef::Direct(target, offset + done, n)));
        }
        return OkStatus();
      }));
  return QueueExecuteImpl(affinity, wait, signal, cb.get(), {});
}

Status Device::QueueCopyImpl(QueueAffinity affinity, SemaphoreList wait,
                             SemaphoreList signal, Buffer* source,
                             DeviceSize source_offset, Buffer* target,
                             DeviceSize target_offset, DeviceSize length) {
  HAL_ASSIGN_OR_RETURN(
      Ref<CommandBuffer> cb,
      RecordTransient(block_pool(), affinity, [&](CommandBuffer* c) {
        return c->CopyBuffer(BufferRef::Direct(source, source_offset, length),
                             BufferRef::Direct(target, target_offset, length),
                             length);
      }));
  return QueueExecuteImpl(affinity, wait, signal, cb.get(), {});
}

Status Device::QueueDispatchImpl(QueueAffinity affinity, SemaphoreList wait,
                                 SemaphoreList signal,
                                 const DispatchParams& params) {
  HAL_ASSIGN_OR_RETURN(Ref<CommandBuffer> cb, RecordTransient(
                                                  block_pool(), affinity,
                                                  [&](CommandBuffer* c) {
                                                    return c->Dispatch(params);
                                                  },
                                                  CommandCategory::kDispatch));
  return QueueExecuteImpl(affinity, wait, signal, cb.get(), {});
}

}  // namespace hal
