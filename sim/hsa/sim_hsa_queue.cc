// The HSA skin's AQL queues and their packet processor.
//
// A queue is a power-of-two ring of 64-byte packets in host memory, with
// absolute read and write indices and a doorbell signal. The packet
// processor is this file over one engine queue per HSA queue:
//
//   * The packet processor hands one packet at a time to the engine, and
//     reads its header and body only when it reaches it: when the doorbell
//     rings (any store to it) with the processor idle, or when the packet
//     before it completed. So a packet may be published after the doorbell
//     as long as that happens before the processor gets there (AQL allows
//     it: the AMDGPU driver's indirect-dispatch patch kernel publishes the
//     packet after it). The engine thread reads only packets a doorbell
//     covered (index <= the highest value rung); a doorbell also takes
//     valid packets past its value. A packet a doorbell covered whose
//     header is still INVALID when the processor reaches it is an error
//     (with the seed) reported through the queue's callback
//     (HSA_STATUS_ERROR_INVALID_PACKET_FORMAT): real hardware would wait
//     for it, the simulator reports it so that a missing publish does not
//     hang a test; the processor stays there and a later doorbell looks
//     again. The ring is registered with the engine, so kernels may write
//     packets into it.
//   * The engine runs a queue's packets in order, each once its waits
//     hold, and takes AQL's freedom: a packet without the barrier bit
//     starts as soon as the packet before it started (on the queue's second
//     engine lane, when that one is free), so the two overlap in virtual
//     time, finish in the seed's order, and the race checker sees them
//     together; a packet with the barrier bit starts once every packet
//     before it completed. KERNEL_DISPATCH (the
//     kernel object's native build over the grid, arguments read from the
//     kernarg address when it runs), BARRIER_AND (each dependency == 0),
//     BARRIER_OR (any dependency == 0; null handles ignored, none: no
//     wait) and AMD BARRIER_VALUE ((value & mask) cond compare, signed;
//     sim_hsa_barrier.cc). On completion the header goes back to INVALID,
//     the read index advances and the completion signal is decremented.
//   * A malformed packet (unknown type, bad fence scope, bad geometry, an
//     unknown kernel object) or a failed kernel (an access outside an
//     allocation, an injected fault) is reported through the queue's error
//     callback once, and the queue becomes inactive. Unlike a real queue,
//     which stops, the later packets still retire (without running their
//     work) so that nothing waiting on them hangs in a test.
//
// A dispatch whose kernel arguments or pointer arguments lie in memory not
// granted to the queue's agent is a queue error too (MayAccess).
//
// Races: the driver's blit kernels declare their exact ranges (BuildOp);
// other kernels declare the first 4 bytes at each pointer argument as
// written (sim_hsa_races.cc says why no more).
//
// Device loss (HALSIM_FAULTS lose_device_at, sim_hsa_device_loss.cc): every
// queue reports HSA_STATUS_ERROR_FATAL once and becomes inactive, as above.
//
// Not simulated yet: agent dispatch packets, the packet processor picking
// packets up before any doorbell.
#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

namespace {

Queue* QueueOf(const hsa_queue_t* queue) {
  if (!queue) return nullptr;
  return reinterpret_cast<const QueueHeader*>(queue)->owner;
}

uint8_t* Slot(Queue* q, uint64_t index) {
  return static_cast<uint8_t*>(q->header.hsa.base_address) +
         (index & (q->header.hsa.size - 1)) * 64;
}

uint16_t LoadHeader(const uint8_t* slot) {
  return __atomic_load_n(reinterpret_cast<const uint16_t*>(slot),
                         __ATOMIC_ACQUIRE);
}

void StoreHeader(uint8_t* slot, uint16_t header) {
  __atomic_store_n(reinterpret_cast<uint16_t*>(slot), header, __ATOMIC_RELEASE);
}

// Builds the engine op of the packet at `index` (a copy of its 64 bytes).
// Returns an error text for a malformed packet (the op then only retires).
std::string BuildOp(Queue* q, uint64_t index, const uint8_t* bytes,
                    engine::Op* op, hsa_signal_t* completion) {
  uint16_t header;
  std::memcpy(&header, bytes, 2);
  const unsigned type = header & 0xff;
  const unsigned acquire =
      (header >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3;
  const unsigned release =
      (header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3;
  completion->handle = 0;
  if (acquire > HSA_FENCE_SCOPE_SYSTEM || release > HSA_FENCE_SCOPE_SYSTEM) {
    return "fence scope 3 is reserved";
  }
  switch (type) {
    case HSA_PACKET_TYPE_KERNEL_DISPATCH: {
      hsa_kernel_dispatch_packet_t p;
      std::memcpy(&p, bytes, sizeof(p));
      *completion = p.completion_signal;
      op->name = "hsa_dispatch";
      const unsigned dims = p.setup & 3;
      const uint32_t wg[3] = {p.workgroup_size_x, p.workgroup_size_y,
                              p.workgroup_size_z};
      const uint32_t size[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
      if (dims < 1 || dims > 3) return "dispatch with setup dimensions 0";
      uint32_t grid[3];
      for (int i = 0; i < 3; ++i) {
        if (wg[i] == 0 || size[i] == 0) return "dispatch with a zero size";
        if (size[i] % wg[i] != 0) {
          return "grid size not a multiple of the workgroup size (partial "
                 "workgroups are not simulated)";
        }
        grid[i] = size[i] / wg[i];
      }
      const KernelObject* ko = FindKernelObject(p.kernel_object);
      if (!ko) return "unknown kernel object";
      const hal_sim_kernel_info* info = ko->kernel.info;
      if (wg[0] != info->workgroup_size[0] ||
          wg[1] != info->workgroup_size[1] ||
          wg[2] != info->workgroup_size[2]) {
        return "workgroup size differs from the one the native build of '" +
               ko->name + "' runs";
      }
      if (ko->kernarg_size && !p.kernarg_address) return "no kernarg address";
      const uint8_t* kernargs = static_cast<const uint8_t*>(p.kernarg_address);
      // The AMDGPU driver's blits (drivers/amdgpu/device/
      // amdgpu_blit_kernels.c: fill(dst, pattern, unused, length) and
      // copy(src, dst, length), the length as two u32 at byte 16) declare
      // their exact ranges to the race checker, as a copy or fill of the
      // other skins does. Kernel arguments are written before the header,
      // so they can be read now. Other kernels: DeclareKernelRanges.
      if (ko->kernarg_size >= 24 &&
          (ko->name == "amdgpu_blit_fill" || ko->name == "amdgpu_blit_copy")) {
        uint64_t first, second;
        uint32_t lo, hi;
        std::memcpy(&first, kernargs, 8);
        std::memcpy(&second, kernargs + 8, 8);
        std::memcpy(&lo, kernargs + 16, 4);
        std::memcpy(&hi, kernargs + 20, 4);
        const uint64_t length = (uint64_t{hi} << 32) | lo;
        if (ko->name == "amdgpu_blit_fill") {
          op->write = Range::Of(static_cast<uintptr_t>(first), length);
        } else {
          op->read = Range::Of(static_cast<uintptr_t>(first), length);
          op->write = Range::Of(static_cast<uintptr_t>(second), length);
        }
        op->bytes = length;
      } else if (ko->name == "amdgpu_dispatch_patch" &&
                 ko->kernarg_size >= 24) {
        // The indirect-dispatch patch kernel (drivers/amdgpu/device/
        // amdgpu_dispatch_patch.c: packet, count, status): it writes the
        // 64-byte packet and the 16-byte status record, and only reads the
        // 12-byte count, which unordered dispatches on several queues may
        // share (the 4-byte write DeclareKernelRanges assumes would report
        // that as a race).
        uint64_t packet, count, status;
        std::memcpy(&packet, kernargs, 8);
        std::memcpy(&count, kernargs + 8, 8);
        std::memcpy(&status, kernargs + 16, 8);
        op->write = Range::Of(static_cast<uintptr_t>(packet), 64);
        op->more_writes.push_back(
            Range::Of(static_cast<uintptr_t>(status), 16));
        op->read = Range::Of(static_cast<uintptr_t>(count), 12);
      } else {
        DeclareKernelRanges(*ko, kernargs, op);
      }
      op->run = [q, ko, kernargs, g0 = grid[0], g1 = grid[1], g2 = grid[2]] {
        if (!q->active.load()) return;
        // The kernel ABI's arguments: binding pointers, then constants.
        const hal_sim_kernel_info* info = ko->kernel.info;
        std::vector<uintptr_t> pointers(info->binding_count);
        std::vector<uint32_t> constants(info->constant_count);
        for (uint32_t i = 0; i < info->binding_count; ++i) {
          uint64_t v;
          std::memcpy(&v, kernargs + 8 * i, 8);
          pointers[i] = static_cast<uintptr_t>(v);
        }
        for (uint32_t i = 0; i < info->constant_count; ++i) {
          std::memcpy(&constants[i], kernargs + 8 * info->binding_count + 4 * i,
                      4);
        }
        // hsa_amd_agents_allow_access is a real HSA rule: a GPU that
        // touches memory it was not granted faults.
        for (uint32_t i = 0; i <= info->binding_count; ++i) {
          const uintptr_t p = i < info->binding_count
                                  ? pointers[i]
                                  : reinterpret_cast<uintptr_t>(kernargs);
          if (MayAccess(q->agent, p)) continue;
          char what[256];
          std::snprintf(what, sizeof(what),
                        "kernel '%s' on agent %s touches memory at 0x%" PRIxPTR
                        " (%s) that was not granted to it "
                        "(hsa_amd_agents_allow_access)",
                        ko->name.c_str(), q->agent->uuid, p,
                        i < info->binding_count ? "a pointer argument"
                                                : "its kernel arguments");
          ReportQueueError(q,
                           static_cast<hsa_status_t>(
                               HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION),
                           what);
          return;
        }
        const uint32_t grid[3] = {g0, g1, g2};
        E().KernelWork(&q->domain, &ko->kernel, grid, std::move(pointers),
                       std::move(constants))();
      };
      return "";
    }
    case HSA_PACKET_TYPE_BARRIER_AND: {
      hsa_barrier_and_packet_t p;
      std::memcpy(&p, bytes, sizeof(p));
      *completion = p.completion_signal;
      op->name = "hsa_barrier_and";
      op->zero_time = true;
      for (hsa_signal_t dep : p.dep_signal) {
        if (!dep.handle) continue;
        Signal* s = SignalOf(dep);
        op->waits.push_back({s->signal, engine::Cond::kEq, 0});
      }
      return "";
    }
    case HSA_PACKET_TYPE_VENDOR_SPECIFIC:
      return BuildBarrierValue(bytes, op, completion);
    case HSA_PACKET_TYPE_BARRIER_OR:
      return BuildBarrierOr(bytes, op, completion);
    case HSA_PACKET_TYPE_AGENT_DISPATCH:
      return "agent dispatch packets are not simulated";
    default:
      return "unknown packet type " + std::to_string(type);
  }
  (void)index;
}

}  // namespace

void ReportQueueError(Queue* q, hsa_status_t status, const char* what) {
  q->active.store(false);
  if (q->error_reported.exchange(true)) return;
  std::fprintf(stderr, "halsim_hsa: seed %" PRIu64 ": queue %" PRIu64 ": %s\n",
               E().seed(), q->header.hsa.id, what);
  if (q->callback) q->callback(status, &q->header.hsa, q->callback_data);
}

namespace {

// The packet processor reaches the next packet (q->mutex held): called when
// the doorbell rings, and when a packet completes. It reads a packet's
// header and body only when it may start it: with the processor idle, or,
// for a packet without the barrier bit, while one packet runs (then on the
// free lane). A packet may be published (its header stored) after the
// doorbell, by the host or by the GPU (the AMDGPU driver's indirect-dispatch
// patch kernel publishes the packet after it): one still INVALID while
// another runs is looked at again when that one completes. `from_doorbell`:
// on the host thread that rang; the engine thread reads only packets a
// doorbell covered, so what it reads does not depend on how far a host
// thread got in writing a later packet.
void Advance(Queue* q, bool from_doorbell);

void AdvanceOne(Queue* q, bool from_doorbell, bool* started) {
  *started = false;
  if (q->in_flight >= Queue::kLanes) return;
  const uint64_t index = q->scanned;
  if (index >= q->write_index.load(std::memory_order_acquire)) return;
  const bool rung = q->rung >= 0 && index <= static_cast<uint64_t>(q->rung);
  if (!from_doorbell && !rung) return;
  uint8_t* slot = Slot(q, index);
  const uint16_t header = LoadHeader(slot);
  if (q->in_flight > 0 && ((header & 0xff) == HSA_PACKET_TYPE_INVALID ||
                           (header >> HSA_PACKET_HEADER_BARRIER) & 1)) {
    return;  // after the running packet completes
  }
  if ((header & 0xff) == HSA_PACKET_TYPE_INVALID) {
    // Real hardware waits for the header of a packet a doorbell covered;
    // the simulator reports it instead, so that a packet nobody publishes
    // does not hang a test. The processor stays here: a later doorbell
    // looks again.
    if (rung) {
      char what[240];
      std::snprintf(what, sizeof(what),
                    "packet %" PRIu64
                    " was still INVALID when the packet processor reached "
                    "it (doorbell %" PRId64
                    "): write the body, then the header, then ring the "
                    "doorbell (or publish it from an earlier packet)",
                    index, q->rung);
      ReportQueueError(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, what);
    }
    return;
  }
  uint8_t bytes[64];
  std::memcpy(bytes, slot, 64);
  engine::Op op;
  hsa_signal_t completion;
  std::string bad = BuildOp(q, index, bytes, &op, &completion);
  if (!bad.empty()) {
    op = engine::Op();
    op.name = "hsa_bad_packet";
    op.zero_time = true;
    std::string what = "packet " + std::to_string(index) + ": " + bad;
    op.run = [q, what] {
      ReportQueueError(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, what.c_str());
    };
  }
  int lane = 0;
  while (q->lane_busy[lane]) ++lane;
  engine::Work work = std::move(op.run);
  op.run = [q, index, lane, work = std::move(work)] {
    if (work) work();
    if (q->domain.failed()) {
      const bool fault = q->domain.error() == engine::Error::kLaunchFailed;
      ReportQueueError(q,
                       fault ? HSA_STATUS_ERROR_EXCEPTION
                             : static_cast<hsa_status_t>(
                                   HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION),
                       fault ? "an injected packet fault (HALSIM_FAULTS)"
                             : "a kernel accessed memory outside its "
                               "allocations");
    }
    StoreHeader(Slot(q, index), HSA_PACKET_TYPE_INVALID);
    // The next packet is enqueued behind this one, which stays at the head
    // of its engine lane until its completion signal is applied.
    std::lock_guard<std::mutex> lock(q->mutex);
    // The read index passes completed packets only, in order: a packet
    // that overtook an earlier one waits in `completed_early`.
    uint64_t read = q->read_index.load(std::memory_order_relaxed);
    if (index == read) {
      ++read;
      for (bool more = true; more;) {
        auto it = std::find(q->completed_early.begin(),
                            q->completed_early.end(), read);
        more = it != q->completed_early.end();
        if (more) {
          q->completed_early.erase(it);
          ++read;
        }
      }
      q->read_index.store(read, std::memory_order_release);
    } else {
      q->completed_early.push_back(index);
    }
    q->lane_busy[lane] = false;
    --q->in_flight;
    Advance(q, /*from_doorbell=*/false);
  };
  if (Signal* s = SignalOf(completion)) {
    op.signals.push_back({s->signal, engine::SignalOp::kSub, 1, nullptr});
  }
  q->lane_busy[lane] = true;
  ++q->in_flight;
  ++q->scanned;
  *started = true;
  E().Enqueue(q->lanes[lane], std::move(op));
}

void Advance(Queue* q, bool from_doorbell) {
  for (bool started = true; started;) {
    AdvanceOne(q, from_doorbell, &started);
  }
}

}  // namespace

bool PacketUsesSignal(Queue* q, hsa_signal_t signal, uint64_t* index) {
  // Every AQL packet has its completion signal at byte 56; barrier-and and
  // barrier-or wait on five handles from byte 8, barrier-value on one.
  const uint64_t end = q->write_index.load(std::memory_order_acquire);
  const uint64_t size = q->header.hsa.size;
  uint64_t i = q->read_index.load(std::memory_order_acquire);
  if (end - i > size) i = end - size;
  for (; i < end; ++i) {
    const uint8_t* slot = Slot(q, i);
    const unsigned type = LoadHeader(slot) & 0xff;
    if (type == HSA_PACKET_TYPE_INVALID) continue;  // done or not published
    auto handle = [slot](size_t offset) {
      return __atomic_load_n(reinterpret_cast<const uint64_t*>(slot + offset),
                             __ATOMIC_RELAXED);
    };
    int first = 7, last = 7;  // 8-byte words: the completion signal
    if (type == HSA_PACKET_TYPE_BARRIER_AND ||
        type == HSA_PACKET_TYPE_BARRIER_OR) {
      first = 1;
    } else if (type == HSA_PACKET_TYPE_VENDOR_SPECIFIC) {
      first = 1;
      last = 1;
    }
    bool uses = handle(56) == signal.handle;
    for (int w = first; w <= last && w < 7; ++w) {
      uses = uses || handle(8 * w) == signal.handle;
    }
    if (uses) {
      *index = i;
      return true;
    }
  }
  return false;
}

void RingDoorbell(Queue* q, int64_t value) {
  std::lock_guard<std::mutex> lock(q->mutex);
  if (value > q->rung) q->rung = value;
  Advance(q, /*from_doorbell=*/true);
}

}  // namespace hal::sim::hsa

using namespace hal::sim::hsa;  // NOLINT: the C ABI edge

namespace {
std::atomic<uint64_t> g_next_queue_id{0};
}

HALSIM_EXPORT hsa_status_t hsa_queue_create(
    hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
    void (*callback)(hsa_status_t status, hsa_queue_t* source, void* data),
    void* data, uint32_t private_segment_size, uint32_t group_segment_size,
    hsa_queue_t** queue) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  (void)private_segment_size;
  (void)group_segment_size;
  Agent* a = AgentOf(agent);
  if (!a) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!queue ||
      (type != HSA_QUEUE_TYPE_MULTI && type != HSA_QUEUE_TYPE_SINGLE)) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  if (a->type != HSA_DEVICE_TYPE_GPU || size < kMinQueueSize ||
      size > kMaxQueueSize || (size & (size - 1)) != 0) {
    return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
  }
  auto* q = new Queue();
  q->agent = a;
  q->callback = callback;
  q->callback_data = data;
  q->header.owner = q;
  void* ring = std::aligned_alloc(64, size_t{size} * 64);
  if (!ring) {
    delete q;
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  for (uint32_t i = 0; i < size; ++i) {
    uint16_t invalid = HSA_PACKET_TYPE_INVALID;
    std::memset(static_cast<uint8_t*>(ring) + size_t{i} * 64, 0, 64);
    std::memcpy(static_cast<uint8_t*>(ring) + size_t{i} * 64, &invalid, 2);
  }
  // The ring is memory the queue's agent reaches: a kernel may write
  // packets (the AMDGPU driver's indirect-dispatch patch kernel), and the
  // engine's kernel work checks that every pointer lies in an allocation.
  if (E().Register(reinterpret_cast<uintptr_t>(ring), size_t{size} * 64) !=
      hal::sim::engine::Error::kOk) {
    std::free(ring);
    delete q;
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  hsa_signal_t doorbell = MakeSignal(0);
  SignalOf(doorbell)->doorbell_of = q;
  for (auto*& lane : q->lanes) lane = E().CreateQueue();
  hsa_queue_t& h = q->header.hsa;
  h.type = type;
  h.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  h.base_address = ring;
  h.doorbell_signal = doorbell;
  h.size = size;
  h.id = g_next_queue_id.fetch_add(1);
  if (!RegisterQueue(q)) {  // the device was lost
    for (auto* lane : q->lanes) E().DestroyQueue(lane);
    SignalOf(doorbell)->doorbell_of = nullptr;
    delete SignalOf(doorbell);
    std::free(ring);
    delete q;
    return HSA_STATUS_ERROR_FATAL;
  }
  *queue = &h;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t* queue) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Queue* q = QueueOf(queue);
  if (!q) return HSA_STATUS_ERROR_INVALID_QUEUE;
  UnregisterQueue(q);
  // Waits for the packets handed over (HSA drops them; a driver destroys
  // only idle queues).
  for (auto* lane : q->lanes) E().DestroyQueue(lane);
  Signal* doorbell = SignalOf(q->header.hsa.doorbell_signal);
  doorbell->doorbell_of = nullptr;
  delete doorbell;
  E().Unregister(reinterpret_cast<uintptr_t>(q->header.hsa.base_address));
  std::free(q->header.hsa.base_address);
  delete q;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_queue_inactivate(hsa_queue_t* queue) {
  HALSIM_ENTER();
  Queue* q = QueueOf(queue);
  if (!q) return HSA_STATUS_ERROR_INVALID_QUEUE;
  q->active.store(false);
  return HSA_STATUS_SUCCESS;
}

#define HALSIM_LOAD_INDEX(which, suffix)                                  \
  HALSIM_EXPORT uint64_t hsa_queue_load_##which##_index_##suffix(         \
      const hsa_queue_t* queue) {                                         \
    return QueueOf(queue)->which##_index.load(std::memory_order_acquire); \
  }
HALSIM_LOAD_INDEX(read, scacquire)
HALSIM_LOAD_INDEX(read, relaxed)
HALSIM_LOAD_INDEX(read, acquire)
HALSIM_LOAD_INDEX(write, scacquire)
HALSIM_LOAD_INDEX(write, relaxed)
HALSIM_LOAD_INDEX(write, acquire)

#define HALSIM_STORE_INDEX(which, suffix)                                  \
  HALSIM_EXPORT void hsa_queue_store_##which##_index_##suffix(             \
      const hsa_queue_t* queue, uint64_t value) {                          \
    QueueOf(queue)->which##_index.store(value, std::memory_order_release); \
  }
HALSIM_STORE_INDEX(write, relaxed)
HALSIM_STORE_INDEX(write, screlease)
HALSIM_STORE_INDEX(write, release)
HALSIM_STORE_INDEX(read, relaxed)
HALSIM_STORE_INDEX(read, screlease)

#define HALSIM_CAS_INDEX(suffix)                                     \
  HALSIM_EXPORT uint64_t hsa_queue_cas_write_index_##suffix(         \
      const hsa_queue_t* queue, uint64_t expected, uint64_t value) { \
    uint64_t e = expected;                                           \
    QueueOf(queue)->write_index.compare_exchange_strong(e, value);   \
    return e;                                                        \
  }
#define HALSIM_ADD_INDEX(suffix)                             \
  HALSIM_EXPORT uint64_t hsa_queue_add_write_index_##suffix( \
      const hsa_queue_t* queue, uint64_t value) {            \
    return QueueOf(queue)->write_index.fetch_add(value);     \
  }
HALSIM_CAS_INDEX(scacq_screl)
HALSIM_CAS_INDEX(scacquire)
HALSIM_CAS_INDEX(relaxed)
HALSIM_CAS_INDEX(screlease)
HALSIM_ADD_INDEX(scacq_screl)
HALSIM_ADD_INDEX(scacquire)
HALSIM_ADD_INDEX(relaxed)
HALSIM_ADD_INDEX(screlease)
