// The HIP driver against the HIP API simulator (HAL_HIP_SIM_LIBRARY), and
// checks against Debian's real libamdhip64.so.5 that skip without it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "drivers/gpu/tests/gpu_driver_checks.h"
#include "drivers/gpu/tests/gpu_driver_suite.h"
#include "drivers/hip/hip_device.h"
#include "drivers/hip/hip_dynamic_symbols.h"
#include "drivers/hip/hip_status.h"
#include "hal/driver.h"

namespace hal::hip {
namespace {

constexpr char kSimLibrary[] = HAL_HIP_SIM_LIBRARY;
constexpr char kRealLibrary[] = "libamdhip64.so.5";

// A HIP entry point of the simulator.
template <typename F>
F Sym(const char* name) {
  return gpu::testing::SimSymbol<F>(kSimLibrary, name);
}

DeviceUri SimUri(const std::string& params = "") {
  return gpu::testing::SimUri("hip", kSimLibrary, params);
}

Ref<Device> OpenSimDevice(const std::string& params = "") {
  return gpu::testing::OpenDevice(
      [](const DeviceUri& uri) { return CreateHipDevice(uri); },
      SimUri(params));
}

void ExpectRequiredSymbols(const HipSymbols& syms) {
#define HAL_HIP_REQUIRED_SYMBOL(name) EXPECT_NE(syms.name, nullptr) << #name;
#define HAL_HIP_OPTIONAL_SYMBOL(name)
#include "drivers/hip/hip_symbols.inc"
#undef HAL_HIP_REQUIRED_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL
}

class HipSim : public gpu::testing::SimDriverTest {
 protected:
  HipSim() : SimDriverTest(kSimLibrary, [] { SetHipFaultHook(nullptr); }) {}
};

// The shared driver suite (drivers/gpu/tests/gpu_driver_suite.h) over the
// simulator: HipSim/GpuDriverSuite.*/hip.
const gpu::testing::GpuDriverBackend* HipBackend() {
  static const gpu::testing::GpuDriverBackend* backend = [] {
    auto* b = new gpu::testing::GpuDriverBackend;
    b->name = "hip";
    b->sim_library = kSimLibrary;
    b->sim_uri = [](const std::string& params) { return SimUri(params); };
    b->create = [](const DeviceUri& uri) { return CreateHipDevice(uri); };
    b->enumerate = [] { return EnumerateHipDevices(kSimLibrary); };
    b->check_info = [](const DeviceInfo& info) {
      EXPECT_EQ(info.properties.at("compute_capability"), "9.0");
      EXPECT_EQ(info.properties.at("warp_size"), "64");
      EXPECT_EQ(info.properties.at("driver_version"), "5.2.3");
      EXPECT_EQ(info.properties.at("memory_pools"), "yes");
      Ref<Device> device = OpenSimDevice();
      ASSERT_TRUE(device);
      EXPECT_EQ(device->info().properties.at("async_allocations"), "on");
    };
    b->missing_library = "/nonexistent/libamdhip64.so";
    b->missing_library_hints = {"HAL_HIP_LIBRARY"};
    b->set_fault_hook = [](std::function<bool(std::string_view)> fail) {
      if (!fail) return SetHipFaultHook(nullptr);
      SetHipFaultHook([fail](std::string_view call) {
        return fail(call) ? hipErrorOutOfMemory : hipSuccess;
      });
    };
    b->host_alloc_call = "hipHostMalloc";
    b->host_alloc_fault_messages = {
        "hipErrorOutOfMemory 2 (out of memory) in hipHostMalloc"};
    b->alloc_fault_messages = {"in hipMalloc"};
    b->test_kernels =
        std::string(HAL_HIP_TEST_KERNELS_DIR) + "/test_kernels.hip-hsaco";
    b->unsupported["IndirectDispatchMakesNoHostRoundTrip"] =
        "HIP has no indirect launch: the GPU layer reads the count on the "
        "host";
    b->own_process["OperationFaultFailsTheSignal"] =
        "a failed operation is a sticky error for the whole process (later "
        "devices fail to create): unit.hip-sim.op_fault";
    return b;
  }();
  return backend;
}

HAL_GPU_DRIVER_SUITE(HipSim, HipBackend());

TEST_F(HipSim, SymbolsResolveWithDlsym) {
  auto syms = ResolveHipSymbols({kSimLibrary});
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  ExpectRequiredSymbols(**syms);
  // As Debian's 5.2.3: no hipLaunchHostFunc, so the driver's host functions
  // go through hipStreamAddCallback in every test here.
  EXPECT_EQ((*syms)->hipLaunchHostFunc, nullptr);
  EXPECT_NE((*syms)->hipGraphInstantiateWithFlags, nullptr);
}

// The simulator itself: a HIP call from inside a stream callback is an
// error (hipErrorNotSupported) and is counted; events report
// hipErrorNotReady (600) while their record is pending.
TEST_F(HipSim, SimulatorEnforcesCallbackRuleAndNotReady) {
  ASSERT_TRUE(OpenSimDevice());  // hipInit
  auto stream_create =
      Sym<hipError_t (*)(hipStream_t*, unsigned)>("hipStreamCreateWithFlags");
  auto add_callback =
      Sym<hipError_t (*)(hipStream_t, hipStreamCallback_t, void*, unsigned)>(
          "hipStreamAddCallback");
  auto sync = Sym<hipError_t (*)(hipStream_t)>("hipStreamSynchronize");
  auto destroy = Sym<hipError_t (*)(hipStream_t)>("hipStreamDestroy");
  auto event_create =
      Sym<hipError_t (*)(hipEvent_t*, unsigned)>("hipEventCreateWithFlags");
  auto record = Sym<hipError_t (*)(hipEvent_t, hipStream_t)>("hipEventRecord");
  auto query = Sym<hipError_t (*)(hipEvent_t)>("hipEventQuery");
  auto event_destroy = Sym<hipError_t (*)(hipEvent_t)>("hipEventDestroy");
  ASSERT_TRUE(stream_create && add_callback && sync && destroy &&
              event_create && record && query && event_destroy);
  hipStream_t stream = nullptr;
  ASSERT_EQ(stream_create(&stream, hipStreamNonBlocking), hipSuccess);
  hipEvent_t event = nullptr;
  ASSERT_EQ(event_create(&event, hipEventDisableTiming), hipSuccess);

  struct Seen {
    hipError_t inner = hipSuccess;
    hipError_t status = hipErrorUnknown;
  } seen;
  const uint64_t violations = controls_.violations();
  controls_.pause(1);
  ASSERT_EQ(add_callback(
                stream,
                [](hipStream_t, hipError_t status, void* p) {
                  auto* seen = static_cast<Seen*>(p);
                  seen->status = status;
                  int count = 0;
                  auto get_count =
                      Sym<hipError_t (*)(int*)>("hipGetDeviceCount");
                  seen->inner = get_count(&count);
                },
                &seen, 0),
            hipSuccess);
  ASSERT_EQ(record(event, stream), hipSuccess);
  EXPECT_EQ(query(event), hipErrorNotReady);
  EXPECT_EQ(static_cast<int>(hipErrorNotReady), 600);
  controls_.pause(0);
  ASSERT_EQ(sync(stream), hipSuccess);
  EXPECT_EQ(query(event), hipSuccess);
  EXPECT_EQ(seen.status, hipSuccess);
  EXPECT_EQ(seen.inner, hipErrorNotSupported);
  EXPECT_EQ(controls_.violations() - violations, 1u);
  EXPECT_EQ(event_destroy(event), hipSuccess);
  EXPECT_EQ(destroy(stream), hipSuccess);
}

// HSACO checks: an image for another AMDGPU ISA, and one that is not an
// AMDGPU ELF.
TEST_F(HipSim, SimulatorChecksCodeObjects) {
  ASSERT_TRUE(OpenSimDevice());
  auto load = Sym<hipError_t (*)(hipModule_t*, const void*, unsigned,
                                 hipJitOption*, void**)>("hipModuleLoadDataEx");
  ASSERT_TRUE(load);
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  const uint16_t amdgpu = 224, x86 = 62, shentsize = 64;
  std::memcpy(elf + 18, &x86, 2);
  std::memcpy(elf + 58, &shentsize, 2);
  hipModule_t module = nullptr;
  EXPECT_EQ(load(&module, elf, 0, nullptr, nullptr), hipErrorInvalidImage);
  std::memcpy(elf + 18, &amdgpu, 2);
  const uint32_t gfx906 = 0x2f;
  std::memcpy(elf + 48, &gfx906, 4);
  EXPECT_EQ(load(&module, elf, 0, nullptr, nullptr), hipErrorNoBinaryForGpu);
}

// Debian's real library: every required symbol resolves (hipLaunchHostFunc,
// optional, does not in 5.2.3). Skips when the library is absent.
TEST(HipRealLibrary, RequiredSymbolsResolve) {
  auto syms = ResolveHipSymbols({kRealLibrary});
  if (!syms.ok() &&
      syms.status().message().find("cannot load") != std::string::npos) {
    GTEST_SKIP() << syms.status().ToString();
  }
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  ExpectRequiredSymbols(**syms);
}

// Without an AMD GPU (this machine), creating a device is UNAVAILABLE with
// the HIP error and a hint, not a crash or a hang.
TEST(HipRealLibrary, NoGpuIsUnavailableWithHint) {
  if (!ResolveHipSymbols({kRealLibrary}).ok()) {
    GTEST_SKIP() << kRealLibrary << " is not installed";
  }
  DeviceUri uri;
  uri.driver = "hip";
  uri.params["library"] = kRealLibrary;
  auto device = CreateHipDevice(uri);
  if (device.ok()) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable)
      << device.status().ToString();
  EXPECT_NE(device.status().message().find("hipInit failed with hipError"),
            std::string::npos)
      << device.status().ToString();
  EXPECT_NE(device.status().message().find("HAL_HIP_LIBRARY"),
            std::string::npos);
}

}  // namespace
}  // namespace hal::hip
