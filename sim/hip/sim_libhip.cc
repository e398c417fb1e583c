// The HIP API simulator: a libamdhip64 stand-in that runs on the CPU.
//
// It exports the HIP entry points the HAL's HIP driver uses (found with
// plain dlsym, as the driver does with the real libamdhip64.so.5), with the
// signatures of Debian's hip_runtime_api.h (5.2.3), so the driver's own
// code runs the conformance suite without a GPU. It is a skin over the
// simulated GPU (sim/engine/engine.h), like the CUDA one (sim/cuda/): HIP
// handles, flags and hipError_t codes translated to engine calls. The engine
// does the scheduling (seeded, on a virtual clock, with the settle rule),
// memory (quarantine, ranges), races, faults and the trace; this skin adds
// what is HIP's:
//
//   * Devices: hipSetDevice picks the calling thread's device (0 until
//     set); streams, memory and modules belong to the device current when
//     they are made. A failed stream operation is a sticky device error:
//     every later call on the device reports it.
//   * Streams are engine queues; an event is a view of an engine signal
//     (hipErrorNotReady while its record is pending; a stream wait on a
//     never-recorded event is a no-op, as in HIP, and is reported:
//     halsim_unsignalled_waits). The null stream is not simulated.
//   * Stream callbacks (hipStreamAddCallback; Debian's 5.2.3 does not
//     export hipLaunchHostFunc) run on the engine thread and block their
//     stream. Calling HIP from inside one returns hipErrorNotSupported and
//     counts a violation (halsim_api_violations).
//   * Memory is the engine's: device, managed, pinned host, registered host
//     and pool memory, 0xCD-filled; transfers past an allocation or into
//     freed memory fail with hipErrorIllegalAddress (sticky).
//   * Faults (HALSIM_FAULTS, sim/core/fault_plan.h): a failed allocation is
//     hipErrorOutOfMemory, a failed stream operation hipErrorLaunchFailure
//     (sticky), a late signal a late event record.
//   * Modules (sim_libhip_module.cc): HSACO code objects (EM_AMDGPU ELF for
//     gfx90a); kernels found by their descriptors (NAME.kd) in the symbol
//     table run as the native build of the same test kernel.
//   * Graphs (sim_libhip_graph.cc): kernel, memset, 1D memcpy, host and
//     empty nodes over engine graphs.
//
// The seed (HALSIM_SEED), trace (HALSIM_TRACE), settle window
// (HALSIM_SETTLE_US) and the controls are those of every simulated library:
// sim/core/halsim_control.h. There are no HIP-specific aliases.
//
// Not simulated: the null stream, timing events, hipLaunchHostFunc,
// code-object metadata (argument lists), graph updates and child graphs.
//
// This file: initialization, errors, devices and the engine. Streams and
// events: sim_libhip_stream.cc; memory: sim_libhip_memory.cc.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sim/engine/engine_control.h"
#include "sim/hip/sim_libhip_internal.h"

namespace hal::sim::hip {

namespace {

struct LibraryState {
  std::atomic<bool> initialized{false};
  int device_count = 1;
  Device devices[kMaxDevices];
};

LibraryState& State() {
  static LibraryState* state = new LibraryState();
  return *state;
}

std::mutex& InitMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

// Static TLS (initial-exec), as the engine's (see engine.cc).
thread_local int t_device __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

Engine& E() {
  static Engine* engine = [] {
    engine::Options options;
    options.log_prefix = "halsim_hip";
    options.device_memory_bytes = kDeviceMemoryBytes;
    return new Engine(options);
  }();
  return *engine;
}

bool Initialized() { return State().initialized.load(); }
int DeviceCount() { return State().device_count; }
Device* GetDevice(int ordinal) {
  if (ordinal < 0 || ordinal >= DeviceCount()) return nullptr;
  return &State().devices[ordinal];
}
Device* Current() { return &State().devices[t_device]; }

hipError_t ToHipError(engine::Error error) {
  using engine::Error;
  switch (error) {
    case Error::kOk:
      return hipSuccess;
    case Error::kInvalidValue:
      return hipErrorInvalidValue;
    case Error::kOutOfMemory:
      return hipErrorOutOfMemory;
    case Error::kIllegalAddress:
      return hipErrorIllegalAddress;
    case Error::kLaunchFailed:
      return hipErrorLaunchFailure;
    case Error::kAlreadyRegistered:
      return hipErrorHostMemoryAlreadyRegistered;
    case Error::kNotRegistered:
      return hipErrorHostMemoryNotRegistered;
    case Error::kBusy:
      return hipErrorNotReady;
  }
  return hipErrorUnknown;
}

hipError_t HostFunctionViolation(const char* name) {
  E().CountHostCallbackViolation();
  std::fprintf(stderr,
               "halsim_hip: %s called from a stream callback; HIP forbids "
               "API calls in hipStreamAddCallback/hipLaunchHostFunc "
               "callbacks\n",
               name);
  return hipErrorNotSupported;
}

}  // namespace hal::sim::hip

namespace hal::sim::engine {
Engine& ControlEngine() { return hip::E(); }
}  // namespace hal::sim::engine

using namespace hal::sim::hip;  // NOLINT: the C ABI edge

namespace {

struct ErrorText {
  hipError_t error;
  const char* name;
  const char* text;
};
#define HALSIM_ERROR(e, text) {e, #e, text},
const ErrorText kErrors[] = {
    HALSIM_ERROR(hipSuccess, "no error") HALSIM_ERROR(hipErrorInvalidValue,
                                                      "invalid argument")
        HALSIM_ERROR(hipErrorOutOfMemory, "out of memory") HALSIM_ERROR(
            hipErrorNotInitialized, "initialization error")
            HALSIM_ERROR(hipErrorNoDevice, "no ROCm-capable device is detected")
                HALSIM_ERROR(
                    hipErrorInvalidDevice,
                    "invalid device ordinal") HALSIM_ERROR(hipErrorInvalidImage,
                                                           "device kernel "
                                                           "image is invalid")
                    HALSIM_ERROR(
                        hipErrorNoBinaryForGpu,
                        "no kernel image is available for execution on the "
                        "device") HALSIM_ERROR(hipErrorInvalidHandle,
                                               "invalid resource handle")
                        HALSIM_ERROR(hipErrorNotFound, "named symbol not found")
                            HALSIM_ERROR(hipErrorNotReady, "device not ready")
                                HALSIM_ERROR(
                                    hipErrorIllegalAddress,
                                    "an illegal memory access was encountered")
                                    HALSIM_ERROR(
                                        hipErrorHostMemoryAlreadyRegistered,
                                        "part or all of the requested memory "
                                        "range is already "
                                        "mapped")
                                        HALSIM_ERROR(
                                            hipErrorHostMemoryNotRegistered,
                                            "pointer does not correspond to a "
                                            "registered memory region")
                                            HALSIM_ERROR(
                                                hipErrorLaunchFailure,
                                                "unspecified launch failure")
                                                HALSIM_ERROR(
                                                    hipErrorNotSupported,
                                                    "operation not supported")
                                                    HALSIM_ERROR(
                                                        hipErrorUnknown,
                                                        "unknown error")};
#undef HALSIM_ERROR

const ErrorText* FindError(hipError_t e) {
  for (const ErrorText& t : kErrors) {
    if (t.error == e) return &t;
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT hipError_t hipInit(unsigned int flags) {
  HALSIM_ENTER("hipInit");
  if (flags != 0) return hipErrorInvalidValue;
  std::lock_guard<std::mutex> lock(InitMutex());
  if (Initialized()) return hipSuccess;
  if (!hal::sim::engine::ConfigureFromEnvironment(E(), "HALSIM_")) {
    return hipErrorInvalidValue;
  }
  for (int i = 0; i < kMaxDevices; ++i) State().devices[i].ordinal = i;
  State().initialized = true;
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDriverGetVersion(int* version) {
  HALSIM_ENTER("hipDriverGetVersion");
  if (!version) return hipErrorInvalidValue;
  *version = kSimDriverVersion;
  return hipSuccess;
}

// HIP returns "hipErrorUnknown" for codes it does not know.
HALSIM_EXPORT const char* hipGetErrorName(hipError_t error) {
  const ErrorText* t = FindError(error);
  return t ? t->name : "hipErrorUnknown";
}

HALSIM_EXPORT const char* hipGetErrorString(hipError_t error) {
  const ErrorText* t = FindError(error);
  return t ? t->text : "unknown error";
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT hipError_t hipGetDeviceCount(int* count) {
  HALSIM_ENTER("hipGetDeviceCount");
  HALSIM_NEED_INIT();
  if (!count) return hipErrorInvalidValue;
  *count = DeviceCount();
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
  HALSIM_ENTER("hipDeviceGet");
  HALSIM_NEED_INIT();
  if (!device) return hipErrorInvalidValue;
  if (!GetDevice(ordinal)) return hipErrorInvalidDevice;
  *device = ordinal;
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipSetDevice(int ordinal) {
  HALSIM_ENTER("hipSetDevice");
  HALSIM_NEED_INIT();
  if (!GetDevice(ordinal)) return hipErrorInvalidDevice;
  t_device = ordinal;
  return hipSuccess;
}

#define HALSIM_CHECK_DEVICE(dev) \
  HALSIM_NEED_INIT();            \
  if (!GetDevice(dev)) return hipErrorInvalidDevice

HALSIM_EXPORT hipError_t hipDeviceGetName(char* name, int len,
                                          hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceGetName");
  HALSIM_CHECK_DEVICE(dev);
  if (!name || len <= 0) return hipErrorInvalidValue;
  std::snprintf(name, len, "HAL HIP API simulator %d (gfx90a)", dev);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceGetUuid");
  HALSIM_CHECK_DEVICE(dev);
  if (!uuid) return hipErrorInvalidValue;
  hal::sim::engine::StableDeviceUuid(
      "HIPs", static_cast<uint32_t>(dev),
      reinterpret_cast<unsigned char*>(uuid->bytes));
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceTotalMem");
  HALSIM_CHECK_DEVICE(dev);
  if (!bytes) return hipErrorInvalidValue;
  *bytes = kDeviceMemoryBytes;
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDeviceGetAttribute(int* value,
                                               hipDeviceAttribute_t attr,
                                               int dev) {
  HALSIM_ENTER("hipDeviceGetAttribute");
  HALSIM_CHECK_DEVICE(dev);
  if (!value) return hipErrorInvalidValue;
  switch (attr) {
    case hipDeviceAttributeComputeCapabilityMajor:  // gfx90a: 9.0
      *value = 9;
      break;
    case hipDeviceAttributeComputeCapabilityMinor:
      *value = 0;
      break;
    case hipDeviceAttributeWarpSize:
      *value = 64;
      break;
    case hipDeviceAttributeMemoryPoolsSupported:
    case hipDeviceAttributeUnifiedAddressing:
    case hipDeviceAttributeManagedMemory:
    case hipDeviceAttributeCanMapHostMemory:
      *value = 1;
      break;
    default:
      return hipErrorInvalidValue;
  }
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t* pool,
                                                    int dev) {
  HALSIM_ENTER("hipDeviceGetDefaultMemPool");
  HALSIM_CHECK_DEVICE(dev);
  if (!pool) return hipErrorInvalidValue;
  static int pools[kMaxDevices];
  *pool = reinterpret_cast<hipMemPool_t>(&pools[dev]);
  return hipSuccess;
}
