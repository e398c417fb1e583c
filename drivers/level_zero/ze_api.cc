#include "drivers/level_zero/ze_api.h"

#include <algorithm>
#include <cstring>

#include "drivers/level_zero/ze_api_internal.h"
#include "drivers/level_zero/ze_status.h"
#include "hal/formats/spirv_reader.h"

namespace hal::level_zero {

using formats::ParseSpirvKernels;
using formats::SpirvKernel;

StatusOr<std::shared_ptr<ZeApi>> ZeApi::Create(
    std::shared_ptr<const ZeSymbols> syms, ze_driver_handle_t driver,
    ze_device_handle_t device) {
  std::shared_ptr<ZeApi> api(new ZeApi(std::move(syms), driver, device));
  HAL_RETURN_IF_ERROR(api->Initialize());
  return api;
}

Status ZeApi::Initialize() {
  ze_context_desc_t cd = {};
  cd.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
  ZE(zeContextCreate(driver_, &cd, &context_), "%s", "");
  uint32_t groups = 0;
  ZE(zeDeviceGetCommandQueueGroupProperties(device_, &groups, nullptr), "%s",
     "");
  std::vector<ze_command_queue_group_properties_t> props(groups);
  for (auto& p : props) {
    p = {};
    p.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  ZE(zeDeviceGetCommandQueueGroupProperties(device_, &groups, props.data()),
     "%s", "");
  bool found = false;
  for (uint32_t i = 0; i < groups && !found; ++i) {
    if (props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      compute_ordinal_ = i;
      compute_queues_ = props[i].numQueues ? props[i].numQueues : 1;
      found = true;
    }
  }
  if (!found) {
    return UnavailableError(
        "level_zero: the device has no compute engine group");
  }
  host_thread_ = std::thread([this] { HostFunctionMain(); });
  return OkStatus();
}

ZeApi::~ZeApi() {
  if (host_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(host_mutex_);
      stopping_ = true;
    }
    host_cv_.notify_all();
    host_thread_.join();
  }
  {
    std::lock_guard<std::mutex> lock(graph_mutex_);
    ReclaimGraphLaunchesLocked(/*wait=*/true);
    for (auto& [stream, queue] : graph_queues_) {
      syms_->zeCommandQueueDestroy(queue);
    }
  }
  for (auto& [stream, slot] : last_release_) ReleaseSlot(slot);
  for (auto& slot : slots_) {
    if (slot->event) syms_->zeEventDestroy(slot->event);
  }
  for (ze_event_pool_handle_t pool : pools_) syms_->zeEventPoolDestroy(pool);
  if (context_) syms_->zeContextDestroy(context_);
}

StatusOr<ZeApi::Slot*> ZeApi::AcquireSlot() {
  std::lock_guard<std::mutex> lock(slots_mutex_);
  if (free_slots_.empty()) {
    ze_event_pool_desc_t pd = {};
    pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = kEventsPerPool;
    ze_event_pool_handle_t pool = nullptr;
    ZE(zeEventPoolCreate(context_, &pd, 1, &device_, &pool),
       "creating %u events", kEventsPerPool);
    pools_.push_back(pool);
    for (uint32_t i = 0; i < kEventsPerPool; ++i) {
      ze_event_desc_t ed = {};
      ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
      ed.index = i;
      ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
      ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
      auto slot = std::make_unique<Slot>();
      ZE(zeEventCreate(pool, &ed, &slot->event), "event %u", i);
      free_slots_.push_back(slot.get());
      slots_.push_back(std::move(slot));
    }
  }
  Slot* slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void ZeApi::ReleaseSlot(Slot* slot) {
  // Every signal and wait of the slot completed (the callers' rule), so a
  // reset on the host cannot race with the device.
  if (syms_->zeEventHostReset(slot->event) != ZE_RESULT_SUCCESS) return;
  std::lock_guard<std::mutex> lock(slots_mutex_);
  free_slots_.push_back(slot);
}

Status ZeApi::DeviceStatus(const char* what) {
  ZE(zeDeviceGetStatus(device_), "%s", what);
  return OkStatus();
}

void ZeApi::HostFunctionMain() {
  for (;;) {
    HostFunction f;
    {
      std::unique_lock<std::mutex> lock(host_mutex_);
      host_cv_.wait(lock,
                    [&] { return stopping_ || !host_functions_.empty(); });
      if (host_functions_.empty()) return;  // stopping
      f = host_functions_.front();
      host_functions_.pop_front();
    }
    syms_->zeEventHostSynchronize(f.ready->event, UINT64_MAX);
    f.fn(f.user_data);
    syms_->zeEventHostSignal(f.release->event);
    ReleaseSlot(f.ready);
    Slot* previous = nullptr;
    {
      std::lock_guard<std::mutex> lock(host_mutex_);
      bool found = false;
      for (auto& [stream, slot] : last_release_) {
        if (stream == f.stream) {
          previous = slot;
          slot = f.release;
          found = true;
        }
      }
      if (!found) last_release_.emplace_back(f.stream, f.release);
    }
    // The stream signalled `ready` after it passed the previous wait.
    if (previous) ReleaseSlot(previous);
  }
}

// ---------------------------------------------------------------------------
// Streams and events.

Status ZeApi::StreamCreate(gpu::GpuStream* out) {
  ze_command_queue_desc_t qd = {};
  qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  qd.ordinal = compute_ordinal_;
  {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    qd.index = next_stream_index_++ % compute_queues_;
  }
  qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  qd.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
  ze_command_list_handle_t list = nullptr;
  ZE(zeCommandListCreateImmediate(context_, device_, &qd, &list),
     "creating a queue's immediate command list");
  *out = list;
  return OkStatus();
}

Status ZeApi::StreamDestroy(gpu::GpuStream stream) {
  // Level Zero forbids destroying a list the device still uses. A lost
  // device uses nothing any more: the release goes on (a release path that
  // stopped at a lost device would leak the list).
  const Status synced = StreamSynchronize(stream);
  const bool lost = !synced.ok() && syms_->zeDeviceGetStatus(device_) ==
                                        ZE_RESULT_ERROR_DEVICE_LOST;
  if (!synced.ok() && !lost) return synced;
  Slot* last = nullptr;
  {
    std::lock_guard<std::mutex> lock(host_mutex_);
    for (auto it = last_release_.begin(); it != last_release_.end(); ++it) {
      if (it->first == AsList(stream)) {
        last = it->second;
        last_release_.erase(it);
        break;
      }
    }
  }
  // On a lost device the stream's wait on its last host function's release
  // may still be queued (it retires without running): that slot stays out
  // of the pool (the destructor frees it), as a reset would pull the event
  // from under the wait (swarm seed 314 on level_zero).
  if (last && !lost) ReleaseSlot(last);
  {
    // The stream passed its graph launches, so their queue is idle.
    std::lock_guard<std::mutex> lock(graph_mutex_);
    ReclaimGraphLaunchesLocked(/*wait=*/false);
    for (auto it = graph_queues_.begin(); it != graph_queues_.end(); ++it) {
      if (it->first == stream) {
        ZE(zeCommandQueueDestroy(it->second), "a graph launch queue");
        graph_queues_.erase(it);
        break;
      }
    }
  }
  ZE(zeCommandListDestroy(AsList(stream)), "%s", "");
  return OkStatus();
}

Status ZeApi::StreamWaitEvent(gpu::GpuStream stream,
                              gpu::GpuEventHandle event) {
  ZeEvent* e = AsEvent(event);
  if (!e->recorded) return OkStatus();  // orders nothing, as in CUDA
  ze_event_handle_t h = static_cast<Slot*>(e->slot)->event;
  ZE(zeCommandListAppendWaitOnEvents(AsList(stream), 1, &h), "%s", "");
  return OkStatus();
}

Status ZeApi::StreamSynchronize(gpu::GpuStream stream) {
  HAL_ASSIGN_OR_RETURN(Slot * slot, AcquireSlot());
  ze_result_t r =
      syms_->zeCommandListAppendSignalEvent(AsList(stream), slot->event);
  if (r == ZE_RESULT_SUCCESS) {
    r = syms_->zeEventHostSynchronize(slot->event, UINT64_MAX);
  }
  ReleaseSlot(slot);
  if (r != ZE_RESULT_SUCCESS) {
    return ZeResultToStatus(r, "zeEventHostSynchronize",
                            "synchronizing a stream");
  }
  return DeviceStatus("after synchronizing a stream");
}

Status ZeApi::EventCreate(gpu::GpuEventHandle* out) {
  HAL_ASSIGN_OR_RETURN(Slot * slot, AcquireSlot());
  auto* e = new ZeEvent();
  e->slot = slot;
  *out = e;
  return OkStatus();
}

Status ZeApi::EventDestroy(gpu::GpuEventHandle event) {
  ZeEvent* e = AsEvent(event);
  auto* slot = static_cast<Slot*>(e->slot);
  // Its last record must have landed before the slot is reused. A release
  // never waits without bound: a lost device answers DEVICE_LOST at once
  // (its refused work will never signal), and work still running after
  // kReleaseWaitNs keeps its slot out of the pool (the pool's destruction
  // frees it).
  if (e->recorded && syms_->zeEventHostSynchronize(
                         slot->event, kReleaseWaitNs) == ZE_RESULT_NOT_READY) {
    delete e;
    return OkStatus();
  }
  // On a lost device a command that waits on the last record may still be
  // queued (it retires without running) after the action that recorded it
  // failed: a reset would pull the event from under it. The slot stays out
  // of the pool (the pool's destruction frees it).
  if (e->recorded && syms_->zeDeviceGetStatus(device_) != ZE_RESULT_SUCCESS) {
    delete e;
    return OkStatus();
  }
  ReleaseSlot(slot);
  delete e;
  return OkStatus();
}

Status ZeApi::EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) {
  ZeEvent* e = AsEvent(event);
  auto* slot = static_cast<Slot*>(e->slot);
  if (e->recorded) {
    // A recycled event (GpuEventPool): every wait on its last record
    // completed; its signal may still be landing.
    ZE(zeEventHostSynchronize(slot->event, UINT64_MAX), "re-recording");
    ZE(zeEventHostReset(slot->event), "re-recording");
  }
  ZE(zeCommandListAppendSignalEvent(AsList(stream), slot->event), "%s", "");
  e->recorded = true;
  return OkStatus();
}

Status ZeApi::EventQuery(gpu::GpuEventHandle event, bool* ready) {
  ZeEvent* e = AsEvent(event);
  *ready = true;
  if (!e->recorded) return OkStatus();
  ze_result_t r = syms_->zeEventQueryStatus(static_cast<Slot*>(e->slot)->event);
  if (r == ZE_RESULT_NOT_READY) {
    *ready = false;
    return OkStatus();
  }
  if (r != ZE_RESULT_SUCCESS) {
    return ZeResultToStatus(r, "zeEventQueryStatus", "%s", "");
  }
  return DeviceStatus("after the event's work");
}

Status ZeApi::EventSynchronize(gpu::GpuEventHandle event) {
  ZeEvent* e = AsEvent(event);
  if (!e->recorded) return OkStatus();
  ZE(zeEventHostSynchronize(static_cast<Slot*>(e->slot)->event, UINT64_MAX),
     "%s", "");
  return DeviceStatus("after the event's work");
}

Status ZeApi::LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                             void* user_data) {
  HAL_ASSIGN_OR_RETURN(Slot * ready, AcquireSlot());
  HAL_ASSIGN_OR_RETURN(Slot * release, AcquireSlot());
  ZE(zeCommandListAppendSignalEvent(AsList(stream), ready->event),
     "host function");
  ZE(zeCommandListAppendWaitOnEvents(AsList(stream), 1, &release->event),
     "host function");
  {
    std::lock_guard<std::mutex> lock(host_mutex_);
    host_functions_.push_back({AsList(stream), ready, release, fn, user_data});
  }
  host_cv_.notify_one();
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Memory.

Status ZeApi::MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) {
  ze_device_mem_alloc_desc_t d = {};
  d.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
  void* p = nullptr;
  ZE(zeMemAllocDevice(context_, &d, size, 0, device_, &p),
     "allocating %zu bytes", size);
  *out = reinterpret_cast<gpu::GpuDevicePtr>(p);
  return OkStatus();
}

Status ZeApi::MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) {
  ze_device_mem_alloc_desc_t d = {};
  d.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
  ze_host_mem_alloc_desc_t h = {};
  h.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
  void* p = nullptr;
  ZE(zeMemAllocShared(context_, &d, &h, size, 0, device_, &p),
     "allocating %zu shared bytes", size);
  *out = reinterpret_cast<gpu::GpuDevicePtr>(p);
  return OkStatus();
}

Status ZeApi::MemFreeDevice(gpu::GpuDevicePtr ptr) {
  ZE(zeMemFree(context_, AsPtr(ptr)), "%s", "");
  return OkStatus();
}

Status ZeApi::MemAllocHost(size_t size, void** out) {
  ze_host_mem_alloc_desc_t h = {};
  h.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
  ZE(zeMemAllocHost(context_, &h, size, 0, out), "allocating %zu host bytes",
     size);
  return OkStatus();
}

Status ZeApi::MemFreeHost(void* ptr) {
  ZE(zeMemFree(context_, ptr), "%s", "");
  return OkStatus();
}

Status ZeApi::MemHostRegister(void*, size_t) {
  return UnimplementedError(
      "level_zero: Level Zero 1.4 cannot import (register) host memory");
}

Status ZeApi::MemHostUnregister(void*) {
  return UnimplementedError(
      "level_zero: Level Zero 1.4 cannot import (register) host memory");
}

Status ZeApi::HostDevicePointer(void* host, gpu::GpuDevicePtr* out) {
  // Unified shared memory: a host allocation's address is its device one.
  ze_memory_allocation_properties_t props = {};
  props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  ze_device_handle_t owner = nullptr;
  ZE(zeMemGetAllocProperties(context_, host, &props, &owner), "%s", "");
  if (props.type != ZE_MEMORY_TYPE_HOST &&
      props.type != ZE_MEMORY_TYPE_SHARED) {
    return InvalidArgumentError("level_zero: %p is not Level Zero host memory",
                                host);
  }
  *out = reinterpret_cast<gpu::GpuDevicePtr>(host);
  return OkStatus();
}

Status ZeApi::MemAllocAsync(size_t, gpu::GpuStream, gpu::GpuDevicePtr*) {
  return UnimplementedError("level_zero: no stream-ordered allocation");
}

Status ZeApi::MemFreeAsync(gpu::GpuDevicePtr, gpu::GpuStream) {
  return UnimplementedError("level_zero: no stream-ordered allocation");
}

Status ZeApi::MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                          size_t size, gpu::GpuStream stream) {
  ZE(zeCommandListAppendMemoryCopy(AsList(stream), AsPtr(dst), AsPtr(src), size,
                                   nullptr, 0, nullptr),
     "copying %zu bytes", size);
  return OkStatus();
}

Status ZeApi::MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                          size_t pattern_length, size_t count,
                          gpu::GpuStream stream) {
  ZE(zeCommandListAppendMemoryFill(AsList(stream), AsPtr(dst), &pattern,
                                   pattern_length, count * pattern_length,
                                   nullptr, 0, nullptr),
     "filling %zu bytes", count * pattern_length);
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Modules and kernels.

bool ZeApi::SupportsModules() const { return true; }

Status ZeApi::ModuleLoad(std::span<const uint8_t> image, gpu::GpuModule* out) {
  auto m = std::make_unique<ZeModule>();
  std::string error;
  if (!ParseSpirvKernels(image, &m->kernels, &error)) {
    return InvalidArgumentError("level_zero: SPIR-V module: %s", error.c_str());
  }
  ze_module_desc_t md = {};
  md.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = image.size();
  md.pInputModule = image.data();
  // No build log: loader 1.8.12 with ZE_ENABLE_LOADER_INTERCEPT=1 returns
  // the log of a failed build unwrapped (docs/drivers/level_zero.md).
  ZE(zeModuleCreate(context_, device_, &md, &m->module, nullptr),
     "loading a %zu-byte SPIR-V module", image.size());
  *out = m.release();
  return OkStatus();
}

Status ZeApi::ModuleUnload(gpu::GpuModule module) {
  std::unique_ptr<ZeModule> m(static_cast<ZeModule*>(module));
  // Kernels first: a module with live kernels cannot be destroyed.
  for (auto& f : m->functions) ZE(zeKernelDestroy(f->kernel), "%s", "");
  ZE(zeModuleDestroy(m->module), "%s", "");
  return OkStatus();
}

Status ZeApi::ModuleGetFunction(gpu::GpuModule module, const char* name,
                                gpu::GpuFunction* out) {
  auto* m = static_cast<ZeModule*>(module);
  const SpirvKernel* k = nullptr;
  for (const SpirvKernel& sk : m->kernels) {
    if (sk.name == name) k = &sk;
  }
  if (!k) {
    return NotFoundError("level_zero: the module has no kernel '%s'", name);
  }
  for (int bytes : k->param_bytes) {
    if (bytes <= 0) {
      return InvalidArgumentError(
          "level_zero: kernel '%s' has a parameter of unknown size", name);
    }
  }
  auto f = std::make_unique<ZeFunction>();
  f->param_bytes = k->param_bytes;
  ze_kernel_desc_t kd = {};
  kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
  kd.pKernelName = name;
  ZE(zeKernelCreate(m->module, &kd, &f->kernel), "kernel '%s'", name);
  *out = f.get();
  m->functions.push_back(std::move(f));
  return OkStatus();
}

Status SetKernelState(const ZeSymbols* syms, ZeFunction* f,
                      const uint32_t block[3], uint32_t shared_memory,
                      void** params) {
  if (shared_memory != 0) {
    return UnimplementedError(
        "level_zero: dynamic shared (local) memory is not passed yet");
  }
  if (f->group[0] != block[0] || f->group[1] != block[1] ||
      f->group[2] != block[2]) {
    HAL_ZE_RETURN_IF_ERROR(
        syms, zeKernelSetGroupSize(f->kernel, block[0], block[1], block[2]),
        "group size [%u, %u, %u]", block[0], block[1], block[2]);
    std::memcpy(f->group, block, sizeof(f->group));
  }
  for (size_t i = 0; i < f->param_bytes.size(); ++i) {
    HAL_ZE_RETURN_IF_ERROR(
        syms,
        zeKernelSetArgumentValue(f->kernel, static_cast<uint32_t>(i),
                                 f->param_bytes[i], params[i]),
        "argument %zu", i);
  }
  return OkStatus();
}

Status ZeApi::LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                           const uint32_t block[3], uint32_t shared_memory,
                           gpu::GpuStream stream, void** params) {
  auto* f = static_cast<ZeFunction*>(function);
  std::lock_guard<std::mutex> lock(f->mutex);
  HAL_RETURN_IF_ERROR(
      SetKernelState(syms_.get(), f, block, shared_memory, params));
  ze_group_count_t groups = {grid[0], grid[1], grid[2]};
  ZE(zeCommandListAppendLaunchKernel(AsList(stream), f->kernel, &groups,
                                     nullptr, 0, nullptr),
     "%s", "");
  return OkStatus();
}

Status ZeApi::LaunchKernelIndirect(gpu::GpuFunction function,
                                   gpu::GpuDevicePtr grid,
                                   const uint32_t block[3],
                                   uint32_t shared_memory,
                                   gpu::GpuStream stream, void** params) {
  static_assert(sizeof(ze_group_count_t) == 3 * sizeof(uint32_t));
  auto* f = static_cast<ZeFunction*>(function);
  std::lock_guard<std::mutex> lock(f->mutex);
  HAL_RETURN_IF_ERROR(
      SetKernelState(syms_.get(), f, block, shared_memory, params));
  // The device reads the group count when the launch runs.
  ZE(zeCommandListAppendLaunchKernelIndirect(
         AsList(stream), f->kernel,
         reinterpret_cast<const ze_group_count_t*>(grid), nullptr, 0, nullptr),
     "group count at 0x%llx", static_cast<unsigned long long>(grid));
  return OkStatus();
}

}  // namespace hal::level_zero
