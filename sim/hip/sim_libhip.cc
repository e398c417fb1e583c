// The HIP API simulator: a libamdhip64 stand-in that runs on the CPU.
//
// It exports the HIP entry points the HAL's HIP driver uses (found with
// plain dlsym, as the driver does with the real libamdhip64.so.5), with the
// signatures of Debian's hip_runtime_api.h (5.2.3), so the driver's own
// code runs the conformance suite without a GPU. It is a skin over the
// simulated GPU (sim/engine/engine.h) through the helpers every skin shares
// (sim/skin/skin_stream.h: streams, events, memory, graphs, kernels, the handle
// table), like the CUDA one: HIP handles, flags and hipError_t codes
// translated to those. What is HIP's:
//
//   * Devices: hipSetDevice picks the calling thread's device (0 until
//     set); streams, memory and modules belong to the device current when
//     they are made. A failed stream operation is a sticky device error:
//     every later call on the device reports it.
//   * hipErrorNotReady while an event's record is pending; the null stream
//     is not simulated.
//   * Stream callbacks (hipStreamAddCallback; Debian's 5.2.3 does not
//     export hipLaunchHostFunc) run on the engine thread and block their
//     stream. Calling HIP from inside one returns hipErrorNotSupported and
//     counts a violation (halsim_api_violations).
//   * Faults (HALSIM_FAULTS, sim/core/fault_plan.h): a failed allocation is
//     hipErrorOutOfMemory, a failed stream operation hipErrorLaunchFailure
//     (sticky); an access outside an allocation hipErrorIllegalAddress.
//   * Modules (sim_libhip_module.cc): HSACO code objects (EM_AMDGPU ELF for
//     gfx90a); graphs (sim_libhip_graph.cc).
//
// The seed (HALSIM_SEED), trace (HALSIM_TRACE), settle window
// (HALSIM_SETTLE_US) and the controls are those of every simulated library:
// sim/core/halsim_control.h. There are no HIP-specific aliases.
//
// Not simulated: the null stream, timing events, hipLaunchHostFunc,
// code-object metadata (argument lists), graph updates and child graphs.
//
// This file: the library, errors and devices. Streams, events and memory:
// sim_libhip_stream.cc.
#include <cstring>

#include "sim/hip/sim_libhip_internal.h"
#include "sim/skin/skin_control.h"

namespace hal::sim::hip {

namespace {
// clang-format off
const skin::ErrorRow<hipError_t> kErrors[] = {
  HALSIM_ERROR_ROW(kOk, hipSuccess, "no error"),
  HALSIM_ERROR_ROW(kInvalidValue, hipErrorInvalidValue, "invalid argument"),
  HALSIM_ERROR_ROW(kOutOfMemory, hipErrorOutOfMemory, "out of memory"),
  HALSIM_ERROR_ROW(kNotInitialized, hipErrorNotInitialized, "initialization error"),
  HALSIM_ERROR_ROW(kNone, hipErrorNoDevice, "no ROCm-capable device is detected"),
  HALSIM_ERROR_ROW(kInvalidDevice, hipErrorInvalidDevice, "invalid device ordinal"),
  HALSIM_ERROR_ROW(kInvalidImage, hipErrorInvalidImage, "device kernel image is invalid"),
  HALSIM_ERROR_ROW(kNone, hipErrorNoBinaryForGpu, "no kernel image is available for execution on the device"),
  HALSIM_ERROR_ROW(kInvalidHandle, hipErrorInvalidHandle, "invalid resource handle"),
  HALSIM_ERROR_ROW(kNotFound, hipErrorNotFound, "named symbol not found"),
  HALSIM_ERROR_ROW(kNotReady, hipErrorNotReady, "device not ready"),
  HALSIM_ERROR_ROW(kIllegalAddress, hipErrorIllegalAddress, "an illegal memory access was encountered"),
  HALSIM_ERROR_ROW(kAlreadyRegistered, hipErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
  HALSIM_ERROR_ROW(kNotRegistered, hipErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
  HALSIM_ERROR_ROW(kLaunchFailed, hipErrorLaunchFailure, "unspecified launch failure"),
  HALSIM_ERROR_ROW(kNotSupported, hipErrorNotSupported, "operation not supported"),
  // HIP has no "not permitted": a call from a stream callback is this.
  HALSIM_ERROR_ROW(kNotPermitted, hipErrorNotSupported, "operation not supported"),
  HALSIM_ERROR_ROW(kNone, hipErrorUnknown, "unknown error"),
};
const skin::AttributeRow<hipDeviceAttribute_t> kAttributes[] = {
  {hipDeviceAttributeComputeCapabilityMajor, 9},  // gfx90a: 9.0
  {hipDeviceAttributeComputeCapabilityMinor, 0},
  {hipDeviceAttributeWarpSize, 64},
  {hipDeviceAttributeMemoryPoolsSupported, 1},
  {hipDeviceAttributeUnifiedAddressing, 1},
  {hipDeviceAttributeManagedMemory, 1},
  {hipDeviceAttributeCanMapHostMemory, 1},
};
// clang-format on

// Static TLS (initial-exec), as the engine's (see engine.cc).
thread_local int t_device __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

skin::StreamLibrary& L() {
  static skin::StreamLibrary* library = new skin::StreamLibrary({
      .log_prefix = "halsim_hip",
      .api = "HIP",
      .env_alias = "HALSIM_",
      .devices_env = nullptr,
      .kernel_dir = HALSIM_KERNEL_MODULES_DIR,
      .callback_rule = "HIP forbids API calls in hipStreamAddCallback/"
                       "hipLaunchHostFunc callbacks",
  });
  return *library;
}

hipError_t ToHip(Code code) { return skin::ToVendor(kErrors, code); }

skin::Scope* Current() { return L().device(t_device); }

}  // namespace hal::sim::hip

HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::hip::L)

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT hipError_t hipInit(unsigned int flags) {
  HALSIM_ENTER("hipInit");
  return ToHip(L().Init(flags));
}

HALSIM_EXPORT hipError_t hipDriverGetVersion(int* version) {
  HALSIM_ENTER("hipDriverGetVersion");
  if (!version) return hipErrorInvalidValue;
  *version = kSimDriverVersion;
  return hipSuccess;
}

// HIP returns "hipErrorUnknown" for codes it does not know.
HALSIM_EXPORT const char* hipGetErrorName(hipError_t error) {
  const auto* row = skin::FindError(kErrors, error);
  return row ? row->name : "hipErrorUnknown";
}

HALSIM_EXPORT const char* hipGetErrorString(hipError_t error) {
  const auto* row = skin::FindError(kErrors, error);
  return row ? row->text : "unknown error";
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT hipError_t hipGetDeviceCount(int* count) {
  HALSIM_ENTER("hipGetDeviceCount");
  return ToHip(L().DeviceCount(count));
}

HALSIM_EXPORT hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
  HALSIM_ENTER("hipDeviceGet");
  return ToHip(L().GetDevice(ordinal, device));
}

HALSIM_EXPORT hipError_t hipSetDevice(int ordinal) {
  HALSIM_ENTER("hipSetDevice");
  hipError_t r = ToHip(L().CheckDevice(ordinal));
  if (r == hipSuccess) t_device = ordinal;
  return r;
}

HALSIM_EXPORT hipError_t hipDeviceGetName(char* name, int len,
                                          hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceGetName");
  return ToHip(
      L().DeviceName(dev, name, len, "HAL HIP API simulator %d (gfx90a)"));
}

HALSIM_EXPORT hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceGetUuid");
  return ToHip(L().DeviceUuid(dev, "HIPs", uuid ? uuid->bytes : nullptr));
}

HALSIM_EXPORT hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t dev) {
  HALSIM_ENTER("hipDeviceTotalMem");
  return ToHip(L().DeviceTotalMem(dev, bytes));
}

HALSIM_EXPORT hipError_t hipDeviceGetAttribute(int* value,
                                               hipDeviceAttribute_t attr,
                                               int dev) {
  HALSIM_ENTER("hipDeviceGetAttribute");
  return ToHip(L().DeviceAttribute(kAttributes, dev, attr, value));
}

HALSIM_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t* pool,
                                                    int dev) {
  HALSIM_ENTER("hipDeviceGetDefaultMemPool");
  return ToHip(L().DefaultPool(dev, pool));
}
