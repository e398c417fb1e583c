// The Level Zero driver's loader access: the symbol table against Debian's
// real loader, with the simulated driver behind it (ZeSimDriver) and with
// no driver at all (ZeRealLoader). Each suite runs in its own process
// (CMakeLists.txt): zeInit happens once per process.
#include <gtest/gtest.h>

#include <string>

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

TEST(ZeRealLoader, MissingLibraryIsUnavailable) {
  auto syms = LoadZeSymbols("/nonexistent/libze_loader.so.1");
  ASSERT_FALSE(syms.ok());
  EXPECT_EQ(syms.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(syms.status().message().find("/nonexistent/libze_loader.so.1"),
            std::string::npos)
      << syms.status().ToString();
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

}  // namespace
}  // namespace hal::level_zero
