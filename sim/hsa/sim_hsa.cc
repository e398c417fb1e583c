// The HSA simulator: a libhsa-runtime64 (ROCr) stand-in that runs on the
// CPU, over the simulated GPU (sim/engine/engine.h).
//
// It exports the hsa_* / hsa_amd_* entry points the AMDGPU driver uses,
// with the signatures of Debian's hsa.h / hsa_ext_amd.h (5.2.3), so the
// driver's own code runs the conformance suite without a GPU:
//
//   * Agents: one CPU agent, then N GPU agents (gfx90a, UUID "GPU-<16 hex>"),
//     N from HALSIM_HSA_GPU_AGENTS (default 1, at most 8). ROCR_VISIBLE_DEVICES
//     (a comma-separated list of ordinals) keeps only those GPUs, renumbered.
//   * Memory pools (this file): a coarse-grained device pool per GPU, a
//     fine-grained host pool with KERNARG_INIT on the CPU; allocations are the
//     engine's (0xCD-filled, range-checked, quarantined when freed).
//     Access is enforced: a GPU agent may touch device memory of its own
//     pool, and any other pool or locked memory only once granted
//     (hsa_amd_agents_allow_access, or the agents given to
//     hsa_amd_memory_lock); a kernel that touches memory its agent was not
//     granted is a queue error (MayAccess, checked per dispatch).
//   * Signals (sim_hsa_signal.cc): engine signals, every operation and
//     memory order; waits with seeded spurious wake-ups.
//   * Queues (sim_hsa_queue.cc): AQL rings whose packets the engine runs in
//     order on one engine queue per HSA queue.
//   * Executables (sim_hsa_executable.cc): code objects parsed from the ELF,
//     kernels run as the native build of the same kernel.
//
// The seed, trace, faults and races are the engine's (HALSIM_SEED, ...;
// sim/core/halsim_control.h), with the alias prefix HALSIM_HSA_.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "sim/hsa/sim_hsa_internal.h"
#include "sim/skin/skin_control.h"

namespace hal::sim::hsa {

namespace {

struct LibraryState {
  std::mutex mutex;
  int init_count = 0;
  std::atomic<bool> initialized{false};
  bool built = false;
  Agent cpu;
  Pool cpu_pool;
  int gpu_count = 0;
  Agent gpus[kMaxGpuAgents];
  Pool gpu_pools[kMaxGpuAgents];
  std::mutex access_mutex;
  // Per allocation base (pool memory and locked memory): the agents that
  // may access it (the owner of device memory, then grants).
  std::map<uintptr_t, std::vector<const Agent*>> access;
};

LibraryState& State() {
  static LibraryState* state = new LibraryState();
  return *state;
}

// HALSIM_HSA_GPU_AGENTS: 0 to 8 GPU agents (1 when unset or invalid).
int ConfiguredGpuCount() {
  const int n = L().ConfiguredDeviceCount(1, 0, kMaxGpuAgents);
  return n < 0 ? 1 : n;
}

// Builds the topology once: the CPU agent, then the GPUs that
// ROCR_VISIBLE_DEVICES keeps.
void BuildTopologyLocked(LibraryState& s) {
  if (s.built) return;
  s.built = true;
  s.cpu.type = HSA_DEVICE_TYPE_CPU;
  s.cpu.node = 0;
  std::snprintf(s.cpu.uuid, sizeof(s.cpu.uuid), "CPU-XX");
  s.cpu_pool.agent = &s.cpu;
  s.cpu_pool.device = false;
  s.cpu_pool.global_flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT |
                            HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
  s.cpu.pools = {&s.cpu_pool};
  const int physical = ConfiguredGpuCount();
  std::vector<int> visible;
  if (const char* env = std::getenv("ROCR_VISIBLE_DEVICES"); env) {
    const char* p = env;
    while (*p) {
      char* end = nullptr;
      long v = std::strtol(p, &end, 10);
      if (end == p) break;
      if (v >= 0 && v < physical) visible.push_back(static_cast<int>(v));
      p = *end == ',' ? end + 1 : end;
      if (end && *end && *end != ',') break;
    }
  } else {
    for (int i = 0; i < physical; ++i) visible.push_back(i);
  }
  for (int physical_index : visible) {
    if (s.gpu_count == kMaxGpuAgents) break;
    Agent& a = s.gpus[s.gpu_count];
    Pool& pool = s.gpu_pools[s.gpu_count];
    a.type = HSA_DEVICE_TYPE_GPU;
    a.node = static_cast<uint32_t>(1 + physical_index);
    a.gpu_index = s.gpu_count;
    // Stable per physical ordinal, as the engine's other skins do.
    unsigned char bytes[16];
    engine::StableDeviceUuid("HSAs", static_cast<uint32_t>(physical_index),
                             bytes);
    std::snprintf(a.uuid, sizeof(a.uuid),
                  "GPU-%02x%02x%02x%02x%02x%02x%02x%02x", bytes[0], bytes[1],
                  bytes[2], bytes[3], bytes[12], bytes[13], bytes[14],
                  bytes[15]);
    pool.agent = &a;
    pool.device = true;
    pool.global_flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
    a.pools = {&pool};
    ++s.gpu_count;
  }
}

Pool* PoolOf(hsa_amd_memory_pool_t pool) {
  LibraryState& s = State();
  auto* p = reinterpret_cast<Pool*>(pool.handle);
  if (p == &s.cpu_pool) return p;
  for (int i = 0; i < s.gpu_count; ++i) {
    if (p == &s.gpu_pools[i]) return p;
  }
  return nullptr;
}

// The status table: names and texts as hsa_status_string gives them
// ("HSA_STATUS_X: text"), and the neutral codes they answer.
#define HALSIM_HSA_ROW(code, status, text)                                    \
  {                                                                           \
    ::hal::sim::skin::Code::code, static_cast<hsa_status_t>(status), #status, \
        #status ": " text                                                     \
  }
// clang-format off
const skin::ErrorRow<hsa_status_t> kErrors[] = {
  HALSIM_HSA_ROW(kOk, HSA_STATUS_SUCCESS, "The function has been executed successfully."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_INFO_BREAK, "A traversal over a list of elements has been interrupted by the application."),
  HALSIM_HSA_ROW(kNotReady, HSA_STATUS_ERROR, "A generic error has occurred."),
  HALSIM_HSA_ROW(kInvalidValue, HSA_STATUS_ERROR_INVALID_ARGUMENT, "One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_QUEUE_CREATION, "The requested queue creation is not valid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_ALLOCATION, "The requested allocation is not valid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_AGENT, "The agent is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_REGION, "The memory region is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_SIGNAL, "The signal is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_QUEUE, "The queue is invalid."),
  HALSIM_HSA_ROW(kOutOfMemory, HSA_STATUS_ERROR_OUT_OF_RESOURCES, "The HSA runtime failed to allocate the necessary resources."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "The AQL packet is malformed."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_RESOURCE_FREE, "An error has been detected while releasing a resource."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_NOT_INITIALIZED, "An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_EXECUTABLE, "The executable is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "The executable is frozen."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "There is no symbol with the given name."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "The code object is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "The code object reader is invalid."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, "The arguments passed in are not compatible."),
  HALSIM_HSA_ROW(kLaunchFailed, HSA_STATUS_ERROR_EXCEPTION, "An HSAIL operation resulted in a hardware exception."),
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR_FATAL, "An error has occurred in the runtime which is not recoverable; the application must exit."),
  HALSIM_HSA_ROW(kIllegalAddress, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, "The agent attempted to access memory beyond the largest legal address."),
  HALSIM_HSA_ROW(kAlreadyRegistered, HSA_STATUS_ERROR_INVALID_ARGUMENT, "registered"),
  HALSIM_HSA_ROW(kNotRegistered, HSA_STATUS_ERROR_INVALID_ARGUMENT, "not registered"),
  // What an unmapped code becomes.
  HALSIM_HSA_ROW(kNone, HSA_STATUS_ERROR, "A generic error has occurred."),
};
// clang-format on
#undef HALSIM_HSA_ROW

template <typename T>
void Put(void* value, T v) {
  std::memcpy(value, &v, sizeof(T));
}

}  // namespace

skin::Library& L() {
  static skin::Library* library = new skin::Library({
      .log_prefix = "halsim_hsa",
      .api = "HSA",
      .env_alias = "HALSIM_HSA_",
      .devices_env = "HALSIM_HSA_GPU_AGENTS",
      .kernel_dir = HALSIM_KERNEL_MODULES_DIR,
      .callback_rule = nullptr,  // signal handlers may call the API
      .kinds = {},
      .device_memory_bytes = kDeviceMemoryBytes,
      .before_leak_report = nullptr,
      .device_loss_handler = &LoseDevice,
  });
  return *library;
}

Engine& E() { return L().engine(); }

bool Initialized() { return State().initialized.load(); }
int GpuAgentCount() { return State().gpu_count; }
Agent* GpuAgent(int index) {
  if (index < 0 || index >= State().gpu_count) return nullptr;
  return &State().gpus[index];
}

Agent* AgentOf(hsa_agent_t agent) {
  LibraryState& s = State();
  auto* a = reinterpret_cast<Agent*>(agent.handle);
  if (a == &s.cpu) return a;
  for (int i = 0; i < s.gpu_count; ++i) {
    if (a == &s.gpus[i]) return a;
  }
  return nullptr;
}

bool MayAccess(const Agent* agent, uintptr_t p) {
  engine::Allocation a;
  if (!E().FindAllocation(p, &a)) return true;  // the kernel's own check
  LibraryState& s = State();
  std::lock_guard<std::mutex> lock(s.access_mutex);
  auto it = s.access.find(a.base);
  if (it == s.access.end()) return true;  // not HSA memory (engine-internal)
  for (const Agent* granted : it->second) {
    if (granted == agent) return true;
  }
  return false;
}

hsa_status_t ToHsaStatus(engine::Error error) {
  return skin::ToVendor(kErrors, error);
}

}  // namespace hal::sim::hsa

HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::hsa::L)

using namespace hal::sim::hsa;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;
namespace skin = hal::sim::skin;

// ---------------------------------------------------------------------------
// Initialization and errors.

HALSIM_EXPORT hsa_status_t hsa_init() {
  HALSIM_ENTER();
  LibraryState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) {
    if (!L().ApplyEnvironment()) {
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    BuildTopologyLocked(s);
    s.initialized.store(true);
  }
  ++s.init_count;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_shut_down() {
  HALSIM_ENTER();
  LibraryState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  // The topology and engine stay: objects of an earlier init may still be
  // referenced by a driver that re-initializes.
  if (--s.init_count == 0) s.initialized.store(false);
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_status_string(hsa_status_t status,
                                             const char** out) {
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (skin::ErrorText(kErrors, status, /*name=*/false, out) !=
      skin::Code::kOk) {
    *out = "unknown HSA status";
  }
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attribute,
                                               void* value) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attribute) {
    case HSA_SYSTEM_INFO_VERSION_MAJOR:
      Put<uint16_t>(value, 1);
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_VERSION_MINOR:
      Put<uint16_t>(value, 1);
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_TIMESTAMP:
      Put<uint64_t>(value, E().virtual_time_ns());
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY:
      Put<uint64_t>(value, 1000000000);
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT:
      Put<uint64_t>(value, UINT64_MAX);
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_ENDIANNESS:
      Put<hsa_endianness_t>(value, HSA_ENDIANNESS_LITTLE);
      return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_MACHINE_MODEL:
      Put<hsa_machine_model_t>(value, HSA_MACHINE_MODEL_LARGE);
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

// ---------------------------------------------------------------------------
// Agents.

HALSIM_EXPORT hsa_status_t hsa_iterate_agents(
    hsa_status_t (*callback)(hsa_agent_t agent, void* data), void* data) {
  HALSIM_NEED_INIT();
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  LibraryState& s = State();
  hsa_status_t r = callback({reinterpret_cast<uint64_t>(&s.cpu)}, data);
  if (r != HSA_STATUS_SUCCESS) return r;
  for (int i = 0; i < s.gpu_count; ++i) {
    r = callback({reinterpret_cast<uint64_t>(&s.gpus[i])}, data);
    if (r != HSA_STATUS_SUCCESS) return r;
  }
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent,
                                              hsa_agent_info_t attribute,
                                              void* value) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Agent* a = AgentOf(agent);
  if (!a) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const bool gpu = a->type == HSA_DEVICE_TYPE_GPU;
  // The hsa_amd_agent_info_t values (0xA000 and up) lie outside
  // hsa_agent_info_t's range: read the bits, not the enum.
  static_assert(sizeof(attribute) == sizeof(int));
  int raw_attribute;
  std::memcpy(&raw_attribute, &attribute, sizeof(raw_attribute));
  switch (raw_attribute) {
    case HSA_AGENT_INFO_NAME: {
      char name[64] = {};
      std::snprintf(name, sizeof(name), "%s", gpu ? "gfx90a" : "halsim-cpu");
      std::memcpy(value, name, sizeof(name));
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_VENDOR_NAME: {
      char name[64] = {};
      std::snprintf(name, sizeof(name), "%s", gpu ? "AMD" : "CPU");
      std::memcpy(value, name, sizeof(name));
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_DEVICE:
      Put<hsa_device_type_t>(value, a->type);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_FEATURE:
      Put<hsa_agent_feature_t>(value,
                               gpu ? HSA_AGENT_FEATURE_KERNEL_DISPATCH
                                   : static_cast<hsa_agent_feature_t>(0));
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_NODE:
      Put<uint32_t>(value, a->node);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_PROFILE:
      Put<hsa_profile_t>(value, HSA_PROFILE_BASE);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      Put<uint32_t>(value, gpu ? 64 : 0);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
      Put<uint32_t>(value, gpu ? 1024 : 0);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUES_MAX:
      Put<uint32_t>(value, gpu ? 128 : 0);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MIN_SIZE:
      Put<uint32_t>(value, gpu ? kMinQueueSize : 0);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
      Put<uint32_t>(value, gpu ? kMaxQueueSize : 0);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_TYPE:
      Put<hsa_queue_type32_t>(value, HSA_QUEUE_TYPE_MULTI);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_VERSION_MAJOR:
      Put<uint16_t>(value, 1);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_VERSION_MINOR:
      Put<uint16_t>(value, 1);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_UUID:
      std::memcpy(value, a->uuid, sizeof(a->uuid));
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
      Put<uint32_t>(value, gpu ? 104 : 2);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME: {
      char name[64] = {};
      std::snprintf(
          name, sizeof(name), "%s",
          gpu ? "HAL simulated AMD GPU (gfx90a)" : "HAL simulator host");
      std::memcpy(value, name, sizeof(name));
      return HSA_STATUS_SUCCESS;
    }
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

// ---------------------------------------------------------------------------
// Memory pools and memory.

HALSIM_EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent,
    hsa_status_t (*callback)(hsa_amd_memory_pool_t pool, void* data),
    void* data) {
  HALSIM_NEED_INIT();
  Agent* a = AgentOf(agent);
  if (!a) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (Pool* p : a->pools) {
    hsa_status_t r = callback({reinterpret_cast<uint64_t>(p)}, data);
    if (r != HSA_STATUS_SUCCESS) return r;
  }
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_amd_memory_pool_get_info(
    hsa_amd_memory_pool_t memory_pool, hsa_amd_memory_pool_info_t attribute,
    void* value) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Pool* p = PoolOf(memory_pool);
  if (!p) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attribute) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      Put<hsa_amd_segment_t>(value, HSA_AMD_SEGMENT_GLOBAL);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      Put<uint32_t>(value, p->global_flags);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
      Put<size_t>(value, kDeviceMemoryBytes);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
      Put<bool>(value, true);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT:
      Put<size_t>(value, kAllocGranule);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL:
      Put<bool>(value, !p->device);
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

HALSIM_EXPORT hsa_status_t
hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t memory_pool, size_t size,
                             uint32_t flags, void** ptr) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Pool* p = PoolOf(memory_pool);
  if (!p || !ptr || size == 0 || flags != 0) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  if (size > kDeviceMemoryBytes) return HSA_STATUS_ERROR_INVALID_ALLOCATION;
  engine::Error e = E().Allocate(
      size, p->device ? engine::MemoryKind::kDevice : engine::MemoryKind::kHost,
      kAllocGranule, ptr);
  if (e == engine::Error::kOutOfMemory)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (e == engine::Error::kOk) {
    LibraryState& s = State();
    std::lock_guard<std::mutex> lock(s.access_mutex);
    auto& list = s.access[reinterpret_cast<uintptr_t>(*ptr)];
    list.clear();
    if (p->device) list.push_back(p->agent);
  }
  return ToHsaStatus(e);
}

HALSIM_EXPORT hsa_status_t hsa_amd_memory_pool_free(void* ptr) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!ptr) return HSA_STATUS_SUCCESS;
  engine::Allocation a;
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  if (!E().AllocationAt(base, &a) || (a.kind != engine::MemoryKind::kDevice &&
                                      a.kind != engine::MemoryKind::kHost)) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  {
    LibraryState& s = State();
    std::lock_guard<std::mutex> lock(s.access_mutex);
    s.access.erase(base);
  }
  return ToHsaStatus(E().Free(base, a.kind == engine::MemoryKind::kHost));
}

HALSIM_EXPORT hsa_status_t
hsa_amd_agents_allow_access(uint32_t num_agents, const hsa_agent_t* agents,
                            const uint32_t* flags, const void* ptr) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (num_agents == 0 || !agents || !ptr || flags) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  engine::Allocation a;
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  if (!E().AllocationAt(base, &a)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  LibraryState& s = State();
  std::vector<const Agent*> granted;
  for (uint32_t i = 0; i < num_agents; ++i) {
    Agent* agent = AgentOf(agents[i]);
    if (!agent) return HSA_STATUS_ERROR_INVALID_AGENT;
    granted.push_back(agent);
  }
  std::lock_guard<std::mutex> lock(s.access_mutex);
  auto& list = s.access[base];
  list.insert(list.end(), granted.begin(), granted.end());
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_amd_memory_lock(void* host_ptr, size_t size,
                                               hsa_agent_t* agents,
                                               int num_agent,
                                               void** agent_ptr) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!host_ptr || size == 0 || !agent_ptr || num_agent < 0 ||
      (num_agent > 0 && !agents)) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  LibraryState& s = State();
  std::vector<const Agent*> granted;
  for (int i = 0; i < num_agent; ++i) {
    Agent* agent = AgentOf(agents[i]);
    if (!agent) return HSA_STATUS_ERROR_INVALID_AGENT;
    granted.push_back(agent);
  }
  if (num_agent == 0) {  // every agent, as ROCr does
    for (int i = 0; i < s.gpu_count; ++i) granted.push_back(&s.gpus[i]);
  }
  engine::Error e = E().Register(reinterpret_cast<uintptr_t>(host_ptr), size);
  if (e != engine::Error::kOk) return ToHsaStatus(e);
  {
    std::lock_guard<std::mutex> lock(s.access_mutex);
    s.access[reinterpret_cast<uintptr_t>(host_ptr)] = std::move(granted);
  }
  // Unified addressing: the agents see the memory at the host address.
  *agent_ptr = host_ptr;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_amd_memory_unlock(void* host_ptr) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!host_ptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  {
    LibraryState& s = State();
    std::lock_guard<std::mutex> lock(s.access_mutex);
    s.access.erase(reinterpret_cast<uintptr_t>(host_ptr));
  }
  return ToHsaStatus(E().Unregister(reinterpret_cast<uintptr_t>(host_ptr)));
}
