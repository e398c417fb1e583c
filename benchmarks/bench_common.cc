#include "benchmarks/bench_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hal/driver.h"

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
}  // namespace

const std::string& DeviceUri() { return MutableUri(); }

Device* GetDevice() { return MutableDevice().get(); }

void SkipWithStatus(benchmark::State& state, const Status& status) {
  state.SkipWithError(status.ToString().c_str());
}

int BenchMain(int argc, char** argv) {
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MutableDevice().reset();
  return 0;
}

}  // namespace hal::bench
