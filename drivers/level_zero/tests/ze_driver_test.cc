// The Level Zero driver's loader access: the symbol table against Debian's
// real loader, with the simulated driver behind it (ZeSimDriver) and with
// no driver at all (ZeRealLoader); and the HAL device over the simulated
// driver (ZeHalDevice): what only the simulator can count, such as host
// round trips. Each suite runs in its own process (CMakeLists.txt): zeInit
// happens once per process.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "drivers/gpu/gpu_device.h"
#include "drivers/gpu/gpu_executable.h"
#include "drivers/gpu/gpu_graph_command_buffer.h"
#include "drivers/gpu/tests/gpu_driver_checks.h"
#include "drivers/level_zero/ze_device.h"
#include "drivers/level_zero/ze_dynamic_symbols.h"
#include "drivers/level_zero/ze_status.h"
#include "hal/executable.h"

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

// --- The HAL device over the simulated driver (HAL_LEVEL_ZERO_SIM_LIBRARY,
// which the driver hands to the loader as ZE_ENABLE_ALT_DRIVERS). ---

constexpr char kSimLibrary[] = HAL_LEVEL_ZERO_SIM_LIBRARY;

// The simulator's controls (sim/core/halsim_control.h) from the library the
// loader loaded (the same path, so the same engine). Level Zero has no host
// functions, so the engine counts none: `launched` and `run` stay null and
// the shared checks skip those counts. The driver emulates host functions
// with a thread that waits in zeEventHostSynchronize; the simulator holds
// that wait while host functions are paused, so pausing still stops every
// host reaction to the device.
struct ZeSimControls {
  uint64_t (*launched)() = nullptr;
  uint64_t (*run)() = nullptr;
  uint64_t (*violations)() = nullptr;  // broken Level Zero rules
  uint64_t (*work_done)() = nullptr;
  uint64_t (*kernels_run)() = nullptr;
  uint64_t (*lists_executed)() = nullptr;  // zeCommandQueueExecuteCommandLists
  void (*pause)(int) = nullptr;
};

ZeSimControls SimControls() {
  ZeSimControls c;
  void* lib = dlopen(kSimLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return c;
  c.violations =
      reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_ze_rule_violations"));
  c.work_done =
      reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_work_done"));
  c.kernels_run =
      reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_kernels_run"));
  c.lists_executed =
      reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_ze_lists_executed"));
  c.pause = reinterpret_cast<void (*)(int)>(
      dlsym(lib, "halsim_pause_host_functions"));
  return c;
}

class ZeHalDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    auto uri = DeviceUri::Parse("level_zero://?queues=2");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    auto device = CreateZeDevice(*uri);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = *device;
    controls_ = SimControls();
    ASSERT_NE(controls_.pause, nullptr) << "no simulator at " << kSimLibrary;
    ASSERT_NE(controls_.violations, nullptr);
  }
  void TearDown() override {
    if (controls_.pause) controls_.pause(0);
  }
  Ref<Device> device_;
  ZeSimControls controls_;
};

// Queue 0 fills and signals s; queue 1 waits for s and copies: the wait is
// a device-side event wait (zeCommandListAppendWaitOnEvents), so the copy
// runs while the host cannot react to anything.
TEST_F(ZeHalDevice, DeviceToDeviceChainMakesNoHostRoundTrip) {
  gpu::testing::CheckDeviceToDeviceChainMakesNoHostRoundTrip(device_,
                                                             controls_);
}

// An indirect dispatch reads its group count on the device
// (zeCommandListAppendLaunchKernelIndirect): with every host reaction held,
// a command buffer that writes the count and then dispatches with it runs
// to the end. A host round trip (reading the count back, as CUDA and HIP
// do) would wait for the host and not run.
TEST_F(ZeHalDevice, IndirectDispatchMakesNoHostRoundTrip) {
  std::ifstream in(std::string(HAL_LEVEL_ZERO_TEST_KERNELS_DIR) +
                       "/test_kernels.level-zero-spirv",
                   std::ios::binary);
  std::vector<uint8_t> spirv((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  ASSERT_FALSE(spirv.empty()) << "no level-zero-spirv test kernels";
  auto cache = device_->CreateExecutableCache();
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  ExecutableParams params;
  params.data = spirv;
  auto exe = (*cache)->Prepare(params);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto write_ids = (*exe)->LookupFunction("write_ids");
  ASSERT_TRUE(write_ids.ok()) << write_ids.status().ToString();

  BufferParams device_params;
  device_params.type = MemoryType::kDeviceLocal;
  device_params.usage = BufferUsage::kDefault;
  auto count = device_->allocator()->AllocateBuffer(device_params, 12);
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  constexpr uint32_t kWords = 32;
  auto out = device_->allocator()->AllocateBuffer(gpu::testing::HostParams(),
                                                  kWords * 4);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE((*out)->MapZero(0, kWords * 4).ok());

  auto cb = device_->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                         CommandCategory::kAny, 1, 0);
  ASSERT_TRUE(cb.ok()) << cb.status().ToString();
  const uint32_t three = 3;  // {3, 3, 3}: 27 workgroups of write_ids
  BufferRef indirect = BufferRef::Direct(count->get());
  BufferRef binding = BufferRef::Direct(out->get());
  const uint32_t constants[] = {3, 3};  // id = x + 3 * (y + 3 * z)
  DispatchParams p;
  p.executable = exe->get();
  p.entry_point = *write_ids;
  p.constants = constants;
  p.bindings = {&binding, 1};
  p.indirect_workgroup_count = &indirect;
  ASSERT_TRUE((*cb)->Begin().ok());
  ASSERT_TRUE((*cb)->FillBuffer(indirect, &three, 4).ok());
  ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
  ASSERT_TRUE((*cb)->Dispatch(p).ok());
  ASSERT_TRUE((*cb)->End().ok());

  auto s = device_->CreateSemaphore(0);
  ASSERT_TRUE(s.ok());
  SemaphorePoint s1{s->get(), 1};
  const uint64_t kernels_before = controls_.kernels_run();
  const uint64_t violations_before = controls_.violations();
  // Holding host functions alone does not tell: the host round trip is a
  // host wait (copy, synchronize) that needs no host function. The GPU
  // layer counts its round trips.
  const uint64_t host_reads_before = gpu::IndirectCountHostReads();
  controls_.pause(1);
  ASSERT_TRUE(device_->QueueExecute(1, {}, {&s1, 1}, cb->get()).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (controls_.kernels_run() == kernels_before &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(controls_.kernels_run() - kernels_before, 1u)
      << "the indirect dispatch did not run while the host was held: it "
         "waited for the host";
  EXPECT_EQ(*(*s)->Query(), 0u);  // the host has not reacted yet
  controls_.pause(0);
  ASSERT_TRUE((*s)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  uint32_t got[kWords];
  ASSERT_TRUE((*out)->MapRead(0, got, sizeof(got)).ok());
  for (uint32_t i = 0; i < kWords; ++i) {
    EXPECT_EQ(got[i], i < 27 ? i + 1 : 0u) << i;
  }
  EXPECT_EQ(controls_.violations(), violations_before);
  EXPECT_EQ(gpu::IndirectCountHostReads(), host_reads_before)
      << "the count was read on the host";
}

// command_buffer_mode=graph: a command buffer is a regular command list,
// built once and run by zeCommandQueueExecuteCommandLists (with a list that
// waits for the stream before it and one that signals it after: 3 lists per
// launch), with the results of the stream path; a reusable command buffer's
// list runs again while its addresses are the same, and is rebuilt for a
// binding table naming other memory.
TEST_F(ZeHalDevice, GraphCommandBuffersExecuteRegularListsAndReuseThem) {
  auto uri = DeviceUri::Parse("level_zero://?command_buffer_mode=graph");
  ASSERT_TRUE(uri.ok());
  auto created = CreateZeDevice(*uri);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Ref<Device> device = *created;
  ASSERT_NE(controls_.lists_executed, nullptr);
  // Three lists per execution (the command buffer's segments between
  // barriers).
  gpu::testing::CheckGraphCommandBufferReuse(
      device.get(), [&] { return controls_.lists_executed(); }, 3);
  EXPECT_TRUE(device->WaitIdle(Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(controls_.violations(), 0u);
}

}  // namespace
}  // namespace hal::level_zero
