// The HSA skin's shared pieces (sim/hsa/*.cc): agents, memory pools,
// signals and AQL queues over the engine (sim/engine/engine.h). Not
// installed; the library's public additions are sim/core/halsim_control.h.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/skin/skin_library.h"

namespace hal::sim::hsa {

using engine::Engine;

constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;
constexpr int kMaxGpuAgents = 8;
constexpr uint32_t kMaxQueueSize = 1u << 17;  // packets
constexpr uint32_t kMinQueueSize = 64;
constexpr size_t kAllocGranule = 4096;

// The library's edge (sim/skin/skin_library.h: configuration, the device
// loss handler, kernels, rule reports) and its engine.
skin::Library& L();
Engine& E();

struct Pool;

struct Agent {
  hsa_device_type_t type = HSA_DEVICE_TYPE_GPU;
  uint32_t node = 0;   // HSA_AGENT_INFO_NODE
  int gpu_index = -1;  // ordinal among the GPU agents (-1: the CPU)
  char uuid[25] = {};  // "GPU-" + 16 hex digits; "CPU-XX" for the CPU
  std::vector<Pool*> pools;
};

struct Pool {
  Agent* agent = nullptr;
  bool device = false;  // coarse-grained device memory; else fine host memory
  uint32_t global_flags = 0;
};

struct Queue;

// An hsa_signal_t is the address of one of these: a view of an engine
// signal (HSA signals are 64-bit values with wait conditions, as the
// engine's are).
struct Signal {
  engine::SignalPtr signal;
  Queue* doorbell_of = nullptr;  // the queue whose doorbell this is
  std::mutex handlers_mutex;
  engine::Queue* handlers = nullptr;  // async handlers, created on first use
};

// What the driver's hsa_queue_t* points at: the HSA structure first, so the
// pointer converts back to its queue.
struct QueueHeader {
  hsa_queue_t hsa;
  Queue* owner;
};

// An AQL queue and its packet processor's state.
struct Queue {
  QueueHeader header = {};
  Agent* agent = nullptr;
  void (*callback)(hsa_status_t, hsa_queue_t*, void*) = nullptr;
  void* callback_data = nullptr;
  // The engine queues its packets run on: a packet with the barrier bit
  // runs alone; one without it may run on the other lane beside the packet
  // before it (AQL's freedom, taken: sim_hsa_queue.cc).
  static constexpr int kLanes = 2;
  engine::Queue* lanes[kLanes] = {};
  engine::Domain domain;  // a failed packet's error (kernels, faults)
  std::atomic<uint64_t> read_index{0};
  std::atomic<uint64_t> write_index{0};
  // The packet processor (sim_hsa_queue.cc), under `mutex`: packets handed
  // to the engine, the lanes running one, packets that completed before an
  // earlier one (the read index passes only completed prefixes), and the
  // highest doorbell value (-1: never rung).
  std::mutex mutex;
  uint64_t scanned = 0;
  bool lane_busy[kLanes] = {};
  int in_flight = 0;
  std::vector<uint64_t> completed_early;
  int64_t rung = -1;
  std::atomic<bool> active{true};
  std::atomic<bool> error_reported{false};
  uint64_t trace_id = 0;
};

// A kernel object (the address of its descriptor copy, what
// HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT gives): the native kernel that
// runs it (sim_hsa_executable.cc).
struct KernelObject {
  std::string name;
  engine::Kernel kernel;
  uint32_t kernarg_size = 0;
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;
};
// Null when `kernel_object` is not one of a live executable.
const KernelObject* FindKernelObject(uint64_t kernel_object);

bool Initialized();
Agent* AgentOf(hsa_agent_t agent);  // null when not an agent
int GpuAgentCount();
Agent* GpuAgent(int index);

Signal* SignalOf(hsa_signal_t signal);  // null for handle 0
hsa_signal_t MakeSignal(uint64_t initial);

// The doorbell was rung with `value`: an idle packet processor reaches the
// next packet (sim_hsa_queue.cc).
void RingDoorbell(Queue* queue, int64_t value);

// Whether a packet of `q` that is published and not yet complete signals or
// waits on `signal` (its index in `*index`): the vendor-object reuse rule.
bool PacketUsesSignal(Queue* q, hsa_signal_t signal, uint64_t* index);
// The same over every live queue: a line naming the queue and packet, or
// empty (sim_hsa_device_loss.cc, which keeps the queue registry).
std::string QueuedPacketUsing(hsa_signal_t signal);
// An hsa_signal_condition_t as the engine's condition; false if unknown
// (sim_hsa_signal.cc).
bool ToEngineCond(uint32_t condition, engine::Cond* out);

// The barrier packets other than BARRIER_AND (sim_hsa_barrier.cc): build
// the engine op of the 64-byte packet `bytes` and set `completion`; return
// an error text for a malformed packet, as BuildOp does.
std::string BuildBarrierOr(const uint8_t* bytes, engine::Op* op,
                           hsa_signal_t* completion);
std::string BuildBarrierValue(const uint8_t* bytes, engine::Op* op,
                              hsa_signal_t* completion);

// Declares the byte ranges of a dispatch of `kernel` with the kernel
// arguments at `kernargs` to the engine's race checker (sim_hsa_races.cc).
void DeclareKernelRanges(const KernelObject& kernel, const uint8_t* kernargs,
                         engine::Op* op);

// Device loss (sim_hsa_device_loss.cc), the fault plan's lose_device_at:
// the engine calls LoseDevice once; every live queue then reports
// HSA_STATUS_ERROR_FATAL through its error callback and becomes inactive
// (its packets retire without running), and no queue can be created.
// RegisterQueue returns false (and registers nothing) once the device is
// lost; a queue is unregistered before it is destroyed.
void LoseDevice();
bool RegisterQueue(Queue* queue);
void UnregisterQueue(Queue* queue);

// Reports a queue error through its callback, once; the queue becomes
// inactive (its later packets retire without running).
void ReportQueueError(Queue* queue, hsa_status_t status, const char* what);

// Whether `agent` may touch the memory at `p`: its own device memory, or
// pool or locked memory granted to it. True for addresses outside any
// allocation (the kernel's range check reports those).
bool MayAccess(const Agent* agent, uintptr_t p);

hsa_status_t ToHsaStatus(engine::Error error);

}  // namespace hal::sim::hsa

// Every entry point starts here: the engine's settle rule counts the thread
// as inside a call. Async signal handlers run on the engine thread and may
// call the signal API (HSA allows it); they take no guard there.
#define HALSIM_ENTER() HALSIM_SKIN_ENTER_FROM_CALLBACKS(::hal::sim::hsa::L())

#define HALSIM_NEED_INIT()                     \
  do {                                         \
    if (!::hal::sim::hsa::Initialized())       \
      return HSA_STATUS_ERROR_NOT_INITIALIZED; \
  } while (0)
