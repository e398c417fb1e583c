#include "drivers/sim/sim_device.h"

#include <cinttypes>
#include <cstdio>
#include <random>
#include <typeinfo>

#include "drivers/sim/sim_command_buffer.h"
#include "drivers/sim/sim_executable.h"
#include "drivers/sim/sim_range.h"

namespace hal::sim {

namespace {

// A semaphore with a per-device id, so traces name semaphores the same way
// in every run.
class SimSemaphore final : public Semaphore {
 public:
  SimSemaphore(uint64_t initial_value, uint64_t id)
      : Semaphore(initial_value), id_(id) {}
  uint64_t id() const { return id_; }

 private:
  uint64_t id_;
};

// Op names, hashed into trace tokens at compile time.
constexpr TraceToken kQueueAlloca{"queue_alloca"};
constexpr TraceToken kQueueDealloca{"queue_dealloca"};
constexpr TraceToken kQueueRead{"queue_read"};
constexpr TraceToken kQueueWrite{"queue_write"};
constexpr TraceToken kQueueExecute{"queue_execute"};
constexpr TraceToken kQueueBarrier{"queue_barrier"};
constexpr TraceToken kQueueHostCall{"queue_host_call"};

}  // namespace

SimDevice::SimDevice(DeviceInfo info, Ref<SimAllocator> allocator,
                     const SimDeviceOptions& options,
                     std::shared_ptr<SimContext> context)
    : Device(std::move(info), Ref<Allocator>(allocator)),
      options_(options),
      context_(std::move(context)),
      sim_allocator_(allocator.get()),
      scheduler_(options.mode == SimMode::kThreaded
                     ? CreateThreadedScheduler(options.queue_count, context_)
                     : CreateDeterministicScheduler(context_)) {}

SimDevice::~SimDevice() { scheduler_->Shutdown(); }

StatusOr<Ref<Device>> SimDevice::Create(const DeviceUri& uri) {
  HAL_RETURN_IF_ERROR(uri.CheckKnownParams(
      {"queues", "memory_mb", "seed", "mode", "check", "trace", "workers",
       "fail_alloc", "alloc_fail_ppm", "fail_op", "op_fail_ppm", "slow_ppm",
       "lose_device_at"}));
  if (uri.devices.size() > 1 ||
      (uri.devices.size() == 1 && uri.devices[0] != "0")) {
    return NotFoundError("sim has one device, 'sim:0'; got '%s'",
                         uri.ToString().c_str());
  }
  SimDeviceOptions options;
  HAL_ASSIGN_OR_RETURN(uint64_t queues,
                       uri.GetUint("queues", 2, 1, kMaxQueues));
  HAL_ASSIGN_OR_RETURN(uint64_t memory_mb,
                       uri.GetUint("memory_mb", 4096, 1, 1u << 24));
  HAL_ASSIGN_OR_RETURN(options.checking, uri.GetBool("check", true));
  HAL_ASSIGN_OR_RETURN(uint64_t workers, uri.GetUint("workers", 1, 1, 64));
  HAL_ASSIGN_OR_RETURN(options.faults, SimFaultPlan::FromUri(uri));
  options.queue_count = static_cast<int>(queues);
  options.device_memory_bytes = memory_mb << 20;
  options.workers = static_cast<int>(workers);
  if (auto it = uri.params.find("mode"); it != uri.params.end()) {
    if (it->second == "deterministic") {
      options.mode = SimMode::kDeterministic;
    } else if (it->second == "threaded") {
      options.mode = SimMode::kThreaded;
    } else {
      return InvalidArgumentError(
          "sim mode '%s' is not 'deterministic' or 'threaded'",
          it->second.c_str());
    }
  }
  if (auto it = uri.params.find("trace"); it != uri.params.end()) {
    options.trace_path = it->second;
  }
  DeviceUri canonical = uri;
  if (uri.has_param("seed")) {
    HAL_ASSIGN_OR_RETURN(options.seed, uri.GetUint("seed", 0));
  } else {
    std::random_device rd;
    options.seed = (uint64_t{rd()} << 32) ^ rd();
    canonical.params["seed"] = std::to_string(options.seed);
    std::fprintf(stderr,
                 "sim: no seed given; drew seed=%" PRIu64 " (replay: %s)\n",
                 options.seed, canonical.ToString().c_str());
  }
  return Create(options, canonical.ToString());
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
  info.properties["mode"] =
      options.mode == SimMode::kThreaded ? "threaded" : "deterministic";
  info.properties["checking"] = options.checking ? "on" : "off";
  auto context = std::make_shared<SimContext>(
      options.seed, options.checking, options.faults, options.trace_path);
  auto allocator = SimAllocator::Create(options.device_memory_bytes, context);
  return Ref<Device>::Adopt(
      new SimDevice(std::move(info), std::move(allocator), options, context));
}

StatusOr<Ref<Semaphore>> SimDevice::CreateSemaphoreImpl(
    uint64_t initial_value) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(context_->mutex());
    id = context_->NextBufferId();  // one id space for buffers and semaphores
    TraceLine(*context_) << "create semaphore s" << id << "=" << initial_value;
  }
  return Ref<Semaphore>::Adopt(new SimSemaphore(initial_value, id));
}

StatusOr<Ref<ExecutableCache>> SimDevice::CreateExecutableCacheImpl() {
  return CreateSimExecutableCache(options_.workers);
}

// Inline for the device's own semaphores (the usual case): the line's hash
// stays in a register.
inline void SimDevice::AppendSemaphore(TraceLine& line, Semaphore* semaphore) {
  // SimSemaphore is final: a type check is enough (dynamic_cast walks the
  // hierarchy, twice per queue operation).
  if (typeid(*semaphore) == typeid(SimSemaphore)) [[likely]] {
    line << "s" << static_cast<SimSemaphore*>(semaphore)->id();
    return;
  }
  AppendForeignSemaphore(line, semaphore);
}

void SimDevice::AppendForeignSemaphore(TraceLine& line, Semaphore* semaphore) {
  for (const auto& [sem, id] : foreign_semaphores_) {
    if (sem.get() == semaphore) {
      line << "x" << id;
      return;
    }
  }
  uint64_t id = foreign_semaphores_.size() + 1;
  foreign_semaphores_.emplace_back(Ref<Semaphore>(semaphore), id);
  line << "x" << id;
}

std::unique_ptr<SimOp> SimDevice::NewOp(const TraceToken& name,
                                        QueueAffinity affinity,
                                        SemaphoreList wait,
                                        SemaphoreList signal) {
  auto op = std::make_unique<SimOp>();
  op->name = &name;
  op->queue = FirstQueue(affinity);
  op->SetPoints(wait, signal);
  return op;
}

void SimDevice::Submit(std::unique_ptr<SimOp> op) {
  // Numbered and traced under the scheduler's lock, as it takes the op.
  scheduler_->Submit(std::move(op), &SimDevice::AdmitOp, this);
}

void SimDevice::AdmitOp(void* arg, SimOp& op) {
  auto* self = static_cast<SimDevice*>(arg);
  op.id = ++self->next_op_id_;
  TraceLine line(*self->context_);
  line << "submit " << *op.name << "#" << op.id << " q"
       << static_cast<uint64_t>(op.queue) << " wait[";
  for (const SemaphorePoint& p : op.waits) {
    self->AppendSemaphore(line, p.semaphore);
    line << ">=" << p.value << " ";
  }
  line << "] signal[";
  for (auto& [sem, value] : op.signals) {
    self->AppendSemaphore(line, sem.get());
    line << "=" << value << " ";
  }
  line << "]";
  for (const SimAccess& a : op.accesses) {
    line << (a.free    ? " F#"
             : a.write ? " W#"
                       : " R#")
         << a.buffer_id << "[" << a.offset << "+" << a.length << "]";
  }
}

StatusOr<Ref<Buffer>> SimDevice::QueueAllocaImpl(QueueAffinity affinity,
                                                 SemaphoreList wait,
                                                 SemaphoreList signal,
                                                 const BufferParams& params,
                                                 DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(Ref<SimBuffer> buffer,
                       sim_allocator_->CreateReserved(params, size));
  auto op = NewOp(kQueueAlloca, affinity, wait, signal);
  op->run = [buffer]() -> Status {
    HAL_RETURN_IF_ERROR(buffer->Commit());
    // A dealloca may already be queued behind us; it keeps its state.
    buffer->MarkCommitted();
    return OkStatus();
  };
  Submit(std::move(op));
  return Ref<Buffer>(std::move(buffer));
}

Status SimDevice::QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, Buffer* buffer) {
  Ref<SimBuffer> sim_buffer(static_cast<SimBuffer*>(buffer));
  auto op = NewOp(kQueueDealloca, affinity, wait, signal);
  op->AddAccess(buffer, sim_buffer->id(), 0, buffer->byte_length(), true,
                /*free=*/true);
  op->run = [sim_buffer]() -> Status {
    sim_buffer->Decommit();
    sim_buffer->MarkFreed();
    return OkStatus();
  };
  op->abandon = [sim_buffer](const Status&) {
    // The dealloca did not happen: the buffer is usable again.
    sim_buffer->CancelDealloca();
  };
  Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                                SemaphoreList signal, File* source,
                                uint64_t source_offset, Buffer* target,
                                DeviceSize target_offset, DeviceSize length) {
  auto op = NewOp(kQueueRead, affinity, wait, signal);
  Buffer* root = target->allocated_buffer();
  DeviceSize offset = target->byte_offset() + target_offset;
  op->AddAccess(root, SimBufferId(root), offset, length, true);
  op->run = [file = Ref<File>(source), target = Ref<Buffer>(target),
             source_offset, target_offset, length]() -> Status {
    HAL_ASSIGN_OR_RETURN(
        SimRange r,
        ResolveSimRange(BufferRef::Direct(target.get(), target_offset, length),
                        {}, kWholeBuffer, "queue_read"));
    return file->Read(source_offset, r.data, length);
  };
  Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                                 SemaphoreList signal, Buffer* source,
                                 DeviceSize source_offset, File* target,
                                 uint64_t target_offset, DeviceSize length) {
  auto op = NewOp(kQueueWrite, affinity, wait, signal);
  Buffer* root = source->allocated_buffer();
  DeviceSize offset = source->byte_offset() + source_offset;
  op->AddAccess(root, SimBufferId(root), offset, length, false);
  op->run = [file = Ref<File>(target), source = Ref<Buffer>(source),
             source_offset, target_offset, length]() -> Status {
    HAL_ASSIGN_OR_RETURN(
        SimRange r,
        ResolveSimRange(BufferRef::Direct(source.get(), source_offset, length),
                        {}, kWholeBuffer, "queue_write"));
    return file->Write(target_offset, r.data, length);
  };
  Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal,
                                   CommandBuffer* command_buffer,
                                   BindingTable bindings) {
  auto op = NewOp(command_buffer ? kQueueExecute : kQueueBarrier, affinity,
                  wait, signal);
  // An empty command buffer has no work to plan or run (planning one draws
  // nothing and traces nothing): the op is a barrier under its name.
  if (command_buffer && !command_buffer->commands().empty()) {
    std::vector<Binding> table(bindings.begin(), bindings.end());
    for (const Command& c : command_buffer->commands()) {
      CommandAccesses(c, table, &op->accesses);
    }
    for (const SimAccess& a : op->accesses) op->retained.emplace_back(a.buffer);
    // Keep the table's buffers alive until the work ran.
    for (const Binding& b : table) op->retained.emplace_back(b.buffer);
    // The label names the op by the id AdmitOp gives it under the
    // scheduler's lock; it is read when the op runs, which is after that.
    // (Reading next_op_id_ here raced with other threads' submissions.)
    op->run = [cb = Ref<CommandBuffer>(command_buffer),
               table = std::move(table), context = context_,
               op = op.get()]() -> Status {
      const std::string label =
          std::string(op->name->view()) + "#" + std::to_string(op->id);
      std::vector<size_t> order;
      {
        std::lock_guard<std::mutex> lock(context->mutex());
        HAL_ASSIGN_OR_RETURN(order,
                             PlanCommandBuffer(*cb, table, label, *context));
      }
      return ExecuteCommandBuffer(*cb, table, order);
    };
  }
  Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, HostCallFn fn) {
  auto op = NewOp(kQueueHostCall, affinity, wait, signal);
  op->run = std::move(fn);
  Submit(std::move(op));
  return OkStatus();
}

Status SimDevice::WaitIdleImpl(Timeout timeout) {
  return scheduler_->WaitIdle(timeout);
}

Status RegisterSimDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "sim";
  factory.description =
      "deterministic CPU simulator (every HAL concept on host memory, seeded "
      "scheduling, hazard checks, faults)";
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
  factory.try_create = [](const DeviceUri& uri) {
    return SimDevice::Create(uri);
  };
  return registry->Register(std::move(factory));
}

StatusOr<SimDevice*> AsSimDevice(Device* device) {
  auto* sim = dynamic_cast<SimDevice*>(device);
  if (!sim) return InvalidArgumentError("not a simulator device");
  return sim;
}

StatusOr<uint64_t> SimSeed(Device* device) {
  HAL_ASSIGN_OR_RETURN(SimDevice * sim, AsSimDevice(device));
  return sim->options().seed;
}

StatusOr<uint64_t> SimTraceHash(Device* device) {
  HAL_ASSIGN_OR_RETURN(SimDevice * sim, AsSimDevice(device));
  std::lock_guard<std::mutex> lock(sim->context().mutex());
  return sim->context().trace_hash();
}

StatusOr<uint64_t> SimVirtualTimeNs(Device* device) {
  HAL_ASSIGN_OR_RETURN(SimDevice * sim, AsSimDevice(device));
  std::lock_guard<std::mutex> lock(sim->context().mutex());
  return sim->context().now_ns();
}

StatusOr<std::vector<std::string>> SimCheckerReports(Device* device) {
  HAL_ASSIGN_OR_RETURN(SimDevice * sim, AsSimDevice(device));
  std::lock_guard<std::mutex> lock(sim->context().mutex());
  return sim->context().reports();
}

Status SimSetFaults(Device* device, const SimFaultPlan& plan) {
  HAL_ASSIGN_OR_RETURN(SimDevice * sim, AsSimDevice(device));
  std::lock_guard<std::mutex> lock(sim->context().mutex());
  sim->context().set_faults(plan);
  return OkStatus();
}

}  // namespace hal::sim
