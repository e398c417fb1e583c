// The Level Zero skin's shared pieces (sim/level_zero/*.cc): Level Zero
// objects over the engine (sim/engine/engine.h), the checks every entry
// point starts with, the spec rules it reports, and its live-handle counts.
// Not installed; the library's public additions are
// sim/core/halsim_control.h and the halsim_ze_* counters (sim_ze.cc).
#pragma once

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/skin/skin_library.h"

namespace hal::sim::ze {

using engine::Engine;

constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;
constexpr int kMaxDevices = 8;
// Engine groups each device reports: 0 compute (+copy), 1 copy only.
constexpr uint32_t kComputeGroup = 0;
constexpr uint32_t kCopyGroup = 1;
constexpr uint32_t kGroupCount = 2;
constexpr uint32_t kQueuesPerGroup = 4;

// The library's edge (sim/skin/skin_library.h: configuration, handle
// counts, rule reports, kernels, the leak report) and its engine.
skin::Library& L();
Engine& E();

// Object kinds whose live handles are counted (a leak report at exit); the
// library's kinds, in this order.
enum class Kind : int {
  kContext,
  kCommandQueue,
  kCommandList,
  kEventPool,
  kEvent,
  kFence,
  kModule,
  kBuildLog,
  kKernel,
  kMemory,
  kCount,
};
void CountCreated(Kind kind);
void CountDestroyed(Kind kind);
// Live handles of every kind.
uint64_t LiveHandles();
// Regular lists executed (halsim_ze_lists_executed).
void CountListsExecuted(uint32_t n);

// A broken spec rule: counted (halsim_ze_rule_violations), reported on
// stderr with the seed that reproduces it, and returned to the caller.
ze_result_t Violation(ze_result_t result, const char* call, const char* fmt,
                      ...) __attribute__((format(printf, 3, 4)));

ze_result_t ToZeResult(engine::Error error);

// A device: its error scope (a failed op or kernel loses the device, as a
// GPU page fault does on a Level Zero device).
struct Device {
  uint32_t ordinal = 0;
  engine::Domain domain;
};

struct Driver {
  uint32_t device_count = 1;
  Device devices[kMaxDevices];
};

bool Initialized();
Driver* TheDriver();
// Whether a failed op or kernel lost any of the driver's devices.
bool AnyDeviceLost();
// Null for a handle that is not one of the driver's devices.
Device* AsDevice(ze_device_handle_t h);

struct Context {
  uint32_t magic = 0x5a43;
};

// Something queued work uses: destroying it while work is pending is a
// violation. `pending` counts enqueued ops that still hold it.
struct Tracked {
  std::atomic<int> pending{0};
};

// A Level Zero event: a binary state (signalled or not) as an engine signal
// holding 0 or 1. Device signals and resets are ops that set it; waits are
// ops that wait for 1.
struct EventPool;
struct Event : Tracked {
  EventPool* pool = nullptr;
  uint32_t index = 0;
  engine::SignalPtr signal;
};

struct EventPool {
  Context* context = nullptr;
  uint32_t count = 0;
  bool host_visible = false;
  std::vector<Event*> live;  // by index; null where none was created
  std::mutex mutex;
};

// One recorded or immediate command: the op to enqueue, plus the objects it
// holds while pending.
struct Command {
  engine::Op op;
  std::vector<Tracked*> holds;
  bool barrier = false;  // zeCommandListAppendBarrier
  // Whether nothing orders it against its neighbours in a regular list: no
  // barrier, no event to wait on or signal. A run of such commands runs in
  // a seeded order (SimCommandQueueExecuteCommandLists).
  bool unordered() const {
    return !barrier && op.waits.empty() && op.signals.empty();
  }
};

struct CommandQueue : Tracked {
  Device* device = nullptr;
  engine::Queue* queue = nullptr;
  uint32_t group = 0;
};

// A regular list records commands until zeCommandListClose and is executed
// by zeCommandQueueExecuteCommandLists; an immediate list is an engine queue
// (append = enqueue).
struct CommandList : Tracked {
  Device* device = nullptr;
  bool immediate = false;
  bool closed = false;
  uint32_t group = 0;
  engine::Queue* queue = nullptr;  // immediate only
  std::vector<Command> commands;   // regular only
};

struct Fence {
  CommandQueue* queue = nullptr;
  engine::SignalPtr signal;  // 1 once the execution it fences completed
};

struct Kernel;
struct Module {
  Device* device = nullptr;
  std::vector<std::string> names;    // OpEntryPoint Kernel names, in order
  std::atomic<int> kernels_live{0};  // live kernels made from it
};

struct Kernel : Tracked {
  Module* module = nullptr;
  std::string name;
  engine::Kernel native;
  bool group_size_set = false;
  uint32_t group_size[3] = {1, 1, 1};
  // One value per parameter: its bytes, and whether it was set.
  std::vector<int> param_bytes;
  std::vector<uint64_t> values;
  std::vector<bool> set;
};

// A kernel's arguments as the engine's kernel ABI takes them (its set
// values: the bindings' pointers, then the constants).
struct KernelArgs {
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
};
KernelArgs ReadKernelArgs(const Kernel* kernel);

// The work of a kernel launch over `grid` groups, its arguments read now.
// `call` names the entry point in messages.
ze_result_t KernelLaunchOp(Kernel* kernel, Device* device,
                           const uint32_t grid[3], const char* call,
                           engine::Work* out);

// Appends `command` to `list` (enqueues it at once on an immediate list),
// after waiting for `waits` and signalling `signal` when done; each event
// is held while the op is pending. Checks the list's state.
ze_result_t Append(CommandList* list, const char* call, Command command,
                   ze_event_handle_t signal, uint32_t num_waits,
                   ze_event_handle_t* waits);

// Enqueues `command` on `queue` of `device`, wrapping its work so that the
// objects it holds are released when it completes; once the device is
// lost, it retires without waiting (engine::Op::retire_if_failed).
ze_result_t EnqueueCommand(engine::Queue* queue, Device* device,
                           const Command& command);

// The DDI tables this library fills (sim_ze_*.cc).
void FillDriverTable(ze_driver_dditable_t* t);
void FillDeviceTable(ze_device_dditable_t* t);
void FillContextTable(ze_context_dditable_t* t);
void FillCommandQueueTable(ze_command_queue_dditable_t* t);
void FillCommandListTable(ze_command_list_dditable_t* t);
void FillEventPoolTable(ze_event_pool_dditable_t* t);
void FillEventTable(ze_event_dditable_t* t);
void FillFenceTable(ze_fence_dditable_t* t);
void FillMemTable(ze_mem_dditable_t* t);
void FillModuleTable(ze_module_dditable_t* t);
void FillModuleBuildLogTable(ze_module_build_log_dditable_t* t);
void FillKernelTable(ze_kernel_dditable_t* t);

}  // namespace hal::sim::ze

// Every entry point starts here; the engine's settle rule counts the thread
// as inside a call. Level Zero has no host callbacks, so there is no
// callback rule to check.
#define HALSIM_ZE_ENTER() HALSIM_SKIN_ENTER_CALL(::hal::sim::ze::L())

#define HALSIM_ZE_NEED_INIT()                                                 \
  do {                                                                        \
    if (!::hal::sim::ze::Initialized()) return ZE_RESULT_ERROR_UNINITIALIZED; \
  } while (0)
