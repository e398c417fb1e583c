#include "drivers/amdgpu/amdgpu_api.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "drivers/amdgpu/amdgpu_code_object.h"
#include "drivers/amdgpu/amdgpu_ring.h"
#include "drivers/amdgpu/amdgpu_status.h"
#include "hal/command_buffer.h"

#if HAL_AMDGPU_HAVE_DEVICE_LIBRARY
namespace hal::amdgpu {
// The device library's code object (device/amdgpu_blit_kernels.c for
// gfx90a), embedded by the build (device/embed.cmake).
extern const unsigned char kAmdgpuDeviceLibrary[];
extern const size_t kAmdgpuDeviceLibrary_size;
}  // namespace hal::amdgpu
#endif

namespace hal::amdgpu {

// The per-queue epoch signal starts here and drops by one per completed
// packet: far from 0 and from overflow either way.
constexpr hsa_signal_value_t kEpochBase = hsa_signal_value_t{1} << 62;

// Bytes of a range each workgroup of a blit kernel covers (64 work-items of
// 256 bytes: device/amdgpu_blit_kernels.c).
constexpr uint64_t kBlitBytesPerWorkgroup = 64 * 256;

struct HsaStream {
  size_t agent = 0;  // index in HsaApi's agents
  hsa_queue_t* queue = nullptr;
  hsa_signal_t epoch = {};
  uint8_t* kernargs = nullptr;  // kQueueSize slots of kKernargSlotBytes
  // The patch kernel's status record (device/amdgpu_dispatch_patch.c:
  // error flag, then the count that overflowed), in one more slot after
  // the kernel arguments (fine-grained memory the host reads).
  uint32_t* indirect_status = nullptr;
  std::mutex mutex;      // packet writing
  uint64_t written = 0;  // packets written (the next packet's index)
  std::atomic<int> error{HSA_STATUS_SUCCESS};  // the queue's first error
  // Host-function gates: (packets written once its barrier was, signal),
  // and the gates whose barrier completed, for reuse (the seed's pooled
  // signals: a host function creates no signal in the steady state).
  std::vector<std::pair<uint64_t, hsa_signal_t>> gates;
  std::vector<hsa_signal_t> free_gates;
  // Staged copy sources too large for the ring: (packets written once the
  // copy was, memory).
  std::vector<std::pair<uint64_t, void*>> staging;
  // The staging ring (fine-grained memory of kStagingRingBytes, allocated
  // on the first staged copy), its positions tagged by packet count.
  uint8_t* ring_memory = nullptr;
  AmdgpuRing ring{HsaApi::kStagingRingBytes};
};

namespace {

struct HsaEvent {
  HsaStream* stream = nullptr;  // null: never recorded
  uint64_t packets = 0;         // reached once this many have completed
};

struct HsaFunction {
  std::string name;
  std::vector<HsaApi::Kernel> kernels;  // per agent
  std::vector<KernelArgument> args;
};

struct HsaModule {
  std::vector<hsa_executable_t> executables;  // per agent
  KernelArgumentLayouts layouts;
  std::map<std::string, std::unique_ptr<HsaFunction>> functions;
};

HsaStream* AsStream(gpu::GpuStream s) { return static_cast<HsaStream*>(s); }
HsaEvent* AsEvent(gpu::GpuEventHandle e) { return static_cast<HsaEvent*>(e); }

uint16_t PacketHeader(unsigned type) {
  return static_cast<uint16_t>(
      (type << HSA_PACKET_HEADER_TYPE) | (1u << HSA_PACKET_HEADER_BARRIER) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

// The epoch value below which `packets` packets have completed.
hsa_signal_value_t EpochTarget(uint64_t packets) {
  return kEpochBase - static_cast<hsa_signal_value_t>(packets) + 1;
}

void OnQueueError(hsa_status_t status, hsa_queue_t*, void* data) {
  auto* s = static_cast<HsaStream*>(data);
  int expected = HSA_STATUS_SUCCESS;
  s->error.compare_exchange_strong(expected, static_cast<int>(status));
}

// A host function: runs once the work before it completed, then opens the
// gate that holds the work after it. Makes no HSA call but the store.
struct HostCall {
  gpu::GpuHostFn fn;
  void* user_data;
  hsa_signal_t gate;
  const HsaSymbols* syms;
  static bool Run(hsa_signal_value_t, void* arg) {
    std::unique_ptr<HostCall> call(static_cast<HostCall*>(arg));
    call->fn(call->user_data);
    call->syms->hsa_signal_store_screlease(call->gate, 0);
    return false;
  }
};

struct PoolSearch {
  const HsaSymbols* syms;
  bool want_device;
  hsa_amd_memory_pool_t found = {};
  bool ok = false;
};

hsa_status_t FindPool(hsa_amd_memory_pool_t pool, void* data) {
  auto* search = static_cast<PoolSearch*>(data);
  const HsaSymbols* syms = search->syms;
  hsa_amd_segment_t segment;
  uint32_t flags = 0;
  bool allowed = false;
  if (syms->hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
                                         &segment) != HSA_STATUS_SUCCESS ||
      segment != HSA_AMD_SEGMENT_GLOBAL ||
      syms->hsa_amd_memory_pool_get_info(pool,
                                         HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
                                         &flags) != HSA_STATUS_SUCCESS ||
      syms->hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &allowed) !=
          HSA_STATUS_SUCCESS ||
      !allowed) {
    return HSA_STATUS_SUCCESS;
  }
  const bool match =
      search->want_device
          ? (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0
          : (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0;
  if (!match) return HSA_STATUS_SUCCESS;
  search->found = pool;
  search->ok = true;
  return HSA_STATUS_INFO_BREAK;
}

}  // namespace

#define HSA(expr, ...) HAL_HSA_RETURN_IF_ERROR(syms_.get(), expr, __VA_ARGS__)

StatusOr<std::shared_ptr<HsaApi>> HsaApi::Create(
    std::shared_ptr<const HsaSymbols> syms, std::vector<hsa_agent_t> gpus,
    hsa_agent_t cpu) {
  std::shared_ptr<HsaApi> api(new HsaApi(std::move(syms), cpu));
  for (hsa_agent_t gpu : gpus) {
    Agent agent;
    agent.agent = gpu;
    api->agents_.push_back(std::move(agent));
    api->agent_handles_.push_back(gpu);
  }
  HAL_RETURN_IF_ERROR(api->Initialize());
  return api;
}

HsaApi::~HsaApi() {
  if (device_library_) ModuleUnload(device_library_).IgnoreError();
  // The block pools return their blocks while syms_ is alive.
  pools_.clear();
}

size_t HsaApi::StreamAgent(gpu::GpuStream stream) {
  return AsStream(stream)->agent;
}

Status HsaApi::Initialize() {
  if (agents_.empty()) return InvalidArgumentError("amdgpu: no GPU agent");
  for (size_t i = 0; i < agents_.size(); ++i) {
    PoolSearch device{syms_.get(), true};
    HSA(hsa_amd_agent_iterate_memory_pools(agents_[i].agent, FindPool, &device),
        "finding GPU agent %zu's device memory pool", i);
    if (!device.ok) {
      return UnavailableError(
          "amdgpu: GPU agent %zu has no coarse-grained device memory pool; %s",
          i, kHsaHint);
    }
    agents_[i].device_pool = device.found;
    HAL_RETURN_IF_ERROR(ReadGranule(i));
  }
  PoolSearch host{syms_.get(), false};
  HSA(hsa_amd_agent_iterate_memory_pools(cpu_, FindPool, &host),
      "finding the CPU's kernel-argument memory pool");
  if (!host.ok) {
    return UnavailableError(
        "amdgpu: the CPU agent has no fine-grained kernel-argument pool; %s",
        kHsaHint);
  }
  host_pool_ = host.found;
  return LoadDeviceLibrary();
}

Status HsaApi::ReadGranule(size_t i) {
  size_t granule = 0;
  HSA(hsa_amd_memory_pool_get_info(
          agents_[i].device_pool,
          HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, &granule),
      "GPU agent %zu's allocation granule", i);
  if (granule == 0 || (granule & (granule - 1)) != 0) {
    return UnavailableError(
        "amdgpu: GPU agent %zu's device pool has an allocation granule of %zu "
        "bytes (not a power of two)",
        i, granule);
  }
  agents_[i].granule = granule;
  return OkStatus();
}

uint64_t HsaApi::AgentMask(uint64_t queue_affinity) const {
  const size_t n = agents_.size();
  const uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  uint64_t mask = 0;
  for (size_t q = 0; q < 64 && mask != all; ++q) {
    if (queue_affinity & (uint64_t{1} << q)) mask |= uint64_t{1} << (q % n);
  }
  return mask ? mask : all;
}

Status HsaApi::AllowAgents(uint64_t agent_mask, void* p, size_t size) {
  std::vector<hsa_agent_t> agents;
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (agent_mask & (uint64_t{1} << i)) agents.push_back(agents_[i].agent);
  }
  hsa_status_t r = HsaInjectedError("hsa_amd_agents_allow_access");
  if (r == HSA_STATUS_SUCCESS) {
    r = syms_->hsa_amd_agents_allow_access(static_cast<uint32_t>(agents.size()),
                                           agents.data(), nullptr, p);
  }
  if (r != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), r, "hsa_amd_agents_allow_access",
                             "granting %zu GPU agent(s) %zu bytes",
                             agents.size(), size);
  }
  return OkStatus();
}

StatusOr<AmdgpuBlockPool*> HsaApi::PoolFor(uint64_t agent_mask) {
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto& pool = pools_[agent_mask];
  if (pool) return pool.get();
  // Placed on the lowest agent of the mask; the others are granted access.
  size_t home = 0;
  while (!(agent_mask & (uint64_t{1} << home))) ++home;
  const size_t granule = agents_[home].granule;
  AmdgpuBlockPool::Options options;
  options.block_alignment = granule;
  options.block_size = (kMinBlockBytes + granule - 1) / granule * granule;
  options.min_alignment = std::min(kBufferAlignment, granule);
  AmdgpuBlockPool::Backing backing;
  // The pool's lock is held: these make HSA calls and take memory_mutex_
  // only (never a pool's).
  backing.allocate = [this, home,
                      agent_mask](size_t size) -> StatusOr<uint64_t> {
    void* p = nullptr;
    HSA(hsa_amd_memory_pool_allocate(agents_[home].device_pool, size, 0, &p),
        "allocating a %zu-byte block of device memory on GPU agent %zu", size,
        home);
    if (agent_mask != (uint64_t{1} << home)) {
      Status st = AllowAgents(agent_mask, p, size);
      if (!st.ok()) {
        syms_->hsa_amd_memory_pool_free(p);
        return st;
      }
    }
    Track(p, size);
    return reinterpret_cast<uint64_t>(p);
  };
  backing.free = [this](uint64_t address, size_t) {
    void* p = reinterpret_cast<void*>(address);
    Untrack(p);
    syms_->hsa_amd_memory_pool_free(p);
  };
  auto created = AmdgpuBlockPool::Create(options, std::move(backing));
  if (!created.ok()) {
    pools_.erase(agent_mask);
    return created.status();
  }
  pool = std::move(*created);
  return pool.get();
}

const AmdgpuBlockPool* HsaApi::device_blocks(uint64_t agent_mask) {
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_.find(agent_mask);
  return it == pools_.end() ? nullptr : it->second.get();
}

Status HsaApi::LoadDeviceLibrary() {
#if HAL_AMDGPU_HAVE_DEVICE_LIBRARY
  gpu::GpuModule module = nullptr;
  HAL_RETURN_IF_ERROR(ModuleLoad(
      std::span<const uint8_t>(kAmdgpuDeviceLibrary, kAmdgpuDeviceLibrary_size),
      &module));
  gpu::GpuFunction fill = nullptr, copy = nullptr, patch = nullptr;
  Status s = ModuleGetFunction(module, "amdgpu_blit_fill", &fill);
  if (s.ok()) s = ModuleGetFunction(module, "amdgpu_blit_copy", &copy);
  if (s.ok()) s = ModuleGetFunction(module, "amdgpu_dispatch_patch", &patch);
  if (!s.ok()) {
    ModuleUnload(module).IgnoreError();
    return Status(s.code(), "amdgpu: the device library: " + s.message());
  }
  for (size_t i = 0; i < agents_.size(); ++i) {
    agents_[i].blit_fill = static_cast<HsaFunction*>(fill)->kernels[i];
    agents_[i].blit_copy = static_cast<HsaFunction*>(copy)->kernels[i];
    agents_[i].dispatch_patch = static_cast<HsaFunction*>(patch)->kernels[i];
  }
  device_library_ = module;
#endif
  return OkStatus();
}

Status HsaApi::AllowAllAgents(void* p, size_t size) {
  hsa_status_t r = HsaInjectedError("hsa_amd_agents_allow_access");
  if (r == HSA_STATUS_SUCCESS) {
    r = syms_->hsa_amd_agents_allow_access(
        static_cast<uint32_t>(agent_handles_.size()), agent_handles_.data(),
        nullptr, p);
  }
  if (r != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), r, "hsa_amd_agents_allow_access",
                             "granting %zu GPU agent(s) %zu bytes",
                             agent_handles_.size(), size);
  }
  return OkStatus();
}

StatusOr<uint64_t> HsaApi::Reserve(HsaStream* s, uint64_t count) {
  const uint64_t index =
      syms_->hsa_queue_add_write_index_screlease(s->queue, count);
  // A slot (and its kernel arguments) is free once the packet kQueueSize
  // earlier completed; packets complete in order (barrier bit).
  if (index + count > kQueueSize) {
    HAL_RETURN_IF_ERROR(WaitEpoch(s, index + count - kQueueSize));
  }
  return index;
}

namespace {
uint8_t* PacketSlot(HsaStream* s, uint64_t index) {
  return static_cast<uint8_t*>(s->queue->base_address) +
         (index % s->queue->size) * 64;
}
}  // namespace

template <typename Body>
void HsaApi::WriteBody(HsaStream* s, uint64_t index, Body body) {
  uint8_t* kernargs = s->kernargs + (index % kQueueSize) * kKernargSlotBytes;
  uint8_t packet[64] = {};
  body(packet, kernargs);
  std::memcpy(PacketSlot(s, index) + 2, packet + 2, 62);
}

void HsaApi::Publish(HsaStream* s, uint64_t index, uint16_t header) {
  // The header last: the packet processor takes a packet whose header is
  // valid, so the body must be visible first.
  __atomic_store_n(reinterpret_cast<uint16_t*>(PacketSlot(s, index)), header,
                   __ATOMIC_RELEASE);
}

void HsaApi::Ring(HsaStream* s, uint64_t index) {
  syms_->hsa_signal_store_screlease(s->queue->doorbell_signal,
                                    static_cast<hsa_signal_value_t>(index));
  s->written = index + 1;
}

template <typename Body>
Status HsaApi::Emit(HsaStream* s, uint16_t type, Body body) {
  HAL_ASSIGN_OR_RETURN(const uint64_t index, Reserve(s, 1));
  WriteBody(s, index, body);
  Publish(s, index, PacketHeader(type));
  Ring(s, index);
  return OkStatus();
}

Status HsaApi::WaitEpoch(HsaStream* s, uint64_t packets) {
  const hsa_signal_value_t target = EpochTarget(packets);
  // hsa_signal_wait may return before the condition holds: re-check.
  while (syms_->hsa_signal_load_scacquire(s->epoch) >= target) {
    syms_->hsa_signal_wait_scacquire(s->epoch, HSA_SIGNAL_CONDITION_LT, target,
                                     UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
  }
  return OkStatus();
}

Status HsaApi::Dispatch(HsaStream* s, const Kernel& k, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t dynamic_shared,
                        const void* kernargs, size_t kernarg_bytes) {
  std::lock_guard<std::mutex> lock(s->mutex);
  return DispatchLocked(s, k, grid, block, dynamic_shared, kernargs,
                        kernarg_bytes);
}

Status HsaApi::DispatchLocked(HsaStream* s, const Kernel& k,
                              const uint32_t grid[3], const uint32_t block[3],
                              uint32_t dynamic_shared, const void* kernargs,
                              size_t kernarg_bytes) {
  if (kernarg_bytes > kKernargSlotBytes || k.kernarg_size > kKernargSlotBytes) {
    return UnimplementedError(
        "amdgpu: kernels with more than %u bytes of arguments (this one: %u)",
        kKernargSlotBytes, k.kernarg_size);
  }
  uint32_t size[3];
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = uint64_t{grid[i]} * block[i];
    if (grid[i] == 0 || block[i] == 0 || n > UINT32_MAX) {
      return InvalidArgumentError(
          "amdgpu: grid [%u, %u, %u] of workgroups [%u, %u, %u] exceeds the "
          "AQL grid (2^32 - 1 work-items per dimension)",
          grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    }
    size[i] = static_cast<uint32_t>(n);
  }
  return Emit(s, HSA_PACKET_TYPE_KERNEL_DISPATCH,
              [&](uint8_t* packet, uint8_t* args) {
                std::memset(args, 0, k.kernarg_size);
                std::memcpy(args, kernargs, kernarg_bytes);
                hsa_kernel_dispatch_packet_t p =
                    DispatchPacket(s, k, size, block, dynamic_shared, args);
                std::memcpy(packet, &p, sizeof(p));
              });
}

hsa_kernel_dispatch_packet_t HsaApi::DispatchPacket(
    HsaStream* s, const Kernel& k, const uint32_t size[3],
    const uint32_t block[3], uint32_t dynamic_shared, void* kernargs) {
  hsa_kernel_dispatch_packet_t p = {};
  p.setup = 3 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  p.workgroup_size_x = static_cast<uint16_t>(block[0]);
  p.workgroup_size_y = static_cast<uint16_t>(block[1]);
  p.workgroup_size_z = static_cast<uint16_t>(block[2]);
  p.grid_size_x = size[0];
  p.grid_size_y = size[1];
  p.grid_size_z = size[2];
  p.private_segment_size = k.private_segment_size;
  p.group_segment_size = k.group_segment_size + dynamic_shared;
  p.kernel_object = k.object;
  p.kernarg_address = kernargs;
  p.completion_signal = s->epoch;
  return p;
}

void HsaApi::Reclaim(HsaStream* s) {
  // Gates and staging whose packet completed are free again.
  const hsa_signal_value_t now = syms_->hsa_signal_load_scacquire(s->epoch);
  std::erase_if(s->gates, [&](const std::pair<uint64_t, hsa_signal_t>& g) {
    if (now >= EpochTarget(g.first)) return false;
    s->free_gates.push_back(g.second);
    return true;
  });
  // The packets completed so far: the epoch counts down from kEpochBase.
  s->ring.Retire(static_cast<uint64_t>(kEpochBase - now));
  std::erase_if(s->staging, [&](const std::pair<uint64_t, void*>& g) {
    if (now >= EpochTarget(g.first)) return false;
    syms_->hsa_amd_memory_pool_free(g.second);
    Untrack(g.second);
    return true;
  });
}

void HsaApi::Track(const void* base, size_t size) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  accessible_[reinterpret_cast<uintptr_t>(base)] = size;
}

void HsaApi::Untrack(const void* base) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  accessible_.erase(reinterpret_cast<uintptr_t>(base));
}

bool HsaApi::Accessible(uint64_t p, size_t n) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  auto it = accessible_.upper_bound(static_cast<uintptr_t>(p));
  if (it == accessible_.begin()) return false;
  --it;
  return p - it->first <= it->second && n <= it->second - (p - it->first);
}

Status HsaApi::StreamCreate(gpu::GpuStream* out) {
  auto s = std::make_unique<HsaStream>();
  // By pairs: a HAL queue's work and callback streams share an agent.
  s->agent =
      static_cast<size_t>((streams_created_.fetch_add(1) / 2) % agents_.size());
  const hsa_agent_t agent = agents_[s->agent].agent;
  HSA(hsa_signal_create(kEpochBase, 0, nullptr, &s->epoch),
      "creating a queue's epoch signal");
  void* kernargs = nullptr;
  // The kernel-argument slots, then the indirect-dispatch status record.
  const size_t kernarg_bytes = size_t{kQueueSize + 1} * kKernargSlotBytes;
  Status st = [&]() -> Status {
    HSA(hsa_queue_create(agent, kQueueSize, HSA_QUEUE_TYPE_MULTI, OnQueueError,
                         s.get(), UINT32_MAX, UINT32_MAX, &s->queue),
        "creating an AQL queue of %u packets on GPU agent %zu", kQueueSize,
        s->agent);
    HSA(hsa_amd_memory_pool_allocate(host_pool_, kernarg_bytes, 0, &kernargs),
        "allocating a queue's kernel-argument ring");
    return AllowAllAgents(kernargs, kernarg_bytes);
  }();
  if (!st.ok()) {
    if (kernargs) syms_->hsa_amd_memory_pool_free(kernargs);
    if (s->queue) syms_->hsa_queue_destroy(s->queue);
    syms_->hsa_signal_destroy(s->epoch);
    return st;
  }
  s->kernargs = static_cast<uint8_t*>(kernargs);
  s->indirect_status = reinterpret_cast<uint32_t*>(
      s->kernargs + size_t{kQueueSize} * kKernargSlotBytes);
  std::memset(s->indirect_status, 0, 4 * sizeof(uint32_t));
  *out = s.release();
  return OkStatus();
}

Status HsaApi::StreamDestroy(gpu::GpuStream stream) {
  std::unique_ptr<HsaStream> s(AsStream(stream));
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    HAL_RETURN_IF_ERROR(WaitEpoch(s.get(), s->written));
  }
  for (auto& [packets, gate] : s->gates) syms_->hsa_signal_destroy(gate);
  for (hsa_signal_t gate : s->free_gates) syms_->hsa_signal_destroy(gate);
  for (auto& [packets, p] : s->staging) {
    syms_->hsa_amd_memory_pool_free(p);
    Untrack(p);
  }
  if (s->ring_memory) {
    Untrack(s->ring_memory);
    syms_->hsa_amd_memory_pool_free(s->ring_memory);
  }
  HSA(hsa_queue_destroy(s->queue), "%s", "");
  syms_->hsa_amd_memory_pool_free(s->kernargs);
  HSA(hsa_signal_destroy(s->epoch), "%s", "");
  return OkStatus();
}

Status HsaApi::StreamWaitEvent(gpu::GpuStream stream,
                               gpu::GpuEventHandle event) {
  HsaStream* s = AsStream(stream);
  HsaEvent* e = AsEvent(event);
  // Nothing to wait for: never recorded, recorded before any work, or on
  // this queue (in order).
  if (!e->stream || e->packets == 0 || e->stream == s) return OkStatus();
  const hsa_signal_value_t target = EpochTarget(e->packets);
  hsa_signal_t epoch = e->stream->epoch;
  std::lock_guard<std::mutex> lock(s->mutex);
  // A device-side wait: the queue's packet processor holds later packets
  // until the other queue's epoch passes the event's.
  return Emit(s, HSA_PACKET_TYPE_VENDOR_SPECIFIC,
              [&](uint8_t* packet, uint8_t*) {
                hsa_amd_barrier_value_packet_t p = {};
                p.header.AmdFormat = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;
                p.signal = epoch;
                p.value = target;
                p.mask = -1;
                p.cond = HSA_SIGNAL_CONDITION_LT;
                p.completion_signal = s->epoch;
                std::memcpy(packet, &p, sizeof(p));
              });
}

Status HsaApi::StreamSynchronize(gpu::GpuStream stream) {
  HsaStream* s = AsStream(stream);
  uint64_t packets;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    packets = s->written;
  }
  HAL_RETURN_IF_ERROR(WaitEpoch(s, packets));
  return StreamError(s);
}

Status HsaApi::StreamError(HsaStream* s) {
  if (int error = s->error.load(); error != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), static_cast<hsa_status_t>(error),
                             "hsa_queue_create (error callback)",
                             "device work failed");
  }
  // Written by the patch kernel with a release store (system scope).
  if (__atomic_load_n(&s->indirect_status[0], __ATOMIC_ACQUIRE) != 0) {
    return OutOfRangeError(
        "amdgpu: an indirect dispatch's workgroup count [%u, %u, %u] exceeds "
        "%u in a dimension, or the AQL grid (2^32 - 1 work-items per "
        "dimension) with its workgroup size; it launched nothing, and the "
        "stream stays failed",
        s->indirect_status[1], s->indirect_status[2], s->indirect_status[3],
        kMaxWorkgroupCount);
  }
  return OkStatus();
}

Status HsaApi::EventCreate(gpu::GpuEventHandle* out) {
  *out = new HsaEvent();
  return OkStatus();
}

Status HsaApi::EventDestroy(gpu::GpuEventHandle event) {
  delete AsEvent(event);
  return OkStatus();
}

Status HsaApi::EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) {
  HsaStream* s = AsStream(stream);
  HsaEvent* e = AsEvent(event);
  std::lock_guard<std::mutex> lock(s->mutex);
  e->stream = s;
  e->packets = s->written;
  return OkStatus();
}

Status HsaApi::EventQuery(gpu::GpuEventHandle event, bool* ready) {
  HsaEvent* e = AsEvent(event);
  hsa_status_t injected = HsaInjectedError("hsa_signal_load_scacquire");
  if (injected != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), injected, "hsa_signal_load_scacquire",
                             "device work failed");
  }
  if (!e->stream) {
    *ready = true;
    return OkStatus();
  }
  const bool done = syms_->hsa_signal_load_scacquire(e->stream->epoch) <
                    EpochTarget(e->packets);
  HAL_RETURN_IF_ERROR(StreamError(e->stream));
  *ready = done;
  return OkStatus();
}

Status HsaApi::EventSynchronize(gpu::GpuEventHandle event) {
  HsaEvent* e = AsEvent(event);
  if (!e->stream) return OkStatus();
  HAL_RETURN_IF_ERROR(WaitEpoch(e->stream, e->packets));
  bool ready = false;
  return EventQuery(event, &ready);
}

Status HsaApi::LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                              void* user_data) {
  HsaStream* s = AsStream(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  Reclaim(s);
  hsa_signal_t gate;
  if (!s->free_gates.empty()) {
    gate = s->free_gates.back();
    s->free_gates.pop_back();
    syms_->hsa_signal_store_screlease(gate, 1);
  } else {
    HSA(hsa_signal_create(1, 0, nullptr, &gate), "creating a host-call gate");
  }
  auto call =
      std::make_unique<HostCall>(HostCall{fn, user_data, gate, syms_.get()});
  Status st = [&]() -> Status {
    HSA(hsa_amd_signal_async_handler(s->epoch, HSA_SIGNAL_CONDITION_LT,
                                     EpochTarget(s->written), &HostCall::Run,
                                     call.get()),
        "registering a host function");
    call.release();  // HostCall::Run frees it
    return Emit(s, HSA_PACKET_TYPE_BARRIER_AND, [&](uint8_t* packet, uint8_t*) {
      hsa_barrier_and_packet_t p = {};
      p.dep_signal[0] = gate;
      p.completion_signal = s->epoch;
      std::memcpy(packet, &p, sizeof(p));
    });
  }();
  if (!st.ok()) {
    // Without a registered handler nobody touches the gate again.
    if (call) s->free_gates.push_back(gate);
    return st;
  }
  s->gates.push_back({s->written, gate});
  return OkStatus();
}

Status HsaApi::MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) {
  return MemAllocDeviceFor(size, ~uint64_t{0}, out);
}

Status HsaApi::MemAllocDeviceFor(size_t size, uint64_t queue_affinity,
                                 gpu::GpuDevicePtr* out) {
  // A suballocation of a block (or a dedicated block for large buffers),
  // already granted to the affinity's agents and tracked as GPU-reachable.
  HAL_ASSIGN_OR_RETURN(AmdgpuBlockPool * pool,
                       PoolFor(AgentMask(queue_affinity)));
  HAL_ASSIGN_OR_RETURN(*out, pool->Allocate(size, kBufferAlignment));
  return OkStatus();
}

Status HsaApi::MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) {
  // Fine-grained system memory the GPU is granted: one address for both.
  void* p = nullptr;
  HAL_RETURN_IF_ERROR(MemAllocHost(size, &p));
  {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    managed_.insert(p);
  }
  *out = reinterpret_cast<gpu::GpuDevicePtr>(p);
  return OkStatus();
}

Status HsaApi::MemFreeDevice(gpu::GpuDevicePtr ptr) {
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (auto& [mask, pool] : pools_) {
      if (pool->Owns(ptr)) return pool->Free(ptr);
    }
  }
  // Managed memory (MemAllocManaged): its own host-pool allocation.
  void* p = reinterpret_cast<void*>(ptr);
  {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    if (managed_.erase(p) == 0) {
      return NotFoundError(
          "amdgpu: 0x%llx is not a live device or managed allocation",
          static_cast<unsigned long long>(ptr));
    }
  }
  HSA(hsa_amd_memory_pool_free(p), "%s", "");
  Untrack(p);
  return OkStatus();
}

Status HsaApi::MemAllocHost(size_t size, void** out) {
  void* p = nullptr;
  HSA(hsa_amd_memory_pool_allocate(host_pool_, size, 0, &p),
      "allocating %zu bytes of fine-grained host memory", size);
  Status st = AllowAllAgents(p, size);
  if (!st.ok()) {
    syms_->hsa_amd_memory_pool_free(p);
    return st;
  }
  Track(p, size);
  *out = p;
  return OkStatus();
}

Status HsaApi::MemFreeHost(void* ptr) {
  HSA(hsa_amd_memory_pool_free(ptr), "%s", "");
  Untrack(ptr);
  return OkStatus();
}

Status HsaApi::MemHostRegister(void* ptr, size_t size) {
  void* agent_ptr = nullptr;
  HSA(hsa_amd_memory_lock(ptr, size, agent_handles_.data(),
                          static_cast<int>(agent_handles_.size()), &agent_ptr),
      "importing %zu bytes of host memory", size);
  Track(ptr, size);
  std::lock_guard<std::mutex> lock(memory_mutex_);
  registered_[ptr] = agent_ptr;
  return OkStatus();
}

Status HsaApi::MemHostUnregister(void* ptr) {
  HSA(hsa_amd_memory_unlock(ptr), "%s", "");
  Untrack(ptr);
  std::lock_guard<std::mutex> lock(memory_mutex_);
  registered_.erase(ptr);
  return OkStatus();
}

Status HsaApi::HostDevicePointer(void* host, gpu::GpuDevicePtr* out) {
  // Locked memory has the agent address hsa_amd_memory_lock gave; pool
  // memory is at the same address for every agent it was granted to.
  std::lock_guard<std::mutex> lock(memory_mutex_);
  auto it = registered_.find(host);
  *out = reinterpret_cast<gpu::GpuDevicePtr>(
      it != registered_.end() ? it->second : host);
  return OkStatus();
}

Status HsaApi::MemAllocAsync(size_t, gpu::GpuStream, gpu::GpuDevicePtr*) {
  return UnimplementedError(
      "amdgpu: stream-ordered allocation (the seed's block pools) is not done "
      "yet; queue_alloca allocates when its waits are met");
}

Status HsaApi::MemFreeAsync(gpu::GpuDevicePtr, gpu::GpuStream) {
  return UnimplementedError(
      "amdgpu: stream-ordered deallocation is not done yet");
}

Status HsaApi::MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                           size_t size, gpu::GpuStream stream) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: copies need the device library, which this build lacks (no "
        "clang with -target amdgcn-amd-amdhsa -mcpu=gfx90a and ld.lld)");
  }
  HsaStream* s = AsStream(stream);
  void* staged = nullptr;
  const bool pageable_src = !Accessible(src, size);
  if (pageable_src && size > kStagingRingBytes) {
    // Pageable host memory (an update's payload, immutable) too large for
    // the staging ring: copy it now into memory of its own.
    HAL_RETURN_IF_ERROR(MemAllocHost(size, &staged));
    std::memcpy(staged, reinterpret_cast<const void*>(src), size);
    src = reinterpret_cast<uint64_t>(staged);
  }
  void* bounce = nullptr;
  void* pageable_dst = nullptr;
  if (!Accessible(dst, size)) {
    // A pageable destination (the GPU layer reads an indirect dispatch's
    // count this way): copy through memory the GPU can write, and finish
    // the copy on the host before returning (synchronous, as HIP is for
    // pageable memory).
    Status st = MemAllocHost(size, &bounce);
    if (!st.ok()) {
      if (staged) MemFreeHost(staged).IgnoreError();
      return st;
    }
    pageable_dst = reinterpret_cast<void*>(dst);
    dst = reinterpret_cast<uint64_t>(bounce);
  }
  struct {
    uint64_t src, dst;
    uint32_t length_lo, length_hi;
  } args = {src, dst, static_cast<uint32_t>(size),
            static_cast<uint32_t>(uint64_t{size} >> 32)};
  const uint64_t groups =
      (uint64_t{size} + kBlitBytesPerWorkgroup - 1) / kBlitBytesPerWorkgroup;
  const uint32_t grid[3] = {static_cast<uint32_t>(groups), 1, 1};
  const uint32_t block[3] = {64, 1, 1};
  Status st;
  if (pageable_src && !staged) {
    // Through the staging ring: the bytes are copied now, and their ring
    // space is reused once the copy's packet completed.
    std::lock_guard<std::mutex> lock(s->mutex);
    StatusOr<uint64_t> ring =
        StageLocked(s, reinterpret_cast<const void*>(src), size);
    if (ring.ok()) {
      args.src = *ring;
      st = DispatchLocked(s, agents_[s->agent].blit_copy, grid, block, 0, &args,
                          sizeof(args));
      if (!st.ok()) s->ring.CancelNewest();
    } else {
      st = ring.status();
    }
  } else {
    st = Dispatch(s, agents_[s->agent].blit_copy, grid, block, 0, &args,
                  sizeof(args));
  }
  if (bounce) {
    if (st.ok()) st = StreamSynchronize(stream);
    if (st.ok()) std::memcpy(pageable_dst, bounce, size);
    MemFreeHost(bounce).IgnoreError();
  }
  if (pageable_src && !staged) return st;
  if (staged) {
    if (!st.ok()) {
      MemFreeHost(staged).IgnoreError();
      return st;
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    s->staging.push_back({s->written, staged});
    Reclaim(s);
  }
  return st;
}

Status HsaApi::MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                           size_t pattern_length, size_t count,
                           gpu::GpuStream stream) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: fills need the device library, which this build lacks (no "
        "clang with -target amdgcn-amd-amdhsa -mcpu=gfx90a and ld.lld)");
  }
  uint32_t replicated;
  switch (pattern_length) {
    case 1:
      replicated = (pattern & 0xffu) * 0x01010101u;
      break;
    case 2:
      replicated = (pattern & 0xffffu) * 0x00010001u;
      break;
    case 4:
      replicated = pattern;
      break;
    default:
      return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  const uint64_t bytes = uint64_t{count} * pattern_length;
  struct {
    uint64_t dst;
    uint32_t pattern, unused, length_lo, length_hi;
  } args = {dst, replicated, 0, static_cast<uint32_t>(bytes),
            static_cast<uint32_t>(bytes >> 32)};
  const uint64_t groups =
      (bytes + kBlitBytesPerWorkgroup - 1) / kBlitBytesPerWorkgroup;
  const uint32_t grid[3] = {static_cast<uint32_t>(groups), 1, 1};
  const uint32_t block[3] = {64, 1, 1};
  HsaStream* s = AsStream(stream);
  return Dispatch(s, agents_[s->agent].blit_fill, grid, block, 0, &args,
                  sizeof(args));
}

StatusOr<uint64_t> HsaApi::StageLocked(HsaStream* s, const void* src,
                                       size_t size) {
  if (!s->ring_memory) {
    void* p = nullptr;
    HAL_RETURN_IF_ERROR(MemAllocHost(kStagingRingBytes, &p));
    s->ring_memory = static_cast<uint8_t*>(p);
  }
  // Free once the packet about to be written (index s->written) completed.
  const uint64_t tag = s->written + 1;
  Reclaim(s);
  std::optional<uint64_t> position = s->ring.Reserve(size, 16, tag);
  while (!position) {
    // Full: wait for the oldest staged copy's packet, then retry.
    std::optional<uint64_t> oldest = s->ring.OldestTag();
    if (!oldest || *oldest > s->written) {
      return InternalError(
          "amdgpu: %zu bytes do not fit the staging ring, and no written "
          "packet holds it",
          size);
    }
    HAL_RETURN_IF_ERROR(WaitEpoch(s, *oldest));
    Reclaim(s);
    position = s->ring.Reserve(size, 16, tag);
  }
  uint8_t* dst = s->ring_memory + s->ring.Offset(*position);
  std::memcpy(dst, src, size);
  return reinterpret_cast<uint64_t>(dst);
}

bool HsaApi::SupportsModules() const { return true; }

Status HsaApi::ModuleLoad(std::span<const uint8_t> image, gpu::GpuModule* out) {
  auto m = std::make_unique<HsaModule>();
  HAL_ASSIGN_OR_RETURN(m->layouts, ReadKernelArgumentLayouts(image));
  hsa_code_object_reader_t reader;
  HSA(hsa_code_object_reader_create_from_memory(image.data(), image.size(),
                                                &reader),
      "reading a %zu-byte AMDGPU code object", image.size());
  // One executable per agent: kernel objects are per agent.
  Status st = [&]() -> Status {
    for (size_t i = 0; i < agents_.size(); ++i) {
      hsa_agent_t agent = agents_[i].agent;
      hsa_profile_t profile = HSA_PROFILE_BASE;
      HSA(hsa_agent_get_info(agent, HSA_AGENT_INFO_PROFILE, &profile),
          "GPU agent %zu", i);
      hsa_executable_t executable = {};
      HSA(hsa_executable_create_alt(profile,
                                    HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                    nullptr, &executable),
          "GPU agent %zu", i);
      m->executables.push_back(executable);
      HSA(hsa_executable_load_agent_code_object(executable, agent, reader,
                                                nullptr, nullptr),
          "loading a %zu-byte AMDGPU code object on GPU agent %zu",
          image.size(), i);
      HSA(hsa_executable_freeze(executable, nullptr), "GPU agent %zu", i);
    }
    return OkStatus();
  }();
  syms_->hsa_code_object_reader_destroy(reader);
  if (!st.ok()) {
    for (hsa_executable_t e : m->executables) syms_->hsa_executable_destroy(e);
    return st;
  }
  *out = m.release();
  return OkStatus();
}

Status HsaApi::ModuleUnload(gpu::GpuModule module) {
  std::unique_ptr<HsaModule> m(static_cast<HsaModule*>(module));
  for (hsa_executable_t e : m->executables) {
    HSA(hsa_executable_destroy(e), "%s", "");
  }
  return OkStatus();
}

Status HsaApi::ModuleGetFunction(gpu::GpuModule module, const char* name,
                                 gpu::GpuFunction* out) {
  auto* m = static_cast<HsaModule*>(module);
  if (auto it = m->functions.find(name); it != m->functions.end()) {
    *out = it->second.get();
    return OkStatus();
  }
  auto layout = m->layouts.find(name);
  if (layout == m->layouts.end()) {
    return InvalidArgumentError(
        "amdgpu: the code object's metadata has no kernel '%s'", name);
  }
  auto f = std::make_unique<HsaFunction>();
  f->name = name;
  f->args = layout->second;
  const std::string symbol_name = std::string(name) + ".kd";
  for (size_t i = 0; i < agents_.size(); ++i) {
    Kernel k;
    hsa_executable_symbol_t symbol;
    HSA(hsa_executable_get_symbol_by_name(
            m->executables[i], symbol_name.c_str(), &agents_[i].agent, &symbol),
        "kernel '%s' on GPU agent %zu", name, i);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            &k.kernarg_size),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
            &k.group_segment_size),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            &k.private_segment_size),
        "kernel '%s'", name);
    f->kernels.push_back(k);
  }
  for (const KernelArgument& a : f->args) {
    if (uint64_t{a.offset} + a.size > f->kernels[0].kernarg_size) {
      return InvalidArgumentError(
          "amdgpu: kernel '%s': an argument at %u (%u bytes) lies outside its "
          "%u-byte kernarg segment",
          name, a.offset, a.size, f->kernels[0].kernarg_size);
    }
  }
  *out = f.get();
  m->functions.emplace(name, std::move(f));
  return OkStatus();
}

Status HsaApi::CheckFunctionParams(gpu::GpuFunction function, uint32_t bindings,
                                   uint32_t constants) {
  auto* f = static_cast<HsaFunction*>(function);
  if (f->args.size() > uint64_t{bindings} + constants) {
    return InvalidArgumentError(
        "amdgpu: kernel '%s': the code object's metadata lists %zu explicit "
        "arguments, but the export has %u binding(s) and %u constant(s)",
        f->name.c_str(), f->args.size(), bindings, constants);
  }
  for (size_t i = 0; i < f->args.size(); ++i) {
    const uint32_t limit = i < bindings ? 8 : 4;
    if (f->args[i].size > limit) {
      return InvalidArgumentError(
          "amdgpu: kernel '%s': explicit argument %zu is %u bytes in the code "
          "object's metadata, but the export passes a %u-byte %s there",
          f->name.c_str(), i, f->args[i].size, limit,
          i < bindings ? "binding pointer" : "constant");
    }
  }
  return OkStatus();
}

namespace {

// The checks LaunchKernel and LaunchKernelIndirect share, and the kernel's
// explicit arguments packed into `args` (kKernargSlotBytes).
Status PackLaunch(const HsaFunction& f, const HsaApi::Kernel& k,
                  const uint32_t block[3], void** params, uint8_t* args) {
  if (k.kernarg_size > HsaApi::kKernargSlotBytes) {
    return UnimplementedError(
        "amdgpu: kernel '%s' takes %u bytes of arguments; at most %u are "
        "supported",
        f.name.c_str(), k.kernarg_size, HsaApi::kKernargSlotBytes);
  }
  if (uint64_t{block[0]} * block[1] * block[2] > 1024) {
    return InvalidArgumentError("amdgpu: workgroups of more than 1024 items");
  }
  // The explicit arguments, at the offsets the metadata gives; params holds
  // one pointer per argument (read now; CheckFunctionParams made sure there
  // are no more arguments than params, and none wider than its param).
  for (size_t i = 0; i < f.args.size(); ++i) {
    std::memcpy(args + f.args[i].offset, params[i], f.args[i].size);
  }
  return OkStatus();
}

// The patch kernel's arguments (device/amdgpu_dispatch_patch.c), in the
// kernel ABI's order: pointers, then 32-bit values.
struct PatchArgs {
  uint64_t packet;  // the target dispatch packet's slot
  uint64_t count;   // uint32 workgroup counts x, y, z
  uint64_t status;  // the stream's indirect_status record
  uint32_t workgroup[3];
  uint32_t max_count;        // kMaxWorkgroupCount
  uint32_t dispatch_header;  // header | setup << 16
  uint32_t noop_header;      // BARRIER_AND header (reserved bits 0)
};
constexpr size_t kPatchArgBytes = offsetof(PatchArgs, noop_header) + 4;

}  // namespace

Status HsaApi::LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                            const uint32_t block[3], uint32_t shared_memory,
                            gpu::GpuStream stream, void** params) {
  auto* f = static_cast<HsaFunction*>(function);
  HsaStream* s = AsStream(stream);
  const Kernel& k = f->kernels[s->agent];
  uint8_t args[kKernargSlotBytes] = {};
  HAL_RETURN_IF_ERROR(PackLaunch(*f, k, block, params, args));
  return Dispatch(s, k, grid, block, shared_memory, args, k.kernarg_size);
}

Status HsaApi::LaunchKernelIndirect(gpu::GpuFunction function,
                                    gpu::GpuDevicePtr grid,
                                    const uint32_t block[3],
                                    uint32_t shared_memory,
                                    gpu::GpuStream stream, void** params) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: indirect dispatch needs the device library's patch kernel "
        "(built without it: no clang with the amdgcn target)");
  }
  auto* f = static_cast<HsaFunction*>(function);
  HsaStream* s = AsStream(stream);
  const Kernel& k = f->kernels[s->agent];
  const Kernel& patch = agents_[s->agent].dispatch_patch;
  uint8_t args[kKernargSlotBytes] = {};
  HAL_RETURN_IF_ERROR(PackLaunch(*f, k, block, params, args));
  if (block[0] == 0 || block[1] == 0 || block[2] == 0) {
    return InvalidArgumentError("amdgpu: workgroup [%u, %u, %u] has a zero",
                                block[0], block[1], block[2]);
  }
  const uint64_t count = reinterpret_cast<uint64_t>(grid);
  if (!Accessible(count, 3 * sizeof(uint32_t))) {
    return InvalidArgumentError(
        "amdgpu: the indirect workgroup count at 0x%llx is not memory the "
        "GPU reaches",
        static_cast<unsigned long long>(count));
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  // Two packets: the patch dispatch, then the target dispatch, whose header
  // stays INVALID until the patch publishes it. One doorbell covers both:
  // the packet processor reaches the target only after the patch completed
  // (barrier bit), so its header is there by then.
  HAL_ASSIGN_OR_RETURN(const uint64_t index, Reserve(s, 2));
  const uint64_t target = index + 1;
  // The slot is free (Reserve waited for its previous packet); its header
  // is stored INVALID explicitly rather than trusting the packet processor
  // to have reset it, so the processor cannot take a stale header.
  Publish(s, target, HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE);
  uint16_t setup = 0;
  WriteBody(s, target, [&](uint8_t* packet, uint8_t* slot_args) {
    std::memset(slot_args, 0, k.kernarg_size);
    std::memcpy(slot_args, args, k.kernarg_size);
    const uint32_t unset[3] = {0, 0, 0};  // the patch writes the grid
    hsa_kernel_dispatch_packet_t p =
        DispatchPacket(s, k, unset, block, shared_memory, slot_args);
    setup = p.setup;
    std::memcpy(packet, &p, sizeof(p));
  });
  WriteBody(s, index, [&](uint8_t* packet, uint8_t* slot_args) {
    PatchArgs a = {};
    a.packet = reinterpret_cast<uint64_t>(PacketSlot(s, target));
    a.count = count;
    a.status = reinterpret_cast<uint64_t>(s->indirect_status);
    for (int i = 0; i < 3; ++i) a.workgroup[i] = block[i];
    // The HAL's limit, as the host-read path checks it (gpu_executable.cc).
    a.max_count = kMaxWorkgroupCount;
    a.dispatch_header =
        PacketHeader(HSA_PACKET_TYPE_KERNEL_DISPATCH) | (uint32_t{setup} << 16);
    a.noop_header = PacketHeader(HSA_PACKET_TYPE_BARRIER_AND);
    std::memset(slot_args, 0, patch.kernarg_size);
    std::memcpy(slot_args, &a, kPatchArgBytes);
    const uint32_t one[3] = {1, 1, 1};
    hsa_kernel_dispatch_packet_t p =
        DispatchPacket(s, patch, one, one, 0, slot_args);
    std::memcpy(packet, &p, sizeof(p));
  });
  Publish(s, index, PacketHeader(HSA_PACKET_TYPE_KERNEL_DISPATCH));
  Ring(s, target);
  return OkStatus();
}

bool HsaApi::SupportsGraphs() const { return false; }

#define HAL_AMDGPU_NO_GRAPHS()                                            \
  return UnimplementedError(                                              \
      "amdgpu: HSA has no graphs; command buffers are emitted as AQL at " \
      "submission (command_buffer_mode=stream)")

Status HsaApi::GraphCreate(gpu::GpuGraph*) { HAL_AMDGPU_NO_GRAPHS(); }
Status HsaApi::GraphDestroy(gpu::GpuGraph) { HAL_AMDGPU_NO_GRAPHS(); }
Status HsaApi::GraphAddEmptyNode(gpu::GpuGraph,
                                 std::span<const gpu::GpuGraphNode>,
                                 gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddKernelNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuFunction, const uint32_t[3],
                                  const uint32_t[3], uint32_t, void**,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddMemsetNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuDevicePtr, uint32_t, size_t, size_t,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddMemcpyNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuDevicePtr, gpu::GpuDevicePtr, size_t,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddHostNode(gpu::GpuGraph,
                                std::span<const gpu::GpuGraphNode>,
                                gpu::GpuHostFn, void*, gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphInstantiate(gpu::GpuGraph, gpu::GpuGraphExec*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphLaunch(gpu::GpuGraphExec, gpu::GpuStream) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphExecDestroy(gpu::GpuGraphExec) { HAL_AMDGPU_NO_GRAPHS(); }

}  // namespace hal::amdgpu
