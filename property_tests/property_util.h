// Shared plumbing for the RapidCheck properties: which device a case runs
// on, how long a bounded wait may take, and how HAL values print in a
// counterexample.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "hal/device.h"
#include "hal/ref.h"
#include "hal/status.h"

namespace hal::prop {

// A wait the model says must finish may take this long before the case
// fails as a hang (the simulator answers in microseconds; real drivers and
// sanitizer builds need slack).
inline constexpr std::chrono::seconds kSettleTimeout{10};
// A wait the model says must time out uses this short timeout.
inline constexpr std::chrono::milliseconds kShortTimeout{1};

// The device URI of one case. HAL_TEST_DEVICE wins when set (any driver);
// otherwise the simulator with four queues and `sim_seed`, unless
// HAL_SIM_SEED pins the seed.
std::string CaseDeviceUri(uint64_t sim_seed);

// Creates the device of `uri` and logs the URI (RC_LOG: printed with the
// counterexample when the case fails). Fails the case when the device
// cannot be created.
Ref<Device> CreateCaseDevice(const std::string& uri);

// Prints the banner every property binary starts with: property name,
// device, how to reproduce.
void PrintBanner(const char* property);

// Runs `property` under rc::check with the given name and returns the exit
// code for main(): 0 when it held.
template <typename Property>
int RunProperty(const char* name, Property&& property);

// The value of `result`, or a failed case (RC_FAIL, which throws) naming
// `what` and the status: never `.value()` of an error.
template <typename T>
T ValueOrFail(StatusOr<T> result, const char* what);

}  // namespace hal::prop

namespace hal {
std::ostream& operator<<(std::ostream& os, StatusCode code);
std::ostream& operator<<(std::ostream& os, const Status& status);
}  // namespace hal

#include <rapidcheck.h>

template <typename Property>
int hal::prop::RunProperty(const char* name, Property&& property) {
  PrintBanner(name);
  bool ok = rc::check(name, std::forward<Property>(property));
  return ok ? 0 : 1;
}

template <typename T>
T hal::prop::ValueOrFail(StatusOr<T> result, const char* what) {
  if (!result.ok())
    RC_FAIL(std::string(what) + ": " + result.status().ToString());
  return std::move(result).value();
}
