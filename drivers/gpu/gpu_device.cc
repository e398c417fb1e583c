#include "drivers/gpu/gpu_device.h"

#include "drivers/gpu/gpu_executable.h"
#include "drivers/gpu/gpu_semaphore.h"
#include "drivers/gpu/gpu_stream_command_buffer.h"
#include "hal/utils/file_staging.h"

namespace hal::gpu {

StatusOr<Ref<Device>> GpuDevice::Create(DeviceInfo info,
                                        std::shared_ptr<GpuApi> api,
                                        const GpuDeviceOptions& options) {
  if (options.queue_count < 1 || options.queue_count > kMaxQueues) {
    return InvalidArgumentError("queue count %d is not in [1, %d]",
                                options.queue_count, kMaxQueues);
  }
  info.queue_count = options.queue_count;
  if (options.graph_command_buffers && !api->SupportsGraphs()) {
    return UnimplementedError(
        "%s: graph command buffers need the library's graph entry points, "
        "which it lacks; use command_buffer_mode=stream",
        api->name());
  }
  auto allocator = GpuAllocator::Create(api, options.device_memory_bytes);
  Ref<GpuDevice> device = Ref<GpuDevice>::Adopt(new GpuDevice(
      std::move(info), std::move(allocator), std::move(api), options));
  HAL_RETURN_IF_ERROR(device->Initialize());
  return Ref<Device>(std::move(device));
}

GpuDevice::GpuDevice(DeviceInfo info, Ref<GpuAllocator> allocator,
                     std::shared_ptr<GpuApi> api,
                     const GpuDeviceOptions& options)
    : Device(std::move(info), Ref<Allocator>(allocator)),
      api_(std::move(api)),
      options_(options),
      gpu_allocator_(allocator.get()),
      events_(std::make_shared<GpuEventPool>(api_)) {}

Status GpuDevice::Initialize() {
  for (int i = 0; i < options_.queue_count; ++i) {
    GpuStream s = nullptr;
    HAL_RETURN_IF_ERROR(api_->StreamCreate(&s));
    streams_.push_back(s);
    HAL_RETURN_IF_ERROR(api_->StreamCreate(&s));
    callback_streams_.push_back(s);
  }
  if (options_.graph_command_buffers) {
    graphs_ =
        std::make_unique<GpuGraphCache>(api_, options_.graph_cache_capacity);
  }
  pending_ = std::make_unique<GpuPendingActions>(api_, events_, streams_,
                                                 callback_streams_, this);
  return OkStatus();
}

GpuDevice::~GpuDevice() {
  // Finishes issued work (and cancels the rest) before the streams go.
  pending_.reset();
  graphs_.reset();
  for (GpuStream s : streams_) {
    api_->StreamSynchronize(s).IgnoreError();
    api_->StreamDestroy(s).IgnoreError();
  }
  for (GpuStream s : callback_streams_) {
    api_->StreamSynchronize(s).IgnoreError();
    api_->StreamDestroy(s).IgnoreError();
  }
}

StatusOr<Ref<Semaphore>> GpuDevice::CreateSemaphoreImpl(
    uint64_t initial_value) {
  return Ref<Semaphore>(GpuSemaphore::Create(initial_value, this));
}

std::unique_ptr<GpuAction> GpuDevice::NewAction(const char* name,
                                                QueueAffinity affinity,
                                                SemaphoreList wait,
                                                SemaphoreList signal) {
  auto action = std::make_unique<GpuAction>();
  action->name = name;
  action->queue = FirstQueue(affinity);
  action->SetPoints(wait, signal);
  return action;
}

StatusOr<Ref<Buffer>> GpuDevice::QueueAllocaImpl(QueueAffinity affinity,
                                                 SemaphoreList wait,
                                                 SemaphoreList signal,
                                                 const BufferParams& params,
                                                 DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(Ref<GpuBuffer> buffer,
                       gpu_allocator_->CreateReserved(params, size));
  auto action = NewAction("queue_alloca", affinity, wait, signal);
  const bool async = options_.async_allocations && api_->SupportsAsyncAlloc();
  action->issue = [buffer, async](GpuStream stream) -> Status {
    return async ? buffer->CommitAsync(stream) : buffer->Commit();
  };
  action->complete = [buffer](Status status) -> Status {
    // A dealloca may already be queued behind us; it keeps its state.
    if (status.ok()) buffer->MarkCommitted();
    return status;
  };
  pending_->Enqueue(std::move(action));
  return Ref<Buffer>(std::move(buffer));
}

Status GpuDevice::QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, Buffer* buffer) {
  auto* gpu_buffer = dynamic_cast<GpuBuffer*>(buffer);
  if (!gpu_buffer) {
    return InvalidArgumentError(
        "queue_dealloca: buffer is not from a %s device", api_->name());
  }
  Ref<GpuBuffer> ref(gpu_buffer);
  auto action = NewAction("queue_dealloca", affinity, wait, signal);
  // Pool memory is freed in stream order; memory from a synchronous
  // allocation is freed once the dealloca's waits completed on the device.
  action->issue = [ref](GpuStream stream) {
    return ref->DecommitAsync(stream);
  };
  action->complete = [ref](Status status) -> Status {
    if (status.ok()) {
      ref->Decommit();
      ref->MarkFreed();
    } else {
      ref->CancelDealloca();
    }
    return status;
  };
  action->abandon = [ref](const Status&) {
    // The dealloca did not happen: the buffer is usable again.
    ref->CancelDealloca();
  };
  pending_->Enqueue(std::move(action));
  return OkStatus();
}

namespace {
// Pinned host memory that a file transfer goes through
// (hal/utils/file_staging.h), and the address the device copies with.
struct Staging {
  std::shared_ptr<utils::FileStaging> memory;
  GpuDevicePtr device = 0;
};

StatusOr<std::shared_ptr<Staging>> NewStaging(std::shared_ptr<GpuApi> api,
                                              DeviceSize length) {
  auto staging = std::make_shared<Staging>();
  HAL_ASSIGN_OR_RETURN(
      staging->memory,
      utils::FileStaging::Create(
          length,
          [&api](DeviceSize n, void** host) {
            return api->MemAllocHost(n, host);
          },
          [api](void* host) { api->MemFreeHost(host).IgnoreError(); }));
  if (length == 0) return staging;
  HAL_RETURN_IF_ERROR(
      api->HostDevicePointer(staging->memory->host(), &staging->device));
  return staging;
}
}  // namespace

Status GpuDevice::QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                                SemaphoreList signal, File* source,
                                uint64_t source_offset, Buffer* target,
                                DeviceSize target_offset, DeviceSize length) {
  // Host half (file -> staging), then the device half (staging -> buffer).
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<Staging> staging,
                       NewStaging(api_, length));
  utils::StagedHalves halves;
  auto host = NewAction("queue_read(file)", affinity, wait, halves.list());
  host->kind = GpuAction::Kind::kHost;
  host->host_work = [file = Ref<File>(source), staging,
                     source_offset]() -> Status {
    return staging->memory->ReadFrom(*file, source_offset);
  };
  auto copy = NewAction("queue_read(copy)", affinity, halves.list(), signal);
  copy->issue = [staging, target = Ref<Buffer>(target), target_offset, length,
                 api = api_.get()](GpuStream stream) -> Status {
    HAL_ASSIGN_OR_RETURN(
        GpuRange dst,
        ResolveGpuRange(BufferRef::Direct(target.get(), target_offset, length),
                        {}, kWholeBuffer, "queue_read"));
    if (length == 0) return OkStatus();
    return api->MemcpyAsync(dst.address, staging->device, length, stream);
  };
  pending_->Enqueue(std::move(host));
  pending_->Enqueue(std::move(copy));
  return OkStatus();
}

Status GpuDevice::QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                                 SemaphoreList signal, Buffer* source,
                                 DeviceSize source_offset, File* target,
                                 uint64_t target_offset, DeviceSize length) {
  // Device half (buffer -> staging), then the host half (staging -> file).
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<Staging> staging,
                       NewStaging(api_, length));
  utils::StagedHalves halves;
  auto copy = NewAction("queue_write(copy)", affinity, wait, halves.list());
  copy->issue = [staging, source = Ref<Buffer>(source), source_offset, length,
                 api = api_.get()](GpuStream stream) -> Status {
    HAL_ASSIGN_OR_RETURN(
        GpuRange src,
        ResolveGpuRange(BufferRef::Direct(source.get(), source_offset, length),
                        {}, kWholeBuffer, "queue_write"));
    if (length == 0) return OkStatus();
    return api->MemcpyAsync(staging->device, src.address, length, stream);
  };
  auto host = NewAction("queue_write(file)", affinity, halves.list(), signal);
  host->kind = GpuAction::Kind::kHost;
  host->host_work = [file = Ref<File>(target), staging,
                     target_offset]() -> Status {
    return staging->memory->WriteTo(*file, target_offset);
  };
  pending_->Enqueue(std::move(copy));
  pending_->Enqueue(std::move(host));
  return OkStatus();
}

Status GpuDevice::QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                                   SemaphoreList signal,
                                   CommandBuffer* command_buffer,
                                   BindingTable bindings) {
  auto action = NewAction(command_buffer ? "queue_execute" : "queue_barrier",
                          affinity, wait, signal);
  if (command_buffer) {
    std::vector<Binding> table(bindings.begin(), bindings.end());
    // The table's buffers must stay alive until the stream passed the work.
    std::vector<Ref<Buffer>> retained;
    for (const Binding& b : table) retained.emplace_back(b.buffer);
    if (graphs_ && !HasIndirectDispatch(*command_buffer)) {
      // The graph (and the pinned payload it reads) is kept by the action
      // until the launch completed.
      action->issue = [cb = Ref<CommandBuffer>(command_buffer),
                       table = std::move(table), retained = std::move(retained),
                       graphs = graphs_.get(),
                       graph = std::shared_ptr<GpuCommandGraph>()](
                          GpuStream stream) mutable -> Status {
        HAL_ASSIGN_OR_RETURN(graph, graphs->Acquire(cb, table));
        if (!graph) return OkStatus();  // nothing to run
        return graphs->Launch(*graph, stream);
      };
    } else {
      action->issue = [cb = Ref<CommandBuffer>(command_buffer),
                       table = std::move(table), retained = std::move(retained),
                       api = api_.get()](GpuStream stream) -> Status {
        return ReplayCommandBufferOnStream(api, stream, *cb, table);
      };
    }
  }
  pending_->Enqueue(std::move(action));
  return OkStatus();
}

Status GpuDevice::QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait,
                                    SemaphoreList signal, HostCallFn fn) {
  auto action = NewAction("queue_host_call", affinity, wait, signal);
  action->kind = GpuAction::Kind::kHost;
  action->host_work = std::move(fn);
  pending_->Enqueue(std::move(action));
  return OkStatus();
}

Status GpuDevice::WaitIdleImpl(Timeout timeout) {
  return pending_->WaitIdle(timeout);
}

StatusOr<Ref<ExecutableCache>> GpuDevice::CreateExecutableCacheImpl() {
  return CreateGpuExecutableCache(api_);
}

}  // namespace hal::gpu
