#include "property_tests/property_util.h"

#include <cstdio>
#include <cstdlib>

#include "hal/driver.h"
#include "hal/uri.h"
#include "sim/core/halsim_control_loader.h"
#include "sim/core/sim_random.h"

namespace hal {

std::ostream& operator<<(std::ostream& os, StatusCode code) {
  return os << StatusCodeName(code);
}

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

}  // namespace hal

namespace hal::prop {

std::string CaseSwarmPlan(uint64_t sim_seed, bool late_signals) {
  const char* env = std::getenv("HAL_PROPERTY_SWARM");
  if (env && std::string(env) == "0") return "";
  sim::SimRandom random(sim_seed ^ 0x5A4A3D9E11ull);
  static const uint64_t kRates[] = {1000, 10000, 50000};
  std::string plan;
  if (random.Below(2) == 0) {
    plan = "slow_ppm=" + std::to_string(kRates[random.Below(3)]);
  }
  if (late_signals && random.Below(2) == 0) {
    if (!plan.empty()) plan += ",";
    plan += "late_signal_ppm=" + std::to_string(kRates[random.Below(3)]) +
            ",late_signal_us=" + std::to_string(10 + random.Below(500));
  }
  return plan;
}

std::string CaseDeviceUri(uint64_t sim_seed) {
  if (const char* seed = std::getenv("HAL_SIM_SEED"); seed && *seed) {
    sim_seed = std::strtoull(seed, nullptr, 10);
  }
  const char* env = std::getenv("HAL_TEST_DEVICE");
  std::string uri = env && *env ? env : "sim://?queues=4";
  // A simulator URI without a seed gets the case's, so that the case (and
  // its shrinking) replays exactly; and, unless the URI has one, the case's
  // timing-fault plan (CaseSwarmPlan), in the URI the failure prints.
  StatusOr<DeviceUri> parsed = DeviceUri::Parse(uri);
  if (parsed.ok() && parsed->driver == "sim" && !parsed->has_param("seed")) {
    parsed->params["seed"] = std::to_string(sim_seed);
    if (!parsed->has_param("slow_ppm")) {
      std::string plan = CaseSwarmPlan(sim_seed, /*late_signals=*/false);
      if (!plan.empty()) {
        parsed->params["slow_ppm"] = plan.substr(plan.find('=') + 1);
      }
    }
    return parsed->ToString();
  }
  // A driver over a simulated vendor library (sim/core/halsim_control.h):
  // the case's seed restarts the library's schedule, for the same reason,
  // and the case's plan replaces the last case's (not over HALSIM_FAULTS).
  if (parsed.ok()) {
    const sim::HalsimControl& control = sim::FindHalsimControl(parsed->driver);
    if (control && control.reset_schedule(sim_seed) == 0) {
      RC_LOG() << "simulated " << parsed->driver
               << " library schedule seed: " << sim_seed
               << " (HAL_SIM_SEED=" << sim_seed << " pins it)" << std::endl;
      const char* faults = std::getenv("HALSIM_FAULTS");
      if (control.set_faults && !(faults && *faults)) {
        std::string plan = CaseSwarmPlan(sim_seed, /*late_signals=*/true);
        if (control.set_faults(plan.c_str()) == 0 && !plan.empty()) {
          RC_LOG() << "swarm plan (timing faults, from the seed): " << plan
                   << " (HAL_PROPERTY_SWARM=0 turns it off)" << std::endl;
        }
      }
    }
  }
  return uri;
}

Ref<Device> CreateCaseDevice(const std::string& uri) {
  RC_LOG() << "device: HAL_TEST_DEVICE='" << uri << "'" << std::endl;
  StatusOr<Ref<Device>> device = DefaultDriverRegistry().CreateDevice(uri);
  if (!device.ok()) {
    RC_FAIL("cannot create device '" + uri +
            "': " + device.status().ToString());
  }
  return std::move(device).value();
}

void PrintBanner(const char* property) {
  const char* uri = std::getenv("HAL_TEST_DEVICE");
  const char* seed = std::getenv("HAL_SIM_SEED");
  std::printf(
      "property: %s\n"
      "device:   %s\n"
      "sim seed: %s (the simulator's, or the simulated vendor library's)\n"
      "A failure prints the shrunk list of HAL calls, the device URI (with "
      "the simulator seed) and RC_PARAMS=\"reproduce=...\"; rerun with both "
      "to replay it (docs/testing.md).\n",
      property, uri && *uri ? uri : "sim://?queues=4",
      seed && *seed ? seed : "drawn per case (shown on failure)");
  std::fflush(stdout);
}

}  // namespace hal::prop
