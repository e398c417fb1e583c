#include "benchmarks/bench_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hal/driver.h"
#include "sim/core/halsim_control_loader.h"
#if HAL_BENCH_HAVE_GPU
#include "drivers/gpu/gpu_pending_actions.h"
#endif
#if HAL_BENCH_HAVE_TEST_KERNELS
#include "hal/cts/test_kernels.h"
#endif

namespace hal::bench {
namespace {
std::string& MutableUri() {
  static std::string uri = "sim";
  return uri;
}
Ref<Device>& MutableDevice() {
  static Ref<Device> device;
  return device;
}
std::vector<std::function<void()>>& TeardownHooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}
}  // namespace

void AtTeardown(std::function<void()> fn) {
  TeardownHooks().push_back(std::move(fn));
}

StatusOr<Ref<Executable>> PrepareTestKernels(ExecutableCache* cache) {
#if HAL_BENCH_HAVE_TEST_KERNELS
  std::string tried;
  for (ExecutableFormat format : cts::ProducedTestKernelFormats()) {
    tried += std::string(" ") + ExecutableFormatName(format);
    if (!cache->CanPrepareFormat(format)) continue;
    HAL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                         cts::ReadTestKernels(format));
    ExecutableParams params;
    params.data = bytes;
    return cache->Prepare(params);
  }
  return UnimplementedError(
      "the device prepares none of the produced test-kernel formats:%s",
      tried.c_str());
#else
  return NotFoundError("this build has no test kernels (HAL_BUILD_TESTS off)");
#endif
}

StatusOr<Ref<Executable>> TestKernels() {
  static Ref<Executable> exe;
  if (exe) return exe;
  HAL_ASSIGN_OR_RETURN(Ref<ExecutableCache> cache,
                       GetDevice()->CreateExecutableCache());
  HAL_ASSIGN_OR_RETURN(exe, PrepareTestKernels(cache.get()));
  AtTeardown([] { exe.reset(); });
  return exe;
}

const std::string& DeviceUri() { return MutableUri(); }

Device* GetDevice() { return MutableDevice().get(); }

void SkipWithStatus(benchmark::State& state, const Status& status) {
  state.SkipWithError(status.ToString().c_str());
}

CountsBefore TakeCounts() {
  CountsBefore c;
#if HAL_BENCH_HAVE_GPU
  c.hand_offs = gpu::ThreadHandOffs();
#endif
  const sim::HalsimControl& control =
      sim::FindHalsimControl(GetDevice()->info().driver);
  if (control.api_calls) c.vendor_calls = control.api_calls();
  return c;
}

void ReportCountsPerOp(benchmark::State& state, const CountsBefore& before) {
  const CountsBefore after = TakeCounts();
  state.counters["hand_offs_per_op"] = benchmark::Counter(
      static_cast<double>(after.hand_offs - before.hand_offs),
      benchmark::Counter::kAvgIterations);
  const sim::HalsimControl& control =
      sim::FindHalsimControl(GetDevice()->info().driver);
  if (control.api_calls) {
    state.counters["vendor_calls_per_op"] = benchmark::Counter(
        static_cast<double>(after.vendor_calls - before.vendor_calls),
        benchmark::Counter::kAvgIterations);
  }
}

int BenchMain(int argc, char** argv, void (*register_fn)()) {
  if (const char* env = std::getenv("HAL_BENCH_DEVICE"); env && *env) {
    MutableUri() = env;
  }
  // Take --device out of argv so that Google Benchmark does not reject it.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      MutableUri() = argv[i] + 9;
    } else {
      args.push_back(argv[i]);
    }
  }
  int new_argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&new_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(new_argc, args.data())) return 2;

  auto device = DefaultDriverRegistry().CreateDevice(DeviceUri());
  if (!device.ok()) {
    std::fprintf(stderr, "cannot create device '%s': %s\n", DeviceUri().c_str(),
                 device.status().ToString().c_str());
    // A missing driver or device is a skip (77, as CTest's SKIP_RETURN_CODE),
    // not a failure.
    return device.status().code() == StatusCode::kUnavailable ? 77 : 1;
  }
  MutableDevice() = std::move(device).value();
  benchmark::AddCustomContext("hal_device", DeviceUri());
  benchmark::AddCustomContext("hal_driver", GetDevice()->info().driver);
  if (register_fn) register_fn();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (auto& fn : TeardownHooks()) fn();
  TeardownHooks().clear();
  MutableDevice().reset();
  return 0;
}

}  // namespace hal::bench
