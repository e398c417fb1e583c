// The Level Zero driver's loader access: the symbol table against Debian's
// real loader, with the simulated driver behind it (ZeSimDriver) and with
// no driver at all (ZeRealLoader); and the HAL device over the simulated
// driver (ZeHalDevice: the shared driver suite), with what only the
// simulator can count, such as host round trips. Each suite runs in its own
// process (CMakeLists.txt): zeInit happens once per process.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "drivers/gpu/tests/gpu_driver_suite.h"
#include "drivers/level_zero/ze_device.h"
#include "drivers/level_zero/ze_dynamic_symbols.h"
#include "drivers/level_zero/ze_status.h"

namespace hal::level_zero {
namespace {

constexpr char kRealLoader[] = "libze_loader.so.1";

bool LoaderPresent() { return ResolveZeSymbols({kRealLoader}).ok(); }

TEST(ZeRealLoader, EveryRequiredSymbolResolves) {
  auto syms = ResolveZeSymbols({kRealLoader});
  if (!syms.ok() && syms.status().code() == StatusCode::kUnavailable &&
      syms.status().message().find("cannot load") != std::string::npos) {
    GTEST_SKIP() << syms.status().ToString();
  }
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  EXPECT_NE((*syms)->zeInit, nullptr);
  EXPECT_NE((*syms)->zeCommandListAppendLaunchKernelIndirect, nullptr);
}

TEST(ZeRealLoader, NoDriverIsUnavailableWithHint) {
  if (!LoaderPresent()) GTEST_SKIP() << "no " << kRealLoader;
  auto syms = LoadZeSymbols(kRealLoader);
  ASSERT_FALSE(syms.ok());
  EXPECT_EQ(syms.status().code(), StatusCode::kUnavailable);
  const std::string message = syms.status().ToString();
  EXPECT_NE(message.find("ZE_RESULT_ERROR_UNINITIALIZED"), std::string::npos)
      << message;
  EXPECT_NE(message.find("ZE_ENABLE_ALT_DRIVERS"), std::string::npos)
      << message;
  // The same answer again: the loader's zeInit is once per process.
  auto again = LoadZeSymbols(kRealLoader);
  EXPECT_EQ(again.status().ToString(), message);
}

TEST(ZeSimDriver, LoaderFindsTheSimulatedDriver) {
  auto syms = LoadZeSymbols(kRealLoader);
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  ASSERT_EQ((*syms)->drivers.size(), 1u);
  uint32_t count = 0;
  ASSERT_EQ((*syms)->zeDeviceGet((*syms)->drivers[0], &count, nullptr),
            ZE_RESULT_SUCCESS);
  EXPECT_GE(count, 1u);
}

// The funnel: a failing call names the result, the call and the context;
// the fault hook makes any call fail without reaching the loader.
Status QueryDevice(const ZeSymbols* syms, ze_device_handle_t device) {
  ze_device_properties_t props = {};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  HAL_ZE_RETURN_IF_ERROR(syms, zeDeviceGetProperties(device, &props),
                         "device %d", 0);
  return OkStatus();
}

TEST(ZeSimDriver, ResultFunnelAndFaultHook) {
  auto syms = LoadZeSymbols(kRealLoader);
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  uint32_t count = 1;
  ze_device_handle_t device = nullptr;
  ASSERT_EQ((*syms)->zeDeviceGet((*syms)->drivers[0], &count, &device),
            ZE_RESULT_SUCCESS);
  EXPECT_TRUE(QueryDevice(syms->get(), device).ok());
  SetZeFaultHook([](std::string_view call) {
    return call.starts_with("zeDeviceGetProperties")
               ? ZE_RESULT_ERROR_DEVICE_LOST
               : ZE_RESULT_SUCCESS;
  });
  Status s = QueryDevice(syms->get(), device);
  SetZeFaultHook(nullptr);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("ZE_RESULT_ERROR_DEVICE_LOST 0x70000001 (no "
                             "description) in zeDeviceGetProperties: device 0"),
            std::string::npos)
      << s.ToString();
  // The validation layer (on in this test's configuration) or the driver
  // rejects a null properties pointer; the funnel maps it.
  ze_result_t r = (*syms)->zeDeviceGetProperties(device, nullptr);
  EXPECT_EQ(ZeResultCode(r), StatusCode::kInvalidArgument) << ZeResultName(r);
}

// --- The HAL device over the simulated driver (HAL_LEVEL_ZERO_SIM_LIBRARY,
// which the driver hands to the loader as ZE_ENABLE_ALT_DRIVERS): the
// shared driver suite (drivers/gpu/tests/gpu_driver_suite.h),
// ZeHalDevice/GpuDriverSuite.*/level_zero. ---

constexpr char kSimLibrary[] = HAL_LEVEL_ZERO_SIM_LIBRARY;

// The simulator's controls come from the library the loader loaded (the
// same path, so the same engine). Level Zero has no host functions, so the
// engine counts none and the suite skips those counts. The driver emulates
// host functions with a thread that waits in zeEventHostSynchronize; the
// simulator holds that wait while host functions are paused, so pausing
// still stops every host reaction to the device. Broken Level Zero rules
// are counted by halsim_ze_rule_violations.
const gpu::testing::GpuDriverBackend* ZeBackend() {
  static const gpu::testing::GpuDriverBackend* backend = [] {
    auto* b = new gpu::testing::GpuDriverBackend;
    b->name = "level_zero";
    b->sim_library = kSimLibrary;
    // No library=: that names the loader, which finds the simulated driver.
    b->sim_uri = [](const std::string& params) {
      auto uri = DeviceUri::Parse("level_zero://?" + params);
      EXPECT_TRUE(uri.ok()) << uri.status().ToString();
      return uri.ok() ? *uri : DeviceUri{};
    };
    b->create = [](const DeviceUri& uri) { return CreateZeDevice(uri); };
    b->enumerate = [] { return EnumerateZeDevices(""); };
    b->missing_library = "/nonexistent/libze_loader.so.1";
    b->missing_library_hints = {"HAL_LEVEL_ZERO_LIBRARY"};
    b->set_fault_hook = [](std::function<bool(std::string_view)> fail) {
      if (!fail) return SetZeFaultHook(nullptr);
      SetZeFaultHook([fail](std::string_view call) {
        return fail(call) ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                          : ZE_RESULT_SUCCESS;
      });
    };
    b->host_alloc_call = "zeMemAllocHost";
    b->host_alloc_fault_messages = {"ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
                                    "in zeMemAllocHost"};
    b->alloc_fault_messages = {"in zeMemAllocDevice"};
    b->counts_host_functions = false;
    b->violations_control = "halsim_ze_rule_violations";
    // A command buffer is a regular command list run by
    // zeCommandQueueExecuteCommandLists, with a list that waits for the
    // stream before it and one that signals it after: 3 lists per launch.
    b->graph_launch_control = "halsim_ze_lists_executed";
    b->graph_launches_per_run = 3;
    // zeCommandListAppendLaunchKernelIndirect; fills are not kernels.
    b->test_kernels = std::string(HAL_LEVEL_ZERO_TEST_KERNELS_DIR) +
                      "/test_kernels.level-zero-spirv";
    b->indirect_kernels_run = 1;
    b->own_process["OperationFaultFailsTheSignal"] =
        "a failed operation loses the simulated device for the rest of the "
        "process: unit.level_zero.op_fault";
    return b;
  }();
  return backend;
}

HAL_GPU_DRIVER_SUITE(ZeHalDevice, ZeBackend());

}  // namespace
}  // namespace hal::level_zero
