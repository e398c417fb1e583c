// The Level Zero simulated driver: a driver library that the real Level
// Zero loader (Debian's libze_loader.so.1, 1.8.12) loads through
// ZE_ENABLE_ALT_DRIVERS=<absolute path>, and that runs on the CPU.
//
// A Level Zero driver exports no API entry points: the loader asks it for
// its DDI tables (zeGet<X>ProcAddrTable, zetGet..., zesGet...: all 53 that
// loader asks for must exist and succeed, or zeInit fails) and calls
// through them, with the validation layer (ZE_ENABLE_VALIDATION_LAYER=1)
// and handle wrapping (ZE_ENABLE_LOADER_INTERCEPT=1) in between when asked.
// Entries this driver does not implement stay null (the loader returns
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for them).
//
// It is a skin over the simulated GPU (sim/engine/engine.h), like the CUDA
// and HIP ones: the engine schedules (seeded, on a virtual clock, with the
// settle rule), holds memory, checks races, injects faults and writes the
// trace; this skin adds what is Level Zero's:
//
//   * One driver with HALSIM_ZE_DEVICES devices (default 1), each with two
//     engine groups: 0 compute (compute + copy), 1 copy. Command queues and
//     immediate command lists are engine queues; regular command lists
//     record ops that zeCommandQueueExecuteCommandLists enqueues in order.
//   * Events are binary states (signalled or not) over engine signals:
//     device signals and resets are ops, waits wait for the signalled
//     state, host signal/reset/query/synchronize act on it directly.
//   * Memory is the engine's (device, host and shared allocations,
//     0xCD-filled, range-checked, freed into a quarantine).
//   * Modules are SPIR-V: kernels are the OpEntryPoint Kernel names, run
//     as the native (sim-format) build of the same test kernel
//     (sim_ze_module.cc).
//
// It reports the specification's rules that a driver can get wrong and a
// real driver does not check (a hang or corruption later), each as an
// error returned to the caller and a line on stderr with the seed:
//   - an event signalled twice without a reset in between;
//   - a regular command list appended to after zeCommandListClose;
//   - a command list executed while it is not closed (after create/reset);
//   - destroying an event, command list, command queue or kernel that
//     pending work still uses;
//   - launching a kernel with an argument or the group size not set.
// The 1.8 validation layer checks parameters only, so this driver counts
// live handles (halsim_ze_live_handles) and reports leaks at exit.
//
// The seed (HALSIM_SEED), faults (HALSIM_FAULTS), trace (HALSIM_TRACE) and
// the controls are those of every simulated library:
// sim/core/halsim_control.h.
//
// This file: the tables, initialization, drivers, devices, contexts, the
// rules' reporting and handle counts. Queues, lists, events and fences:
// sim_ze_command.cc; memory: sim_ze_memory.cc; modules and kernels:
// sim_ze_module.cc.
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sim/level_zero/sim_ze_internal.h"
#include "sim/skin/skin_control.h"

namespace hal::sim::ze {

namespace {

// clang-format off
const skin::ErrorRow<ze_result_t> kErrors[] = {
  HALSIM_ERROR_ROW(kOk, ZE_RESULT_SUCCESS, "success"),
  HALSIM_ERROR_ROW(kInvalidValue, ZE_RESULT_ERROR_INVALID_ARGUMENT, "invalid argument"),
  HALSIM_ERROR_ROW(kOutOfMemory, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "out of device memory"),
  // A failed op or kernel loses the device, as a GPU page fault does.
  HALSIM_ERROR_ROW(kIllegalAddress, ZE_RESULT_ERROR_DEVICE_LOST, "device lost"),
  HALSIM_ERROR_ROW(kLaunchFailed, ZE_RESULT_ERROR_DEVICE_LOST, "device lost"),
  HALSIM_ERROR_ROW(kAlreadyRegistered, ZE_RESULT_ERROR_INVALID_ARGUMENT, "invalid argument"),
  HALSIM_ERROR_ROW(kNotRegistered, ZE_RESULT_ERROR_INVALID_ARGUMENT, "invalid argument"),
  HALSIM_ERROR_ROW(kNotReady, ZE_RESULT_NOT_READY, "not ready"),
  HALSIM_ERROR_ROW(kNone, ZE_RESULT_ERROR_UNKNOWN, "unknown error"),
};
// clang-format on

struct LibraryState {
  std::atomic<bool> initialized{false};
  Driver driver;
  std::atomic<uint64_t> lists_executed{0};
};

LibraryState& State() {
  static LibraryState* state = new LibraryState();
  return *state;
}

std::mutex& InitMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

}  // namespace

skin::Library& L() {
  static skin::Library* library = new skin::Library({
      .log_prefix = "halsim_ze",
      .api = "Level Zero",
      .env_alias = "HALSIM_ZE_",
      .devices_env = "HALSIM_ZE_DEVICES",
      .kernel_dir = HALSIM_KERNEL_MODULES_DIR,
      .callback_rule = nullptr,
      // By Kind.
      .kinds = {"context", "command queue", "command list", "event pool",
                "event", "fence", "module", "module build log", "kernel",
                "memory allocation"},
      .device_memory_bytes = kDeviceMemoryBytes,
  });
  return *library;
}

Engine& E() { return L().engine(); }

bool Initialized() { return State().initialized.load(); }
Driver* TheDriver() { return &State().driver; }

bool AnyDeviceLost() {
  const Driver* d = TheDriver();
  for (uint32_t i = 0; i < d->device_count; ++i) {
    if (d->devices[i].domain.failed()) return true;
  }
  return false;
}

Device* AsDevice(ze_device_handle_t h) {
  Driver* d = TheDriver();
  auto* dev = reinterpret_cast<Device*>(h);
  if (dev < d->devices || dev >= d->devices + d->device_count) return nullptr;
  return dev;
}

void CountCreated(Kind kind) { L().CountCreated(static_cast<int>(kind)); }
void CountDestroyed(Kind kind) { L().CountDestroyed(static_cast<int>(kind)); }

void CountListsExecuted(uint32_t n) { State().lists_executed += n; }

uint64_t LiveHandles() { return L().live_objects(); }

ze_result_t Violation(ze_result_t result, const char* call, const char* fmt,
                      ...) {
  va_list args;
  va_start(args, fmt);
  L().ViolationV(call, fmt, args);
  va_end(args);
  return result;
}

ze_result_t ToZeResult(engine::Error error) {
  return skin::ToVendor(kErrors, error);
}

}  // namespace hal::sim::ze

HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::ze::L)

using namespace hal::sim::ze;  // NOLINT: the C ABI edge

namespace {

// ---------------------------------------------------------------------------
// Initialization, drivers.

ze_result_t SimInit(ze_init_flags_t flags) {
  HALSIM_ZE_ENTER();
  if (flags & ~(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) {
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  }
  // A GPU driver has nothing for a VPU-only init.
  if (flags == ZE_INIT_FLAG_VPU_ONLY) return ZE_RESULT_ERROR_UNINITIALIZED;
  std::lock_guard<std::mutex> lock(InitMutex());
  if (Initialized()) return ZE_RESULT_SUCCESS;
  if (!L().ApplyEnvironment()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Driver* d = TheDriver();
  const int devices = L().ConfiguredDeviceCount(1, 1, kMaxDevices);
  if (devices < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  d->device_count = static_cast<uint32_t>(devices);
  for (int i = 0; i < kMaxDevices; ++i) d->devices[i].ordinal = i;
  State().initialized = true;
  return ZE_RESULT_SUCCESS;
}

Driver* AsDriver(ze_driver_handle_t h) {
  return reinterpret_cast<Driver*>(h) == TheDriver() ? TheDriver() : nullptr;
}

ze_result_t SimDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !drivers) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  drivers[0] = reinterpret_cast<ze_driver_handle_t>(TheDriver());
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDriverGetApiVersion(ze_driver_handle_t h,
                                   ze_api_version_t* version) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDriver(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!version) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *version = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDriverGetProperties(ze_driver_handle_t h,
                                   ze_driver_properties_t* props) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDriver(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  hal::sim::engine::StableDeviceUuid(
      "ZEdr", 0, reinterpret_cast<unsigned char*>(props->uuid.id));
  props->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDriverGetExtensionProperties(
    ze_driver_handle_t h, uint32_t* count,
    ze_driver_extension_properties_t* props) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDriver(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  (void)props;
  *count = 0;  // no extensions
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------
// Devices.

ze_result_t SimDeviceGet(ze_driver_handle_t h, uint32_t* count,
                         ze_device_handle_t* devices) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Driver* d = AsDriver(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !devices) {
    *count = d->device_count;
    return ZE_RESULT_SUCCESS;
  }
  uint32_t n = std::min(*count, d->device_count);
  for (uint32_t i = 0; i < n; ++i) {
    devices[i] = reinterpret_cast<ze_device_handle_t>(&d->devices[i]);
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetSubDevices(ze_device_handle_t h, uint32_t* count,
                                   ze_device_handle_t*) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDevice(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetProperties(ze_device_handle_t h,
                                   ze_device_properties_t* p) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(h);
  if (!dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x5a5a;
  p->flags = 0;
  p->subdeviceId = 0;
  p->coreClockRate = 1000;
  p->maxMemAllocSize = kDeviceMemoryBytes;
  p->maxHardwareContexts = 64;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 8;
  p->physicalEUSimdWidth = 8;
  p->numEUsPerSubslice = 8;
  p->numSubslicesPerSlice = 4;
  p->numSlices = 1;
  p->timerResolution = 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 32;
  hal::sim::engine::StableDeviceUuid(
      "ZEs ", dev->ordinal, reinterpret_cast<unsigned char*>(p->uuid.id));
  std::snprintf(p->name, sizeof(p->name), "HAL Level Zero simulated device %u",
                dev->ordinal);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetComputeProperties(ze_device_handle_t h,
                                          ze_device_compute_properties_t* p) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDevice(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->maxTotalGroupSize = 1024;
  p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 0xFFFFFFFFu;
  p->maxSharedLocalMemory = 64 * 1024;
  p->numSubGroupSizes = 1;
  p->subGroupSizes[0] = 16;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t h, uint32_t* count,
    ze_command_queue_group_properties_t* props) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDevice(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !props) {
    *count = kGroupCount;
    return ZE_RESULT_SUCCESS;
  }
  uint32_t n = std::min(*count, kGroupCount);
  for (uint32_t i = 0; i < n; ++i) {
    props[i].flags = i == kComputeGroup
                         ? (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                            ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY)
                         : ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    props[i].maxMemoryFillPatternSize = 4;
    props[i].numQueues = kQueuesPerGroup;
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t* count,
                                         ze_device_memory_properties_t* props) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDevice(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !props) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  props[0].flags = 0;
  props[0].maxClockRate = 1000;
  props[0].maxBusWidth = 64;
  props[0].totalSize = kDeviceMemoryBytes;
  std::snprintf(props[0].name, sizeof(props[0].name), "HBM (simulated)");
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimDeviceGetStatus(ze_device_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(h);
  if (!dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return dev->domain.failed() ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------
// Contexts.

ze_result_t SimContextCreate(ze_driver_handle_t h,
                             const ze_context_desc_t* desc,
                             ze_context_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDriver(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *out = reinterpret_cast<ze_context_handle_t>(new Context());
  CountCreated(Kind::kContext);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimContextDestroy(ze_context_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete reinterpret_cast<Context*>(h);
  CountDestroyed(Kind::kContext);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimContextGetStatus(ze_context_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  for (uint32_t i = 0; i < TheDriver()->device_count; ++i) {
    if (TheDriver()->devices[i].domain.failed()) {
      return ZE_RESULT_ERROR_DEVICE_LOST;
    }
  }
  return ZE_RESULT_SUCCESS;
}

// Checks the table pointer and version every getter shares.
template <typename T>
ze_result_t BeginTable(ze_api_version_t version, T* table) {
  if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT) ||
      ZE_MINOR_VERSION(version) > ZE_MINOR_VERSION(ZE_API_VERSION_CURRENT)) {
    return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  }
  return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace hal::sim::ze {

void FillDriverTable(ze_driver_dditable_t* t) {
  t->pfnGet = SimDriverGet;
  t->pfnGetApiVersion = SimDriverGetApiVersion;
  t->pfnGetProperties = SimDriverGetProperties;
  t->pfnGetExtensionProperties = SimDriverGetExtensionProperties;
}

void FillDeviceTable(ze_device_dditable_t* t) {
  t->pfnGet = SimDeviceGet;
  t->pfnGetSubDevices = SimDeviceGetSubDevices;
  t->pfnGetProperties = SimDeviceGetProperties;
  t->pfnGetComputeProperties = SimDeviceGetComputeProperties;
  t->pfnGetCommandQueueGroupProperties =
      SimDeviceGetCommandQueueGroupProperties;
  t->pfnGetMemoryProperties = SimDeviceGetMemoryProperties;
  t->pfnGetStatus = SimDeviceGetStatus;
}

void FillContextTable(ze_context_dditable_t* t) {
  t->pfnCreate = SimContextCreate;
  t->pfnDestroy = SimContextDestroy;
  t->pfnGetStatus = SimContextGetStatus;
}

}  // namespace hal::sim::ze

// ---------------------------------------------------------------------------
// The 53 DDI table getters the loader asks for. Tables this driver fills
// get their entries; the others are left as the loader passed them (null).

#define HALSIM_ZE_TABLE(getter, type, fill)                                 \
  HALSIM_EXPORT ze_result_t getter(ze_api_version_t version, type* table) { \
    ze_result_t r = BeginTable(version, table);                             \
    if (r != ZE_RESULT_SUCCESS) return r;                                   \
    fill;                                                                   \
    return ZE_RESULT_SUCCESS;                                               \
  }
#define HALSIM_ZE_EMPTY_TABLE(getter, type) \
  HALSIM_ZE_TABLE(getter, type, (void)0)

HALSIM_ZE_TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t,
                table->pfnInit = SimInit)
HALSIM_ZE_TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t,
                FillDriverTable(table))
HALSIM_ZE_TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t,
                FillDeviceTable(table))
HALSIM_ZE_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t,
                FillContextTable(table))
HALSIM_ZE_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t,
                FillCommandQueueTable(table))
HALSIM_ZE_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t,
                FillCommandListTable(table))
HALSIM_ZE_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t,
                FillEventPoolTable(table))
HALSIM_ZE_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t,
                FillEventTable(table))
HALSIM_ZE_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t,
                FillFenceTable(table))
HALSIM_ZE_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t, FillMemTable(table))
HALSIM_ZE_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t,
                FillModuleTable(table))
HALSIM_ZE_TABLE(zeGetModuleBuildLogProcAddrTable,
                ze_module_build_log_dditable_t, FillModuleBuildLogTable(table))
HALSIM_ZE_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t,
                FillKernelTable(table))
HALSIM_ZE_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable,
                      ze_fabric_edge_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable,
                      ze_fabric_vertex_exp_dditable_t)

// Tools (zet) and sysman (zes): nothing is simulated, but the loader asks.
HALSIM_ZE_EMPTY_TABLE(zetGetCommandListProcAddrTable,
                      zet_command_list_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricGroupProcAddrTable,
                      zet_metric_group_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable,
                      zet_metric_group_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable,
                      zet_metric_query_pool_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricQueryProcAddrTable,
                      zet_metric_query_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable,
                      zet_metric_streamer_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable,
                      zes_diagnostics_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable,
                      zes_performance_factor_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
HALSIM_ZE_EMPTY_TABLE(zesGetTemperatureProcAddrTable,
                      zes_temperature_dditable_t)

// The Level Zero counters of this library (beside halsim_control.h's).
// Spec rules broken so far (each also an error returned and a stderr line).
HALSIM_EXPORT uint64_t halsim_ze_rule_violations(void) {
  return L().violations();
}
// Handles created and not yet destroyed, of every kind.
HALSIM_EXPORT uint64_t halsim_ze_live_handles(void) { return LiveHandles(); }
// Regular command lists enqueued by zeCommandQueueExecuteCommandLists.
HALSIM_EXPORT uint64_t halsim_ze_lists_executed(void) {
  return State().lists_executed.load();
}
