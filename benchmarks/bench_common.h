// Shared scaffolding of the HAL benchmarks.
//
// Every benchmark binary takes a device URI: `--device=URI` on the command
// line (removed before Google Benchmark parses the rest) or the
// HAL_BENCH_DEVICE environment variable; the default is the simulator
// (`sim`). The device is created once per process, before the first
// benchmark runs, and destroyed after the last.
//
// Each binary measures its HAL benchmarks next to baselines (names start
// with `BM_Baseline`) in the same run, so that results can be read as
// ratios that do not depend on how fast or how loaded the machine is.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

#include "hal/device.h"
#include "hal/executable.h"
#include "hal/status.h"

namespace hal::bench {

// The URI the device was (or will be) created from.
const std::string& DeviceUri();

// The device of this process. Only valid inside a benchmark.
Device* GetDevice();

// Parses --device, creates the device, calls `register_fn` (if any: it may
// register benchmarks that depend on the device), runs the benchmarks, runs
// the teardown hooks, tears down.
int BenchMain(int argc, char** argv, void (*register_fn)() = nullptr);

// Runs `fn` after the last benchmark, before the device is destroyed (for
// state a benchmark keeps across its runs: extra devices, large buffers).
void AtTeardown(std::function<void()> fn);

// The test-kernel library (hal/cts/kernels/), prepared once on this
// process's device in the first produced format the device can prepare.
// NOT_FOUND when this build has no test kernels (tests not built).
StatusOr<Ref<Executable>> TestKernels();
// The same, prepared through `cache` (not memoized).
StatusOr<Ref<Executable>> PrepareTestKernels(ExecutableCache* cache);

// Stops the benchmark with the status as the error message.
void SkipWithStatus(benchmark::State& state, const Status& status);

// Counts, not times (issue 26's baseline): thread hand-offs the GPU layer
// made (gpu::ThreadHandOffs) and vendor API calls (halsim_api_calls, over a
// simulated vendor library), per iteration. Take one before the loop and
// report it after: counters "hand_offs_per_op" and "vendor_calls_per_op"
// (the latter only over a simulator).
struct CountsBefore {
  uint64_t hand_offs = 0;
  uint64_t vendor_calls = 0;
};
CountsBefore TakeCounts();
void ReportCountsPerOp(benchmark::State& state, const CountsBefore& before);

}  // namespace hal::bench

// Ends the benchmark function when `expr` (a Status or StatusOr) fails.
#define HAL_BENCH_CHECK(state, expr)                                          \
  do {                                                                        \
    const ::hal::Status _hal_bench_status = ::hal::internal::GetStatus(expr); \
    if (!_hal_bench_status.ok()) {                                            \
      ::hal::bench::SkipWithStatus(state, _hal_bench_status);                 \
      return;                                                                 \
    }                                                                         \
  } while (false)

// Like HAL_ASSIGN_OR_RETURN, for benchmark functions.
#define HAL_BENCH_ASSIGN(state, lhs, expr)                                  \
  HAL_BENCH_ASSIGN_IMPL(state, HAL_STATUS_CONCAT(_hal_bench_or_, __LINE__), \
                        lhs, expr)
#define HAL_BENCH_ASSIGN_IMPL(state, tmp, lhs, expr)   \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) {                                     \
    ::hal::bench::SkipWithStatus(state, tmp.status()); \
    return;                                            \
  }                                                    \
  lhs = std::move(tmp).value()

#define HAL_BENCH_MAIN()                        \
  int main(int argc, char** argv) {             \
    return ::hal::bench::BenchMain(argc, argv); \
  }

// HAL_BENCH_MAIN with a registration function run once the device exists.
#define HAL_BENCH_MAIN_WITH(register_fn)                     \
  int main(int argc, char** argv) {                          \
    return ::hal::bench::BenchMain(argc, argv, register_fn); \
  }
