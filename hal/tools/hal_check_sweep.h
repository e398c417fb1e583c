// hal-check's runs of many seeds, each in a child process (hal_check.cc has
// the single run and the table):
//   --seeds=A..B        the suite once per seed: ok, FAIL, CRASH or HANG.
//   --swarm=A..B        the same under a fault plan drawn from each seed
//                       (SwarmPlan): tests may fail from the faults; a seed
//                       fails only on a crash, a hang, an oracle report (the
//                       CTS's oracle counters) or a liveness failure (a wait
//                       that timed out: something never reached its value
//                       and never failed).
//   --determinism=A..B  each seed twice with traces on: the first trace line
//                       that differs, with both lines.
//   --minimize=S        with --swarm: shrinks seed S's fault plan and tests
//                       to a small run that still fails the same way and
//                       prints its command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/cts/cts.h"
#include "hal/uri.h"

namespace hal::tools {

inline constexpr int kExitFail = 1, kExitUsage = 2, kExitNoDevice = 3,
                     kExitNothingRan = 4;

// Single-quotes `s` for a POSIX shell (as is when it needs no quotes).
std::string ShellQuote(const std::string& s);

// How a run is seeded and replayed.
struct RunSetup {
  std::string program;  // argv[0]
  const hal::cts::Backend* backend = nullptr;
  hal::DeviceUri base;  // the URI without the seed parameter
  uint64_t seed = 0;
  std::string seed_env;    // HALSIM_SEED when the seed is not in the URI
  std::string seed_alias;  // HALSIM_<DRIVER>_SEED, read when it is unset

  // The device URI of the whole run (with the run seed), with the fault
  // plan `faults` ("name=value,...") as parameters when the backend takes
  // its seed in the URI.
  std::string RunUri(uint64_t run_seed, const std::string& faults = "") const;
  // Environment variables a replay needs: the seed variable and every HAL_*
  // and HALSIM_* variable set now (libraries, fault plans, self-tests).
  std::string EnvPrefix(uint64_t run_seed) const;
  std::string Replay(uint64_t run_seed, const std::string& extra) const;
  std::string ReplayTest(const std::string& test) const {
    return Replay(seed, " " + ShellQuote("--gtest_filter=" + test));
  }
};

enum class SweepMode { kSeeds, kSwarm, kDeterminism };

struct SweepOptions {
  SweepMode mode = SweepMode::kSeeds;
  uint64_t first = 0, last = 0;
  double timeout_s = 300;
  std::vector<std::string> gtest_flags;
};

// Runs the sweep; returns hal-check's exit status.
int SweepSeeds(const RunSetup& run, const SweepOptions& options);

// The fault plan of swarm seed `seed`: each class of `faults` (a backend's
// swarm_faults) is in the plan with probability 1/2, at a rate drawn from a
// few decades (lose_device_at: a virtual time of 1 to 50 ms), and with
// probability 1/2 "buggify=<seed>" (HAL_BUGGIFY for the run: the drivers'
// own fault sites, hal/buggify.h). Only the seed decides it, so
// `--swarm=S..S` replays it.
std::string SwarmPlan(uint64_t seed, const std::vector<std::string>& faults);

// Shrinks the failing swarm seed `seed` (options.gtest_flags apply) and
// prints the smallest failing command it found; exit status 1 when the seed
// fails (as a failing check does), 0 when it does not fail at all.
int MinimizeSwarmSeed(const RunSetup& run, uint64_t seed,
                      const SweepOptions& options);

}  // namespace hal::tools
