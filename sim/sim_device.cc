#include "sim/sim_device.h"

#include <cstring>
#include <variant>

namespace hal::sim {

StatusOr<uint8_t*> SimStorage(Buffer* allocated, DeviceSize offset,
                              DeviceSize length, const char* what) {
  BufferState state = allocated->state();
  if (state == BufferState::kFreed) {
    return FailedPreconditionError("%s: buffer used after its dealloca ran", what);
  }
  uint8_t* base = allocated->host_storage();
  if (!base) {
    if (length == 0) return static_cast<uint8_t*>(nullptr);
    return FailedPreconditionError(
        "%s: buffer memory is not committed (%s); order the use after its "
        "queue_alloca with a semaphore",
        what, BufferStateName(state));
  }
  return base + offset;
}

namespace {

void FillPattern(uint8_t* p, DeviceSize length, uint32_t pattern,
                 size_t pattern_length) {
  if (pattern_length == 1) {
    std::memset(p, static_cast<int>(pattern & 0xFF), length);
    return;
  }
  for (DeviceSize i = 0; i < length; i += pattern_length) {
    std::memcpy(p + i, &pattern, pattern_length);
  }
}

// Replays a recorded command buffer on host memory, in recorded order.
// (Recorded order is one of the orders the HAL allows; the deterministic
// scheduler explores the others.)
Status ExecuteCommands(const CommandBuffer& cb, BindingTable table) {
  for (const Command& c : cb.commands()) {
    if (auto* f = std::get_if<cmd::Fill>(&c)) {
      ResolvedRef r = CommandBuffer::ResolveRef(f->target, table);
      HAL_ASSIGN_OR_RETURN(uint8_t* p, SimStorage(r.buffer, r.offset, r.length, "fill"));
      FillPattern(p, r.length, f->pattern, f->pattern_length);
    } else if (auto* u = std::get_if<cmd::Update>(&c)) {
      ResolvedRef r = CommandBuffer::ResolveRef(u->target, table);
      HAL_ASSIGN_OR_RETURN(uint8_t* p, SimStorage(r.buffer, r.offset, r.length, "update"));
      if (r.length) std::memcpy(p, cb.data().data() + u->data_offset, r.length);
    } else if (auto* cp = std::get_if<cmd::Copy>(&c)) {
      ResolvedRef s = CommandBuffer::ResolveRef(cp->source, table);
      ResolvedRef d = CommandBuffer::ResolveRef(cp->target, table);
      HAL_ASSIGN_OR_RETURN(uint8_t* sp, SimStorage(s.buffer, s.offset, cp->length, "copy source"));
      HAL_ASSIGN_OR_RETURN(uint8_t* dp, SimStorage(d.buffer, d.offset, cp->length, "copy target"));
      if (cp->length) std::memmove(dp, sp, cp->length);
    }
    // Barriers, events and debug groups order nothing further in a serial
    // replay.
  }
  return OkStatus();
}

}  // namespace

SimDevice::SimDevice(DeviceInfo info, Ref<SimAllocator> allocator,
                     const SimDeviceOptions& options)
    : Device(std::move(info), Ref<Allocator>(allocator)),
      sim_allocator_(allocator.get()),
      scheduler_(CreateThreadedScheduler(options.queue_count)) {}

SimDevice::~SimDevice() { scheduler_->Shutdown(); }

StatusOr<Ref<Device>> SimDevice::Create(const DeviceUri& uri) {
  HAL_RETURN_IF_ERROR(uri.CheckKnownParams({"queues", "memory_mb", "seed"}));
  if (uri.devices.size() > 1 || (uri.devices.size() == 1 && uri.devices[0] != "0")) {
    return NotFoundError("sim has one device, 'sim:0'; got '%s'",
                         uri.ToString().c_str());
  }
  SimDeviceOptions options;
  HAL_ASSIGN_OR_RETURN(uint64_t queues, uri.GetUint("queues", 2, 1, kMaxQueues));
  HAL_ASSIGN_OR_RETURN(uint64_t memory_mb, uri.GetUint("memory_mb", 4096, 1, 1u << 24));
  HAL_ASSIGN_OR_RETURN(options.seed, uri.GetUint("seed", 0));
  options.queue_count = static_cast<int>(queues);
  options.device_memory_bytes = memory_mb << 20;
  return Create(options, uri.ToString());
}

StatusOr<Ref<Device>> SimDevice::Create(const SimDeviceOptions& options,
                                        std::string uri) {
  if (options.queue_count < 1 || options.queue_count > kMaxQueues) {
    return InvalidArgumentError("sim queue count %d is not in [1, %d]",
                                options.queue_count, kMaxQueues);
  }
  DeviceInfo info;
  info.driver = "sim";
  info.name = "CPU simulator";
  info.uri = std::move(uri);
  info.uuid = "SIM-00000000-0000-0000-0000-000000000000";
  info.memory_bytes = options.device_memory_bytes;
  info.queue_count = options.queue_count;
  info.properties["seed"] = std::to_string(options.seed);
  info.properties["scheduler"] = "threaded";
  return Ref<Device>::Adopt(new SimDevice(
      std::move(info), SimAllocator::Create(options.device_memory_bytes), options));
}

std::unique_ptr<SimOp> SimDevice::NewOp(const char* name, QueueAffinity affinity,
                                        SemaphoreList wait, SemaphoreList signal) {
  auto op = std::make_unique<SimOp>();
  op->name = name;
  op->queue = FirstQueue(affinity);
  op->SetPoints(wait, signal);
  return op;
}

StatusOr<Ref<Buffer>> SimDevice::QueueAllocaImpl(QueueAffinity affinity,
                                                 SemaphoreList wait,
                                                 SemaphoreList signal,
                                                 const BufferParams& params,
                                                 DeviceSize size) {
  BufferParams resolved;
  if (!Any(allocator()->QueryCompatibility(params, size, &resolved) &
           BufferCompatibility::kAllocatable)) {
    return InvalidArgumentError(
        "queue_alloca: cannot allocate %llu bytes of %s with usage %s",
        (unsigned long long)size, MemoryTypeString(params.type).c_str(),
        BufferUsageString(params.usage).c_str());
  }
  HAL_ASSIGN_OR_RETURN(Ref<SimBuffer> buffer,
                       sim_allocator_->CreateReserved(resolved, size));
  auto op = NewOp("queue_alloca", affinity, wait, signal);
  op->run = [buffer]() -> Status {
    HAL_RETURN_IF_ERROR(buffer->Commit());
    // A dealloca may already be queued behind us; it keeps its state.
    buffer->TransitionState(BufferState::kReserved, BufferState::kLive);
    return OkStatus();
  };
  scheduler_->Submit(std::move(op));
  return Ref<Buffer>(std::move(buffer));
}

Status SimDevice::QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, Buffer* buffer) {
  Ref<SimBuffer> sim_buffer(static_cast<SimBuffer*>(buffer));
  auto op = NewOp("queue_dealloca", affinity, wait, signal);
  op->run = [sim_buffer]() -> Status {
    sim_buffer->Decommit();
    sim_buffer->TransitionState(BufferState::kDeallocaQueued, BufferState::kFreed);
    return OkStatus();
  };
  op->abandon = [sim_buffer](const Status&) {
    // The dealloca did not happen: the buffer is usable again.
    sim_buffer->TransitionState(
        BufferState::kDeallocaQueued,
        sim_buffer->committed() ? BufferState::kLive : BufferState::kReserved);
  };
  scheduler_->Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                                SemaphoreList signal, File* source,
                                uint64_t source_offset, Buffer* target,
                                DeviceSize target_offset, DeviceSize length) {
  auto op = NewOp("queue_read", affinity, wait, signal);
  op->run = [file = Ref<File>(source), buffer = Ref<Buffer>(target),
             source_offset, target_offset, length]() -> Status {
    HAL_ASSIGN_OR_RETURN(
        uint8_t* p, SimStorage(buffer->allocated_buffer(),
                               buffer->byte_offset() + target_offset, length,
                               "queue_read"));
    return file->Read(source_offset, p, length);
  };
  scheduler_->Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                                 SemaphoreList signal, Buffer* source,
                                 DeviceSize source_offset, File* target,
                                 uint64_t target_offset, DeviceSize length) {
  auto op = NewOp("queue_write", affinity, wait, signal);
  op->run = [file = Ref<File>(target), buffer = Ref<Buffer>(source),
             source_offset, target_offset, length]() -> Status {
    HAL_ASSIGN_OR_RETURN(
        uint8_t* p, SimStorage(buffer->allocated_buffer(),
                               buffer->byte_offset() + source_offset, length,
                               "queue_write"));
    return file->Write(target_offset, p, length);
  };
  scheduler_->Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal,
                                   CommandBuffer* command_buffer,
                                   BindingTable bindings) {
  auto op = NewOp(command_buffer ? "queue_execute" : "queue_barrier", affinity,
                  wait, signal);
  if (command_buffer) {
    // Keep the table's buffers alive until the work ran.
    std::vector<Binding> table(bindings.begin(), bindings.end());
    std::vector<Ref<Buffer>> retained;
    retained.reserve(table.size());
    for (const Binding& b : table) retained.emplace_back(b.buffer);
    op->run = [cb = Ref<CommandBuffer>(command_buffer), table = std::move(table),
               retained = std::move(retained)]() -> Status {
      return ExecuteCommands(*cb, table);
    };
  }
  scheduler_->Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, HostCallFn fn) {
  auto op = NewOp("queue_host_call", affinity, wait, signal);
  op->run = std::move(fn);
  scheduler_->Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::WaitIdleImpl(Timeout timeout) {
  return scheduler_->WaitIdle(timeout);
}

Status RegisterSimDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "sim";
  factory.description = "deterministic CPU simulator (every HAL concept on host memory)";
  factory.enumerate = []() -> StatusOr<std::vector<DeviceInfo>> {
    DeviceInfo info;
    info.driver = "sim";
    info.name = "CPU simulator";
    info.uri = "sim:0";
    info.uuid = "SIM-00000000-0000-0000-0000-000000000000";
    info.memory_bytes = DeviceSize{4096} << 20;
    info.queue_count = 2;
    return std::vector<DeviceInfo>{info};
  };
  factory.try_create = [](const DeviceUri& uri) { return SimDevice::Create(uri); };
  return registry->Register(std::move(factory));
}

}  // namespace hal::sim
