// The control ABI's operations over a Library (skin_control.h).
#include "sim/skin/skin_control.h"

#include <cstdio>
#include <string>

#include "sim/core/fault_plan.h"

namespace hal::sim::skin::control {

int ResetSchedule(Library& library, uint64_t seed) {
  return library.engine().ResetSchedule(seed) == engine::Error::kOk ? 0 : -1;
}

int SetFaults(Library& library, const char* plan) {
  FaultPlan parsed;
  std::string error;
  if (!FaultPlan::Parse(plan ? plan : "", &parsed, &error) ||
      !library.engine().SetFaults(parsed, &error)) {
    std::fprintf(stderr, "%s: fault plan '%s' refused: %s\n",
                 library.log_prefix(), plan ? plan : "", error.c_str());
    return -1;
  }
  return 0;
}

void PauseHostFunctions(Library& library, int paused) {
  library.engine().PauseHostFunctions(paused != 0);
}

}  // namespace hal::sim::skin::control
