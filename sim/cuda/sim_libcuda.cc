// The CUDA API simulator: a libcuda stand-in that runs on the CPU.
//
// It exports the driver-API entry points the HAL's CUDA driver uses
// (resolved through cuGetProcAddress, as the driver does with a real
// libcuda), so the driver's own code runs the conformance suite without a
// GPU. It is a skin over the simulated GPU (sim/engine/engine.h): CUDA
// handles, flags and CUresult codes translated to engine calls. The engine
// does the scheduling (seeded, on a virtual clock, with the settle rule),
// memory (quarantine, ranges), races, faults and the trace; this skin adds
// what is CUDA's:
//
//   * Streams are engine queues. An event is a view of an engine signal: a
//     record raises it to the event's next epoch, a stream wait or an event
//     synchronize waits for the captured epoch (a wait on a never-recorded
//     event is a no-op, as in CUDA, and is reported:
//     halsim_unsignalled_waits). Re-recording an event does not affect
//     waits enqueued before.
//   * Host functions run on the engine thread and block their stream.
//     Calling any CUDA API from inside one returns CUDA_ERROR_NOT_PERMITTED
//     and counts a violation (halsim_api_violations).
//   * Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT when
//     none is current; a failed stream operation is a sticky context error
//     (the context is an engine domain: every later call and event in the
//     context reports it) until the primary context is released.
//   * Memory is the engine's: device, managed, pinned host, registered host
//     and pool memory, 0xCD-filled; transfers past an allocation or into
//     freed (quarantined) memory fail with CUDA_ERROR_ILLEGAL_ADDRESS. A
//     size larger than the host's memory (pinned) or the device's (16 GiB)
//     is CUDA_ERROR_OUT_OF_MEMORY.
//   * Faults (HALSIM_FAULTS, alias HALSIM_CUDA_FAULTS; sim/core/
//     fault_plan.h): a failed allocation is CUDA_ERROR_OUT_OF_MEMORY, a
//     failed stream operation CUDA_ERROR_LAUNCH_FAILED (sticky), a late
//     signal a late event record.
//   * Races (engine.h): reported on stderr and counted (halsim_races);
//     HALSIM_RACES=abort (alias HALSIM_CUDA_RACES) aborts instead.
//   * Modules (sim_libcuda_module.cc): PTX kernels run as the native build
//     of the same test kernel, looked up by name.
//   * Graphs (sim_libcuda_graph.cc): kernel, memset, memcpy (1D), host and
//     empty nodes over engine graphs.
//
// The seed (HALSIM_SEED, alias HALSIM_CUDA_SEED), trace (HALSIM_TRACE),
// settle window (HALSIM_SETTLE_US) and the controls are those of every
// simulated library: sim/core/halsim_control.h. The halsim_cuda_* exports of
// sim_libcuda.h are aliases of them.
//
// Not simulated: cubin images, graph updates and child graphs, timing
// events, the legacy default stream.
//
// This file: initialization, errors, devices, contexts, cuGetProcAddress
// and the controls. Streams and events: sim_libcuda_stream.cc; memory:
// sim_libcuda_memory.cc.
#include "sim/cuda/sim_libcuda.h"

#include <cstdlib>
#include <cstring>

#include "sim/core/halsim_control.h"
#include "sim/cuda/sim_libcuda_internal.h"
#include "sim/engine/engine_control.h"

namespace hal::sim::cuda {

Engine& E() {
  static Engine* engine = [] {
    engine::Options options;
    options.log_prefix = "halsim_cuda";
    options.device_memory_bytes = kDeviceMemoryBytes;
    return new Engine(options);
  }();
  return *engine;
}

LibraryState& State() {
  static LibraryState* state = new LibraryState();
  return *state;
}

std::mutex& ContextMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

// Static TLS (initial-exec), as the engine's (see engine.cc).
thread_local std::vector<Context*> t_context_stack
    __attribute__((tls_model("initial-exec")));

Context* Current() {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

CUresult ToCuResult(engine::Error error) {
  using engine::Error;
  switch (error) {
    case Error::kOk:
      return CUDA_SUCCESS;
    case Error::kInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case Error::kOutOfMemory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case Error::kIllegalAddress:
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    case Error::kLaunchFailed:
      return CUDA_ERROR_LAUNCH_FAILED;
    case Error::kAlreadyRegistered:
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    case Error::kNotRegistered:
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    case Error::kBusy:
      return CUDA_ERROR_NOT_READY;
  }
  return CUDA_ERROR_UNKNOWN;
}

CUresult HostFunctionViolation(const char* name) {
  E().CountHostCallbackViolation();
  std::fprintf(stderr,
               "halsim_cuda: %s called from a host function; CUDA forbids "
               "API calls in cuLaunchHostFunc callbacks\n",
               name);
  return CUDA_ERROR_NOT_PERMITTED;
}

}  // namespace hal::sim::cuda

namespace hal::sim::engine {
Engine& ControlEngine() { return cuda::E(); }
}  // namespace hal::sim::engine

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge

namespace {

const char* ErrorName(CUresult r) {
  switch (r) {
#define N(x) \
  case x:    \
    return #x;
    N(CUDA_SUCCESS)
    N(CUDA_ERROR_INVALID_VALUE)
    N(CUDA_ERROR_OUT_OF_MEMORY)
    N(CUDA_ERROR_NOT_INITIALIZED)
    N(CUDA_ERROR_DEINITIALIZED)
    N(CUDA_ERROR_NO_DEVICE)
    N(CUDA_ERROR_INVALID_DEVICE)
    N(CUDA_ERROR_INVALID_CONTEXT)
    N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND)
    N(CUDA_ERROR_INVALID_IMAGE)
    N(CUDA_ERROR_INVALID_PTX)
    N(CUDA_ERROR_NOT_READY)
    N(CUDA_ERROR_ILLEGAL_ADDRESS)
    N(CUDA_ERROR_LAUNCH_FAILED)
    N(CUDA_ERROR_NOT_PERMITTED)
    N(CUDA_ERROR_NOT_SUPPORTED)
    N(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    N(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
#undef N
    default:
      return nullptr;
  }
}

const char* ErrorString(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_INVALID_IMAGE:
      return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_PTX:
      return "a PTX JIT compilation failed";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_FAILED:
      return "unspecified launch failure";
    case CUDA_ERROR_NOT_PERMITTED:
      return "operation not permitted";
    default:
      return nullptr;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT CUresult cuInit(unsigned int flags) {
  HALSIM_ENTER("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(ContextMutex());
  LibraryState& s = State();
  if (s.initialized) return CUDA_SUCCESS;
  if (!hal::sim::engine::ConfigureFromEnvironment(E(), "HALSIM_CUDA_")) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (const char* n = std::getenv("HALSIM_CUDA_DEVICES")) {
    s.device_count = std::atoi(n);
    if (s.device_count < 0 || s.device_count > 8) s.device_count = 1;
  }
  s.primary.assign(s.device_count, nullptr);
  s.initialized = true;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  HALSIM_ENTER("cuDriverGetVersion");
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  // HALSIM_CUDA_DRIVER_VERSION pretends to be another driver (tests of the
  // too-old-driver path).
  const char* v = std::getenv("HALSIM_CUDA_DRIVER_VERSION");
  *version = v ? std::atoi(v) : kSimDriverVersion;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorName(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HALSIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorString(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  HALSIM_ENTER("cuDeviceGetCount");
  HALSIM_NEED_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = State().device_count;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  HALSIM_ENTER("cuDeviceGet");
  HALSIM_NEED_INIT();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= State().device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

#define HALSIM_CHECK_DEVICE(dev)                  \
  HALSIM_NEED_INIT();                             \
  if ((dev) < 0 || (dev) >= State().device_count) \
  return CUDA_ERROR_INVALID_DEVICE

HALSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetName");
  HALSIM_CHECK_DEVICE(dev);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, len, "HAL CUDA API simulator %d", dev);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetUuid");
  HALSIM_CHECK_DEVICE(dev);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  // The CUDA skin's tag: 5e ed ca fe.
  hal::sim::engine::StableDeviceUuid(
      "\x5e\xed\xca\xfe", static_cast<uint32_t>(dev),
      reinterpret_cast<unsigned char*>(uuid->bytes));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  HALSIM_ENTER("cuDeviceTotalMem");
  HALSIM_CHECK_DEVICE(dev);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kDeviceMemoryBytes;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetAttribute(int* value,
                                            CUdevice_attribute attrib,
                                            CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetAttribute");
  HALSIM_CHECK_DEVICE(dev);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 8;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool,
                                                 CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetDefaultMemPool");
  HALSIM_CHECK_DEVICE(dev);
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  static int pools[8];
  *pool = reinterpret_cast<CUmemoryPool>(&pools[dev]);
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Contexts: primary contexts only.

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRetain");
  HALSIM_CHECK_DEVICE(dev);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(ContextMutex());
  Context*& ctx = State().primary[dev];
  if (!ctx) {
    ctx = new Context();
    ctx->device = dev;
  }
  ++ctx->refs;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRelease");
  HALSIM_CHECK_DEVICE(dev);
  std::lock_guard<std::mutex> lock(ContextMutex());
  Context*& ctx = State().primary[dev];
  if (!ctx || ctx->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->refs == 0) {
    // Releasing the last reference destroys the context and its sticky
    // error. The Context object stays (handles may still be compared).
    ctx->domain.Clear();
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  HALSIM_ENTER("cuCtxPushCurrent");
  HALSIM_NEED_INIT();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  t_context_stack.push_back(reinterpret_cast<Context*>(ctx));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  HALSIM_ENTER("cuCtxPopCurrent");
  HALSIM_NEED_INIT();
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(t_context_stack.back());
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Entry points by name.

namespace {
struct ProcEntry {
  const char* name;
  void* fn;
};
// #name keeps the un-suffixed API name; the pointer is the versioned
// definition cuda.h's macros map the name to (cuMemAlloc -> cuMemAlloc_v2).
#define HALSIM_PROC(name) {#name, reinterpret_cast<void*>(&name)},
// clang-format off
const ProcEntry kProcs[] = {
    HALSIM_PROC(cuInit)
    HALSIM_PROC(cuDriverGetVersion)
    HALSIM_PROC(cuGetErrorName)
    HALSIM_PROC(cuGetErrorString)
    HALSIM_PROC(cuDeviceGet)
    HALSIM_PROC(cuDeviceGetCount)
    HALSIM_PROC(cuDeviceGetName)
    HALSIM_PROC(cuDeviceGetUuid)
    HALSIM_PROC(cuDeviceTotalMem)
    HALSIM_PROC(cuDeviceGetAttribute)
    HALSIM_PROC(cuDeviceGetDefaultMemPool)
    HALSIM_PROC(cuDevicePrimaryCtxRetain)
    HALSIM_PROC(cuDevicePrimaryCtxRelease)
    HALSIM_PROC(cuCtxPushCurrent)
    HALSIM_PROC(cuCtxPopCurrent)
    HALSIM_PROC(cuStreamCreate)
    HALSIM_PROC(cuStreamDestroy)
    HALSIM_PROC(cuStreamWaitEvent)
    HALSIM_PROC(cuStreamSynchronize)
    HALSIM_PROC(cuEventCreate)
    HALSIM_PROC(cuEventDestroy)
    HALSIM_PROC(cuEventRecord)
    HALSIM_PROC(cuEventQuery)
    HALSIM_PROC(cuEventSynchronize)
    HALSIM_PROC(cuLaunchHostFunc)
    HALSIM_PROC(cuMemAlloc)
    HALSIM_PROC(cuMemAllocManaged)
    HALSIM_PROC(cuMemFree)
    HALSIM_PROC(cuMemHostAlloc)
    HALSIM_PROC(cuMemFreeHost)
    HALSIM_PROC(cuMemHostRegister)
    HALSIM_PROC(cuMemHostUnregister)
    HALSIM_PROC(cuMemHostGetDevicePointer)
    HALSIM_PROC(cuMemAllocFromPoolAsync)
    HALSIM_PROC(cuMemFreeAsync)
    HALSIM_PROC(cuMemcpyAsync)
    HALSIM_PROC(cuMemsetD8Async)
    HALSIM_PROC(cuMemsetD16Async)
    HALSIM_PROC(cuMemsetD32Async)
    HALSIM_PROC(cuModuleLoadDataEx)
    HALSIM_PROC(cuModuleUnload)
    HALSIM_PROC(cuModuleGetFunction)
    HALSIM_PROC(cuLaunchKernel)
    HALSIM_PROC(cuGraphCreate)
    HALSIM_PROC(cuGraphDestroy)
    HALSIM_PROC(cuGraphAddEmptyNode)
    HALSIM_PROC(cuGraphAddKernelNode)
    HALSIM_PROC(cuGraphAddMemsetNode)
    HALSIM_PROC(cuGraphAddMemcpyNode)
    HALSIM_PROC(cuGraphAddHostNode)
    HALSIM_PROC(cuGraphInstantiateWithFlags)
    HALSIM_PROC(cuGraphLaunch)
    HALSIM_PROC(cuGraphExecDestroy)
};
// clang-format on
#undef HALSIM_PROC
}  // namespace

HALSIM_EXPORT CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  HALSIM_ENTER("cuGetProcAddress");
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (cuda_version > kSimDriverVersion) {
    if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (const ProcEntry& e : kProcs) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// The CUDA 11.3-11.8 signature, for callers that ask for it by name.
#undef cuGetProcAddress
HALSIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                        int cuda_version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, nullptr);
}

// ---------------------------------------------------------------------------
// The halsim_cuda_* controls (sim_libcuda.h): aliases of halsim_control.h.

#define HALSIM_CUDA_ALIAS(ret, alias, target, params, args) \
  HALSIM_EXPORT ret alias params { return target args; }
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_host_functions_launched,
                  halsim_host_functions_launched, (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_host_functions_run,
                  halsim_host_functions_run, (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_api_violations, halsim_api_violations,
                  (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_stream_work_done, halsim_work_done,
                  (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_kernels_run, halsim_kernels_run, (void),
                  ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_graphs_run, halsim_graphs_run, (void),
                  ())
HALSIM_CUDA_ALIAS(void, halsim_cuda_pause_host_functions,
                  halsim_pause_host_functions, (int paused), (paused))
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_seed, halsim_seed, (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_trace_hash, halsim_trace_hash, (void),
                  ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_trace_length, halsim_trace_length,
                  (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_virtual_time_ns, halsim_virtual_time_ns,
                  (void), ())
HALSIM_CUDA_ALIAS(int, halsim_cuda_reset_schedule, halsim_reset_schedule,
                  (uint64_t seed), (seed))
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_races, halsim_races, (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_unrecorded_waits,
                  halsim_unsignalled_waits, (void), ())
HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_unsettled_steps, halsim_unsettled_steps,
                  (void), ())
HALSIM_CUDA_ALIAS(int, halsim_cuda_set_faults, halsim_set_faults,
                  (const char* plan), (plan))
#undef HALSIM_CUDA_ALIAS
