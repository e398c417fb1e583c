// The CUDA API simulator: a libcuda stand-in that runs on the CPU.
//
// It exports the driver-API entry points the HAL's CUDA driver resolves
// through cuGetProcAddress (sim_libcuda_procs.inc), so the driver's
// own code runs the conformance suite without a GPU. It is a skin over the
// simulated GPU (sim/engine/) through the helpers every skin shares
// (sim/skin/skin_stream.h: streams, events, memory, graphs, kernels, handles):
// CUDA handles, flags and CUresult codes translated to those. What is CUDA's:
//
//   * Primary contexts only, current through cuCtxPushCurrent/PopCurrent.
//     Calls that need one fail with CUDA_ERROR_INVALID_CONTEXT when none is
//     current; a failed stream operation is a sticky context error until the
//     primary context is released.
//   * Calling CUDA from a host function (cuLaunchHostFunc, host nodes)
//     returns CUDA_ERROR_NOT_PERMITTED and counts a violation.
//   * Faults (HALSIM_FAULTS, alias HALSIM_CUDA_FAULTS): a failed allocation
//     is CUDA_ERROR_OUT_OF_MEMORY, a failed stream operation
//     CUDA_ERROR_LAUNCH_FAILED (sticky); a bad access ILLEGAL_ADDRESS.
//   * PTX modules (sim_libcuda_module.cc); graphs (sim_libcuda_graph.cc).
//
// The seed (HALSIM_SEED, alias HALSIM_CUDA_SEED), trace and controls are
// those of every simulated library (sim/core/halsim_control.h); the
// halsim_cuda_* exports of sim_libcuda.h are aliases of them. Not simulated:
// cubin images, graph updates and child graphs, timing events, the legacy
// default stream.
#include "sim/cuda/sim_libcuda.h"

#include <cstdlib>
#include <cstring>

#include "sim/core/halsim_control.h"
#include "sim/cuda/sim_libcuda_internal.h"
#include "sim/skin/skin_control.h"

namespace hal::sim::cuda {

namespace {
// clang-format off
const skin::ErrorRow<CUresult> kErrors[] = {
  HALSIM_ERROR_ROW(kOk, CUDA_SUCCESS, "no error"),
  HALSIM_ERROR_ROW(kInvalidValue, CUDA_ERROR_INVALID_VALUE, "invalid argument"),
  HALSIM_ERROR_ROW(kOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
  HALSIM_ERROR_ROW(kNotInitialized, CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
  HALSIM_ERROR_ROW(kNone, CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
  HALSIM_ERROR_ROW(kNone, CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
  HALSIM_ERROR_ROW(kInvalidDevice, CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
  HALSIM_ERROR_ROW(kInvalidContext, CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
  HALSIM_ERROR_ROW(kInvalidHandle, CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
  HALSIM_ERROR_ROW(kNotFound, CUDA_ERROR_NOT_FOUND, "named symbol not found"),
  HALSIM_ERROR_ROW(kInvalidImage, CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
  HALSIM_ERROR_ROW(kNone, CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
  HALSIM_ERROR_ROW(kNotReady, CUDA_ERROR_NOT_READY, "device not ready"),
  HALSIM_ERROR_ROW(kIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
  HALSIM_ERROR_ROW(kLaunchFailed, CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
  HALSIM_ERROR_ROW(kNotPermitted, CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
  HALSIM_ERROR_ROW(kNotSupported, CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
  HALSIM_ERROR_ROW(kAlreadyRegistered, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
  HALSIM_ERROR_ROW(kNotRegistered, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
  HALSIM_ERROR_ROW(kNone, CUDA_ERROR_UNKNOWN, "unknown error"),
};
const skin::AttributeRow<CUdevice_attribute> kAttributes[] = {
  {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
  {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
  {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
  {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
  {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
  {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
};
// clang-format on

// Static TLS (initial-exec), as the engine's (see engine.cc).
thread_local std::vector<skin::Scope*> t_context_stack
    __attribute__((tls_model("initial-exec")));
}  // namespace

skin::StreamLibrary& L() {
  static skin::StreamLibrary* library = new skin::StreamLibrary({
      .log_prefix = "halsim_cuda",
      .api = "CUDA",
      .env_alias = "HALSIM_CUDA_",
      .devices_env = "HALSIM_CUDA_DEVICES",
      .kernel_dir = HALSIM_KERNEL_MODULES_DIR,
      .callback_rule = "CUDA forbids API calls in cuLaunchHostFunc callbacks",
  });
  return *library;
}

CUresult Cu(Code code) { return skin::ToVendor(kErrors, code); }

skin::Scope* Current() {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

}  // namespace hal::sim::cuda

HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::cuda::L)

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT CUresult cuInit(unsigned int flags) {
  HALSIM_ENTER("cuInit");
  return Cu(L().Init(flags));
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
  return Cu(skin::ErrorText(kErrors, error, /*name=*/true, str));
}

HALSIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  return Cu(skin::ErrorText(kErrors, error, /*name=*/false, str));
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  HALSIM_ENTER("cuDeviceGetCount");
  return Cu(L().DeviceCount(count));
}

HALSIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  HALSIM_ENTER("cuDeviceGet");
  return Cu(L().GetDevice(ordinal, device));
}

HALSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetName");
  return Cu(L().DeviceName(dev, name, len, "HAL CUDA API simulator %d"));
}

HALSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetUuid");
  // The CUDA skin's tag: 5e ed ca fe.
  return Cu(
      L().DeviceUuid(dev, "\x5e\xed\xca\xfe", uuid ? uuid->bytes : nullptr));
}

HALSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  HALSIM_ENTER("cuDeviceTotalMem");
  return Cu(L().DeviceTotalMem(dev, bytes));
}

HALSIM_EXPORT CUresult cuDeviceGetAttribute(int* value,
                                            CUdevice_attribute attrib,
                                            CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetAttribute");
  return Cu(L().DeviceAttribute(kAttributes, dev, attrib, value));
}

HALSIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool,
                                                 CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetDefaultMemPool");
  return Cu(L().DefaultPool(dev, pool));
}

// ---------------------------------------------------------------------------
// Contexts: primary contexts only, one per device (the device's scope).

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRetain");
  return Cu(L().RetainScope(dev, pctx));
}

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRelease");
  return Cu(L().ReleaseScope(dev));
}

HALSIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  HALSIM_ENTER_INIT("cuCtxPushCurrent");
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  t_context_stack.push_back(reinterpret_cast<skin::Scope*>(ctx));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  HALSIM_ENTER_INIT("cuCtxPopCurrent");
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(t_context_stack.back());
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Entry points by name (sim_libcuda_procs.inc). #name keeps the un-suffixed
// API name; the pointer is the versioned definition cuda.h's macros map the
// name to (cuMemAlloc -> cuMemAlloc_v2).

namespace {
struct ProcEntry {
  const char* name;
  void* fn;
};
#define HALSIM_CUDA_PROC(name) {#name, reinterpret_cast<void*>(&name)},
const ProcEntry kProcs[] = {
#include "sim/cuda/sim_libcuda_procs.inc"
};
#undef HALSIM_CUDA_PROC
}  // namespace

HALSIM_EXPORT CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  HALSIM_ENTER("cuGetProcAddress");
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cuda_version > kSimDriverVersion) {
    result = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  } else {
    for (const ProcEntry& e : kProcs) {
      if (std::strcmp(e.name, symbol) == 0) {
        *pfn = e.fn;
        result = CU_GET_PROC_ADDRESS_SUCCESS;
      }
    }
  }
  if (status) *status = result;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
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
#define HALSIM_CUDA_COUNTER(alias, target) \
  HALSIM_CUDA_ALIAS(uint64_t, halsim_cuda_##alias, halsim_##target, (void), ())
HALSIM_CUDA_COUNTER(host_functions_launched, host_functions_launched)
HALSIM_CUDA_COUNTER(host_functions_run, host_functions_run)
HALSIM_CUDA_COUNTER(api_violations, api_violations)
HALSIM_CUDA_COUNTER(stream_work_done, work_done)
HALSIM_CUDA_COUNTER(kernels_run, kernels_run)
HALSIM_CUDA_COUNTER(graphs_run, graphs_run)
HALSIM_CUDA_COUNTER(seed, seed)
HALSIM_CUDA_COUNTER(trace_hash, trace_hash)
HALSIM_CUDA_COUNTER(trace_length, trace_length)
HALSIM_CUDA_COUNTER(virtual_time_ns, virtual_time_ns)
HALSIM_CUDA_COUNTER(races, races)
HALSIM_CUDA_COUNTER(unrecorded_waits, unsignalled_waits)
HALSIM_CUDA_COUNTER(unsettled_steps, unsettled_steps)
HALSIM_CUDA_ALIAS(void, halsim_cuda_pause_host_functions,
                  halsim_pause_host_functions, (int paused), (paused))
HALSIM_CUDA_ALIAS(int, halsim_cuda_reset_schedule, halsim_reset_schedule,
                  (uint64_t seed), (seed))
HALSIM_CUDA_ALIAS(int, halsim_cuda_set_faults, halsim_set_faults,
                  (const char* plan), (plan))
#undef HALSIM_CUDA_COUNTER
#undef HALSIM_CUDA_ALIAS
