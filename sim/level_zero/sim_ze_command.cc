// The Level Zero skin's command queues, command lists (regular and
// immediate), event pools, events and fences (sim_ze_internal.h).
//
// Commands within one list or queue run in order (engine queues are
// in-order), as Level Zero 1.4 asks unless a list is created with
// ZE_COMMAND_LIST_FLAG_RELAXED_ORDERING (accepted and ignored here).
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "sim/level_zero/sim_ze_internal.h"

using namespace hal::sim::ze;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {

Event* AsEvent(ze_event_handle_t h) { return reinterpret_cast<Event*>(h); }
CommandList* AsList(ze_command_list_handle_t h) {
  return reinterpret_cast<CommandList*>(h);
}
CommandQueue* AsQueue(ze_command_queue_handle_t h) {
  return reinterpret_cast<CommandQueue*>(h);
}

// Waits until `signal` reaches 1, at most `timeout_ns` (UINT64_MAX:
// forever; 0: a poll). A finite wait polls outside any host call, so the
// engine keeps running meanwhile (its settle rule waits for quiet hosts).
// With `as_host_function`, an endless wait is also held while host
// functions are paused (halsim_pause_host_functions): Level Zero has none,
// and a driver emulates them with a host thread in such a wait on an event.
// False as well once `give_up` holds (the caller reports a lost device): a
// lost device refuses every later submission, so a wait for what only such
// a submission would have signalled must not outlast it.
bool WaitSet(const engine::SignalPtr& signal, uint64_t timeout_ns,
             const std::function<bool()>& give_up,
             bool as_host_function = false) {
  if (timeout_ns == UINT64_MAX) {
    HALSIM_ZE_ENTER();
    engine::Wait wait;
    wait.signal = signal;
    wait.cond = engine::Cond::kGe;
    wait.value = 1;
    bool gave_up = false;
    E().WaitSignalUnless(wait, as_host_function, give_up, &gave_up);
    return !gave_up;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    if (E().SignalValue(signal) >= 1) return true;
    if (give_up()) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// ---------------------------------------------------------------------------
// Command queues.

ze_result_t SimCommandQueueCreate(ze_context_handle_t context,
                                  ze_device_handle_t hdev,
                                  const ze_command_queue_desc_t* desc,
                                  ze_command_queue_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(hdev);
  if (!context || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal >= kGroupCount || desc->index >= kQueuesPerGroup) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* q = new CommandQueue();
  q->device = dev;
  q->group = desc->ordinal;
  q->queue = E().CreateQueue();
  CountCreated(Kind::kCommandQueue);
  *out = reinterpret_cast<ze_command_queue_handle_t>(q);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandQueueDestroy(ze_command_queue_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandQueue* q = AsQueue(h);
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  // The spec: the device must not be using the queue any more. A lost
  // device's queued work retires without running: let it, as a real
  // driver drops it.
  if (q->pending.load() > 0 && q->device->domain.failed()) {
    E().Synchronize(q->queue);
  }
  if (q->pending.load() > 0) {
    return Violation(
        ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeCommandQueueDestroy",
        "the command queue still has %d pending commands", q->pending.load());
  }
  E().DestroyQueue(q->queue);
  delete q;
  CountDestroyed(Kind::kCommandQueue);
  return ZE_RESULT_SUCCESS;
}

// The order a regular list's commands run in. The Level Zero spec orders
// them only by barriers and events, so each run of commands that nothing
// orders (Command::unordered) runs in an order drawn from the seed: a driver
// that left out a barrier between dependent commands gets wrong bytes (or a
// use of memory before it was written) under some seed, not a silent pass.
std::vector<const Command*> SeededOrder(const std::vector<Command>& commands) {
  std::vector<const Command*> order;
  order.reserve(commands.size());
  for (const Command& c : commands) order.push_back(&c);
  size_t i = 0;
  while (i < order.size()) {
    size_t j = i;
    while (j < order.size() && order[j]->unordered()) ++j;
    for (size_t k = j; k > i + 1; --k) {  // Fisher-Yates over [i, j)
      std::swap(order[k - 1], order[i + E().DrawHostChoice(k - i)]);
    }
    i = j + 1;
  }
  return order;
}

ze_result_t SimCommandQueueExecuteCommandLists(ze_command_queue_handle_t h,
                                               uint32_t count,
                                               ze_command_list_handle_t* lists,
                                               ze_fence_handle_t hfence) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandQueue* q = AsQueue(h);
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!lists) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* fence = reinterpret_cast<Fence*>(hfence);
  if (fence && fence->queue != q) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  // Check every list before enqueuing any: the call is all or nothing.
  for (uint32_t i = 0; i < count; ++i) {
    CommandList* list = AsList(lists[i]);
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (list->immediate) {
      return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT,
                       "zeCommandQueueExecuteCommandLists",
                       "list %u is an immediate command list", i);
    }
    if (!list->closed) {
      return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT,
                       "zeCommandQueueExecuteCommandLists",
                       "list %u is not closed (zeCommandListClose after "
                       "create or reset)",
                       i);
    }
    if (list->group != q->group) {
      return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    }
  }
  if (q->device->domain.failed()) return ToZeResult(q->device->domain.error());
  for (uint32_t i = 0; i < count; ++i) {
    CommandList* list = AsList(lists[i]);
    for (const Command* c : SeededOrder(list->commands)) {
      Command run = *c;
      run.holds.push_back(list);
      run.holds.push_back(q);
      ze_result_t r = EnqueueCommand(q->queue, q->device, run);
      if (r != ZE_RESULT_SUCCESS) return r;
    }
  }
  CountListsExecuted(count);
  if (fence) {
    Command done;
    done.op.name = "fence";
    done.op.zero_time = true;
    done.op.signals.push_back({fence->signal, engine::SignalOp::kSet, 1});
    done.holds.push_back(q);
    return EnqueueCommand(q->queue, q->device, done);
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandQueueSynchronize(ze_command_queue_handle_t h,
                                       uint64_t timeout) {
  CommandQueue* q = AsQueue(h);
  engine::SignalPtr marker;
  {
    HALSIM_ZE_ENTER();
    HALSIM_ZE_NEED_INIT();
    if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (timeout == UINT64_MAX) {
      E().Synchronize(q->queue);
      return ToZeResult(q->device->domain.error());
    }
    marker = E().CreateSignal(0);
    engine::Op op;
    op.name = "sync";
    op.zero_time = true;
    op.signals.push_back({marker, engine::SignalOp::kSet, 1});
    ze_result_t r = ToZeResult(E().Enqueue(q->queue, std::move(op)));
    if (r != ZE_RESULT_SUCCESS) return r;
  }
  // The marker completes even on a lost device (its work is skipped).
  if (!WaitSet(marker, timeout, [] { return false; })) {
    return ZE_RESULT_NOT_READY;
  }
  return ToZeResult(q->device->domain.error());
}

// ---------------------------------------------------------------------------
// Command lists.

ze_result_t SimCommandListCreate(ze_context_handle_t context,
                                 ze_device_handle_t hdev,
                                 const ze_command_list_desc_t* desc,
                                 ze_command_list_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(hdev);
  if (!context || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->commandQueueGroupOrdinal >= kGroupCount) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* list = new CommandList();
  list->device = dev;
  list->group = desc->commandQueueGroupOrdinal;
  CountCreated(Kind::kCommandList);
  *out = reinterpret_cast<ze_command_list_handle_t>(list);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandListCreateImmediate(ze_context_handle_t context,
                                          ze_device_handle_t hdev,
                                          const ze_command_queue_desc_t* desc,
                                          ze_command_list_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(hdev);
  if (!context || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal >= kGroupCount || desc->index >= kQueuesPerGroup) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* list = new CommandList();
  list->device = dev;
  list->group = desc->ordinal;
  list->immediate = true;
  list->queue = E().CreateQueue();
  CountCreated(Kind::kCommandList);
  *out = reinterpret_cast<ze_command_list_handle_t>(list);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandListDestroy(ze_command_list_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  // As for queues: a lost device's queued work retires first.
  if (list->pending.load() > 0 && list->queue &&
      list->device->domain.failed()) {
    E().Synchronize(list->queue);
  }
  if (list->pending.load() > 0) {
    return Violation(
        ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeCommandListDestroy",
        "the command list still has %d pending commands", list->pending.load());
  }
  // An immediate list's queue: its ops are counted as the list's pending
  // work, so it is idle here.
  if (list->queue) E().DestroyQueue(list->queue);
  // Recorded commands hold no objects until they are executed.
  delete list;
  CountDestroyed(Kind::kCommandList);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandListClose(ze_command_list_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (list->immediate) return ZE_RESULT_SUCCESS;  // nothing to close
  list->closed = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimCommandListReset(ze_command_list_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (list->pending.load() > 0) {
    return Violation(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeCommandListReset",
                     "the command list still has %d pending commands",
                     list->pending.load());
  }
  list->commands.clear();
  list->closed = false;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimAppendBarrier(ze_command_list_handle_t h,
                             ze_event_handle_t signal, uint32_t num_waits,
                             ze_event_handle_t* waits) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Command c;
  c.op.name = "barrier";
  c.op.zero_time = true;
  c.barrier = true;
  return Append(list, "zeCommandListAppendBarrier", std::move(c), signal,
                num_waits, waits);
}

ze_result_t SimAppendMemoryCopy(ze_command_list_handle_t h, void* dst,
                                const void* src, size_t size,
                                ze_event_handle_t signal, uint32_t num_waits,
                                ze_event_handle_t* waits) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto d = reinterpret_cast<uintptr_t>(dst);
  const auto s = reinterpret_cast<uintptr_t>(src);
  Command c;
  c.op.name = "memcpy";
  c.op.bytes = size;
  c.op.write = hal::sim::Range::Of(d, size);
  c.op.read = hal::sim::Range::Of(s, size);
  if (size) c.op.run = E().CopyWork(&list->device->domain, d, s, size);
  return Append(list, "zeCommandListAppendMemoryCopy", std::move(c), signal,
                num_waits, waits);
}

ze_result_t SimAppendMemoryFill(ze_command_list_handle_t h, void* ptr,
                                const void* pattern, size_t pattern_size,
                                size_t size, ze_event_handle_t signal,
                                uint32_t num_waits, ze_event_handle_t* waits) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // maxMemoryFillPatternSize is 4 for both groups.
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4) {
    return ZE_RESULT_ERROR_INVALID_SIZE;
  }
  if (size % pattern_size != 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  uint32_t value = 0;
  std::memcpy(&value, pattern, pattern_size);
  const auto d = reinterpret_cast<uintptr_t>(ptr);
  Command c;
  c.op.name = "memset";
  c.op.bytes = size;
  c.op.write = hal::sim::Range::Of(d, size);
  if (size) {
    c.op.run =
        E().FillWork(&list->device->domain, d, value,
                     static_cast<int>(pattern_size), size / pattern_size);
  }
  return Append(list, "zeCommandListAppendMemoryFill", std::move(c), signal,
                num_waits, waits);
}

ze_result_t SimAppendSignalEvent(ze_command_list_handle_t h,
                                 ze_event_handle_t event) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list || !event) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Command c;
  c.op.name = "signal_event";
  c.op.zero_time = true;
  return Append(list, "zeCommandListAppendSignalEvent", std::move(c), event, 0,
                nullptr);
}

ze_result_t SimAppendWaitOnEvents(ze_command_list_handle_t h,
                                  uint32_t num_events,
                                  ze_event_handle_t* events) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (num_events == 0 || !events) return ZE_RESULT_ERROR_INVALID_SIZE;
  Command c;
  c.op.name = "wait_events";
  c.op.zero_time = true;
  return Append(list, "zeCommandListAppendWaitOnEvents", std::move(c), nullptr,
                num_events, events);
}

ze_result_t SimAppendEventReset(ze_command_list_handle_t h,
                                ze_event_handle_t hevent) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  Event* event = AsEvent(hevent);
  if (!list || !event) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Command c;
  c.op.name = "reset_event";
  c.op.zero_time = true;
  c.op.signals.push_back({event->signal, engine::SignalOp::kSet, 0});
  c.holds.push_back(event);
  return Append(list, "zeCommandListAppendEventReset", std::move(c), nullptr, 0,
                nullptr);
}

ze_result_t SimAppendLaunchKernel(ze_command_list_handle_t h,
                                  ze_kernel_handle_t hkernel,
                                  const ze_group_count_t* groups,
                                  ze_event_handle_t signal, uint32_t num_waits,
                                  ze_event_handle_t* waits) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  auto* kernel = reinterpret_cast<Kernel*>(hkernel);
  if (!list || !kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (list->group != kComputeGroup) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // copy engines run no kernels
  }
  const uint32_t grid[3] = {groups->groupCountX, groups->groupCountY,
                            groups->groupCountZ};
  Command c;
  c.op.name = "kernel";
  ze_result_t r = KernelLaunchOp(kernel, list->device, grid,
                                 "zeCommandListAppendLaunchKernel", &c.op.run);
  if (r != ZE_RESULT_SUCCESS) return r;
  c.holds.push_back(kernel);
  return Append(list, "zeCommandListAppendLaunchKernel", std::move(c), signal,
                num_waits, waits);
}

// The group count is read from device-visible memory when the launch runs
// (after its waits), with no host round trip.
ze_result_t SimAppendLaunchKernelIndirect(ze_command_list_handle_t h,
                                          ze_kernel_handle_t hkernel,
                                          const ze_group_count_t* groups,
                                          ze_event_handle_t signal,
                                          uint32_t num_waits,
                                          ze_event_handle_t* waits) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandList* list = AsList(h);
  auto* kernel = reinterpret_cast<Kernel*>(hkernel);
  if (!list || !kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (list->group != kComputeGroup) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const auto where = reinterpret_cast<uintptr_t>(groups);
  engine::Allocation a;
  if (!E().FindAllocation(where, &a) ||
      where + sizeof(ze_group_count_t) > a.base + a.size) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // not device-visible memory
  }
  // Validate everything now with a 1x1x1 grid; the real grid comes later.
  const uint32_t one[3] = {1, 1, 1};
  engine::Work probe;
  ze_result_t r =
      KernelLaunchOp(kernel, list->device, one,
                     "zeCommandListAppendLaunchKernelIndirect", &probe);
  if (r != ZE_RESULT_SUCCESS) return r;
  Device* dev = list->device;
  Command c;
  c.op.name = "kernel_indirect";
  c.op.read = hal::sim::Range::Of(where, sizeof(ze_group_count_t));
  // The arguments are read now (as for a direct launch); the grid when the
  // launch runs.
  KernelArgs args = ReadKernelArgs(kernel);
  engine::Kernel* native = &kernel->native;
  c.op.run = [native, dev, where, args] {
    ze_group_count_t g;
    std::memcpy(&g, reinterpret_cast<const void*>(where), sizeof(g));
    const uint32_t grid[3] = {g.groupCountX, g.groupCountY, g.groupCountZ};
    if (!grid[0] || !grid[1] || !grid[2]) return;  // an empty launch
    E().KernelWork(&dev->domain, native, grid, args.pointers, args.constants)();
  };
  c.holds.push_back(kernel);
  return Append(list, "zeCommandListAppendLaunchKernelIndirect", std::move(c),
                signal, num_waits, waits);
}

// ---------------------------------------------------------------------------
// Event pools and events.

ze_result_t SimEventPoolCreate(ze_context_handle_t context,
                               const ze_event_pool_desc_t* desc,
                               uint32_t num_devices, ze_device_handle_t*,
                               ze_event_pool_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  (void)num_devices;
  if (!context) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* pool = new EventPool();
  pool->context = reinterpret_cast<Context*>(context);
  pool->count = desc->count;
  pool->host_visible = desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
  pool->live.assign(desc->count, nullptr);
  CountCreated(Kind::kEventPool);
  *out = reinterpret_cast<ze_event_pool_handle_t>(pool);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventPoolDestroy(ze_event_pool_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* pool = reinterpret_cast<EventPool*>(h);
  if (!pool) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard<std::mutex> lock(pool->mutex);
    for (Event* e : pool->live) {
      if (e && e->pending.load() > 0) {
        return Violation(
            ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeEventPoolDestroy",
            "event %u of the pool is used by pending work", e->index);
      }
    }
  }
  delete pool;
  CountDestroyed(Kind::kEventPool);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventCreate(ze_event_pool_handle_t hpool,
                           const ze_event_desc_t* desc,
                           ze_event_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* pool = reinterpret_cast<EventPool*>(hpool);
  if (!pool) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= pool->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(pool->mutex);
  if (pool->live[desc->index]) {
    return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeEventCreate",
                     "index %u of the pool already has a live event",
                     desc->index);
  }
  auto* e = new Event();
  e->pool = pool;
  e->index = desc->index;
  e->signal = E().CreateSignal(0);
  pool->live[desc->index] = e;
  CountCreated(Kind::kEvent);
  *out = reinterpret_cast<ze_event_handle_t>(e);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventDestroy(ze_event_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Event* e = AsEvent(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (e->pending.load() > 0) {
    return Violation(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeEventDestroy",
                     "event %u is used by %d pending commands", e->index,
                     e->pending.load());
  }
  {
    std::lock_guard<std::mutex> lock(e->pool->mutex);
    e->pool->live[e->index] = nullptr;
  }
  delete e;
  CountDestroyed(Kind::kEvent);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventHostSignal(ze_event_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Event* e = AsEvent(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (E().SignalValue(e->signal) != 0) {
    return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeEventHostSignal",
                     "event %u signalled twice without a reset", e->index);
  }
  E().UpdateSignal(e->signal, engine::SignalOp::kSet, 1);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventHostReset(ze_event_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Event* e = AsEvent(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (e->pending.load() > 0) {
    return Violation(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeEventHostReset",
                     "event %u is reset while %d pending commands use it",
                     e->index, e->pending.load());
  }
  E().UpdateSignal(e->signal, engine::SignalOp::kSet, 0);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimEventQueryStatus(ze_event_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Event* e = AsEvent(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return E().SignalValue(e->signal) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t SimEventHostSynchronize(ze_event_handle_t h, uint64_t timeout) {
  Event* e = AsEvent(h);
  {
    HALSIM_ZE_ENTER();
    HALSIM_ZE_NEED_INIT();
    if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  }
  engine::SignalPtr signal = e->signal;
  // Once a device is lost, no submission is accepted: an event that no
  // pending command will signal never will be, and the wait reports the
  // loss (as a real driver does) instead of waiting forever. Commands
  // already pending still complete (their work is skipped).
  auto never = [e] { return e->pending.load() == 0 && AnyDeviceLost(); };
  // (`never` first: with no command pending, only the host can still
  // signal the event.)
  if (never() && E().SignalValue(signal) < 1) {
    return ZE_RESULT_ERROR_DEVICE_LOST;
  }
  if (WaitSet(signal, timeout, never, /*as_host_function=*/true) ||
      E().SignalValue(signal) >= 1) {
    return ZE_RESULT_SUCCESS;
  }
  return never() ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
}

// ---------------------------------------------------------------------------
// Fences.

ze_result_t SimFenceCreate(ze_command_queue_handle_t hq,
                           const ze_fence_desc_t* desc,
                           ze_fence_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  CommandQueue* q = AsQueue(hq);
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto* f = new Fence();
  f->queue = q;
  f->signal = E().CreateSignal((desc->flags & ZE_FENCE_FLAG_SIGNALED) ? 1 : 0);
  CountCreated(Kind::kFence);
  *out = reinterpret_cast<ze_fence_handle_t>(f);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimFenceDestroy(ze_fence_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete reinterpret_cast<Fence*>(h);  // pending fence ops hold the signal
  CountDestroyed(Kind::kFence);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimFenceHostSynchronize(ze_fence_handle_t h, uint64_t timeout) {
  auto* f = reinterpret_cast<Fence*>(h);
  {
    HALSIM_ZE_ENTER();
    HALSIM_ZE_NEED_INIT();
    if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  }
  if (E().SignalValue(f->signal) < 1 && f->queue->device->domain.failed()) {
    return ToZeResult(f->queue->device->domain.error());  // as for events
  }
  Device* dev = f->queue->device;
  if (!WaitSet(f->signal, timeout, [dev] { return dev->domain.failed(); }) &&
      !dev->domain.failed()) {
    return ZE_RESULT_NOT_READY;
  }
  return ToZeResult(f->queue->device->domain.error());
}

ze_result_t SimFenceQueryStatus(ze_fence_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* f = reinterpret_cast<Fence*>(h);
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return E().SignalValue(f->signal) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t SimFenceReset(ze_fence_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* f = reinterpret_cast<Fence*>(h);
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  E().UpdateSignal(f->signal, engine::SignalOp::kSet, 0);
  return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace hal::sim::ze {

ze_result_t EnqueueCommand(engine::Queue* queue, Device* device,
                           const Command& command) {
  engine::Op op = command.op;
  // A lost device's queued work retires (a real one is aborted): nothing
  // of it waits forever for an event that a refused submission would have
  // signalled, so everything it holds is released.
  op.retire_if_failed = &device->domain;
  std::vector<Tracked*> holds = command.holds;
  for (Tracked* t : holds) ++t->pending;
  engine::Work inner = std::move(op.run);
  op.run = [inner = std::move(inner), holds] {
    if (inner) inner();
    for (Tracked* t : holds) --t->pending;
  };
  engine::Error e = E().Enqueue(queue, std::move(op));
  if (e != engine::Error::kOk) {
    for (Tracked* t : holds) --t->pending;
  }
  return ToZeResult(e);
}

ze_result_t Append(CommandList* list, const char* call, Command command,
                   ze_event_handle_t hsignal, uint32_t num_waits,
                   ze_event_handle_t* waits) {
  if (!list->immediate && list->closed) {
    return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                     "appended to a regular command list after "
                     "zeCommandListClose (reset it first)");
  }
  if (num_waits && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < num_waits; ++i) {
    Event* w = AsEvent(waits[i]);
    if (!w) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    command.op.waits.push_back({w->signal, engine::Cond::kEq, 1});
    command.holds.push_back(w);
  }
  if (Event* s = AsEvent(hsignal)) {
    // Signalling a signalled event is the bug the spec forbids: a waiter
    // may already have passed the previous epoch. Checked when it runs.
    engine::SignalPtr sig = s->signal;
    const uint32_t index = s->index;
    Device* dev = list->device;
    engine::Work inner = std::move(command.op.run);
    command.op.run = [inner = std::move(inner), sig, index, dev, call] {
      if (inner) inner();
      if (E().SignalValue(sig) != 0) {
        Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                  "event %u signalled twice without a reset (by the device; "
                  "the device is lost)",
                  index);
        dev->domain.Fail(engine::Error::kLaunchFailed);
      }
    };
    command.op.signals.push_back({sig, engine::SignalOp::kSet, 1});
    command.holds.push_back(s);
  }
  if (list->immediate) {
    if (list->device->domain.failed()) {
      return ToZeResult(list->device->domain.error());
    }
    command.holds.push_back(list);
    return EnqueueCommand(list->queue, list->device, command);
  }
  list->commands.push_back(std::move(command));
  return ZE_RESULT_SUCCESS;
}

void FillCommandQueueTable(ze_command_queue_dditable_t* t) {
  t->pfnCreate = SimCommandQueueCreate;
  t->pfnDestroy = SimCommandQueueDestroy;
  t->pfnExecuteCommandLists = SimCommandQueueExecuteCommandLists;
  t->pfnSynchronize = SimCommandQueueSynchronize;
}

void FillCommandListTable(ze_command_list_dditable_t* t) {
  t->pfnCreate = SimCommandListCreate;
  t->pfnCreateImmediate = SimCommandListCreateImmediate;
  t->pfnDestroy = SimCommandListDestroy;
  t->pfnClose = SimCommandListClose;
  t->pfnReset = SimCommandListReset;
  t->pfnAppendBarrier = SimAppendBarrier;
  t->pfnAppendMemoryCopy = SimAppendMemoryCopy;
  t->pfnAppendMemoryFill = SimAppendMemoryFill;
  t->pfnAppendSignalEvent = SimAppendSignalEvent;
  t->pfnAppendWaitOnEvents = SimAppendWaitOnEvents;
  t->pfnAppendEventReset = SimAppendEventReset;
  t->pfnAppendLaunchKernel = SimAppendLaunchKernel;
  t->pfnAppendLaunchKernelIndirect = SimAppendLaunchKernelIndirect;
}

void FillEventPoolTable(ze_event_pool_dditable_t* t) {
  t->pfnCreate = SimEventPoolCreate;
  t->pfnDestroy = SimEventPoolDestroy;
}

void FillEventTable(ze_event_dditable_t* t) {
  t->pfnCreate = SimEventCreate;
  t->pfnDestroy = SimEventDestroy;
  t->pfnHostSignal = SimEventHostSignal;
  t->pfnHostSynchronize = SimEventHostSynchronize;
  t->pfnQueryStatus = SimEventQueryStatus;
  t->pfnHostReset = SimEventHostReset;
}

void FillFenceTable(ze_fence_dditable_t* t) {
  t->pfnCreate = SimFenceCreate;
  t->pfnDestroy = SimFenceDestroy;
  t->pfnHostSynchronize = SimFenceHostSynchronize;
  t->pfnQueryStatus = SimFenceQueryStatus;
  t->pfnReset = SimFenceReset;
}

}  // namespace hal::sim::ze
