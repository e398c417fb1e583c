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

#include <string>

#include "hal/device.h"
#include "hal/status.h"

namespace hal::bench {

// The URI the device was (or will be) created from.
const std::string& DeviceUri();

// The device of this process. Only valid inside a benchmark.
Device* GetDevice();

// Parses --device, creates the device, runs the benchmarks, tears down.
int BenchMain(int argc, char** argv);

// Stops the benchmark with the status as the error message.
void SkipWithStatus(benchmark::State& state, const Status& status);

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
