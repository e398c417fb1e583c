// The driver test suite every GPU-stream driver (CUDA, HIP, Level Zero,
// AMDGPU) runs over its simulated vendor library: compiled once
// (gpu_driver_suite.cc, the object library hal_gpu_driver_suite) and
// instantiated by each driver's test file with a small backend, as the
// conformance suite's backends opt in (hal/cts/cts.h). A backend says how
// to open a device over the simulator, how its vendor names failures, how
// to inject a vendor fault, which controls its simulator has, and which
// tests do not apply with the reason. The driver's test file keeps only
// what is truly its vendor's.
//
//   const GpuDriverBackend* CudaBackend() { static GpuDriverBackend b = ...;
//                                          return &b; }
//   HAL_GPU_DRIVER_SUITE(CudaSim, CudaBackend());
//
// runs CudaSim/GpuDriverSuite.<Test>/cuda for every test below.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "drivers/gpu/tests/gpu_driver_checks.h"
#include "hal/device.h"
#include "hal/uri.h"

namespace hal::gpu::testing {

struct GpuDriverBackend {
  // The driver's URI scheme ("cuda"); also the test names' suffix.
  std::string name;
  // The simulated vendor library whose controls (sim/core/halsim_control.h)
  // the suite reads: the library the driver loads, directly or through a
  // loader.
  std::string sim_library;
  // A URI for a device over the simulator with the query `params`, and the
  // driver's factory.
  std::function<DeviceUri(const std::string& params)> sim_uri;
  std::function<StatusOr<Ref<Device>>(const DeviceUri&)> create;

  // EnumerationAndUris: the driver's enumeration over the simulator, the
  // length of its UUIDs ("GPU-" included), whether command_buffer_mode=graph
  // exists (else it is UNIMPLEMENTED), and the vendor's own properties.
  std::function<StatusOr<std::vector<DeviceInfo>>()> enumerate;
  size_t uuid_size = 40;
  bool graphs = true;
  std::function<void(const DeviceInfo&)> check_info;

  // MissingLibraryIsUnavailableWithHint: a path that does not exist, given
  // as the URI's library=, and what the UNAVAILABLE message must name
  // besides the path (the environment variable that selects the library).
  std::string missing_library;
  std::vector<std::string> missing_library_hints;

  // The driver's fault hook (<vendor>_status.h): while set, a call for
  // which `fail` returns true fails with the vendor's out-of-memory result
  // without reaching the library; null removes the hook.
  std::function<void(std::function<bool(std::string_view call)> fail)>
      set_fault_hook;
  // The vendor call that allocates host memory, and what the status of a
  // failed host allocation names.
  std::string host_alloc_call;
  std::vector<std::string> host_alloc_fault_messages;

  // The simulator's fault plans (HALSIM_FAULTS grammar, or the vendor's
  // alias for it) that fail the next allocation and the next stream
  // operation, and what the resulting statuses name.
  std::string alloc_fault_plan = "fail_alloc=1";
  std::vector<std::string> alloc_fault_messages;
  std::string op_fault_plan = "fail_op=1";
  std::vector<std::string> op_fault_messages;

  // The simulator's controls that differ between vendors: whether it counts
  // host functions (Level Zero has none), the counter of broken API rules,
  // and the counter of graph launches with how many one execution of a
  // command buffer adds.
  bool counts_host_functions = true;
  std::string violations_control = "halsim_api_violations";
  std::string graph_launch_control = "halsim_graphs_run";
  uint64_t graph_launches_per_run = 1;

  // IndirectDispatchMakesNoHostRoundTrip: the packed test kernels for this
  // driver's format, and how many kernels the simulator runs for a fill of
  // the count then the indirect dispatch (a fill may be a kernel).
  std::string test_kernels;
  uint64_t indirect_kernels_run = 1;

  // Tests of this suite that do not apply to the driver, by name, with the
  // reason: they skip and say why.
  std::map<std::string, std::string> unsupported;
  // Tests that leave the simulated library unusable for the rest of the
  // process (a lost device, a sticky error), by name, with the reason: they
  // skip (and say so) unless HAL_GPU_SUITE_OWN_PROCESS is set, which the
  // driver's CTest entry for that test alone sets.
  std::map<std::string, std::string> own_process;
};

// The fixture: the backend's simulator controls in `controls_`, no faults
// planned before and after each test, host functions resumed and the fault
// hook removed after it; an unsupported test skips with its reason.
class GpuDriverSuite
    : public ::testing::TestWithParam<const GpuDriverBackend*> {
 protected:
  void SetUp() override;
  void TearDown() override;
  const GpuDriverBackend& backend() const { return *GetParam(); }
  // A device over the simulator, or null (and a test failure).
  Ref<Device> OpenSimDevice(const std::string& params = "");

  SimControls controls_;
};

// The test-name suffix: the backend's name.
std::string GpuDriverSuiteName(
    const ::testing::TestParamInfo<const GpuDriverBackend*>& info);

}  // namespace hal::gpu::testing

// Runs the suite over `backend` (a const GpuDriverBackend*) as
// `prefix`/GpuDriverSuite.<Test>/<backend name>, in the enclosing
// namespace (which this makes see GpuDriverSuite).
#define HAL_GPU_DRIVER_SUITE(prefix, backend)                                  \
  using ::hal::gpu::testing::GpuDriverSuite;                                   \
  INSTANTIATE_TEST_SUITE_P(prefix, GpuDriverSuite, ::testing::Values(backend), \
                           ::hal::gpu::testing::GpuDriverSuiteName)
