// Shared plumbing for the RapidCheck properties: which device a case runs
// on, how long a bounded wait may take, and how HAL values print in a
// counterexample.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <chrono>
#include <cstdint>
#include <memory>
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
// HAL_SIM_SEED pins the seed. On a simulator (sim://, or a simulated vendor
// library) the case also runs under CaseSwarmPlan(seed).
std::string CaseDeviceUri(uint64_t sim_seed);

// Swarm testing inside the properties: a fault plan drawn from the case's
// seed, of timing faults only (slow_ppm; late_signal_ppm/_us where
// `late_signals`), which change when operations finish and never what the
// models expect. Empty for half the seeds, and with HAL_PROPERTY_SWARM=0.
std::string CaseSwarmPlan(uint64_t sim_seed, bool late_signals);

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

// A command generator for rc::state::gen::commands: one of `Cmds`, each
// constructed from the model (`explicit Cmd(const Model&)`), chosen
// uniformly. It does what RapidCheck's execOneOfWithArgs does at a fraction
// of the cost: that one copies the model four times for every try (the
// generator's argument tuple, the copy it makes, the lambda's capture and
// the Gen's), and a case generates a few hundred tries; this one copies it
// once per try into a shared pointer that the shrinker may reuse. Pass only
// the command types that are valid in the model's state (their
// constructors' RC_PRE then never discards, which costs an exception).
template <typename Model, typename Sut, typename... Cmds>
rc::Gen<std::shared_ptr<const rc::state::Command<Model, Sut>>> OneOfCommands(
    const Model& model);

// The value of `result`, or a failed case (RC_FAIL, which throws) naming
// `what` and the status: never `.value()` of an error.
template <typename T>
T ValueOrFail(StatusOr<T> result, const char* what);

}  // namespace hal::prop

namespace hal {
std::ostream& operator<<(std::ostream& os, StatusCode code);
std::ostream& operator<<(std::ostream& os, const Status& status);
}  // namespace hal

template <typename Model, typename Sut, typename... Cmds>
rc::Gen<std::shared_ptr<const rc::state::Command<Model, Sut>>>
hal::prop::OneOfCommands(const Model& model) {
  using CmdSP = std::shared_ptr<const rc::state::Command<Model, Sut>>;
  using Make = CmdSP (*)(const Model&);
  static constexpr Make kMakers[] = {+[](const Model& m) -> CmdSP {
    return std::make_shared<const Cmds>(m);
  }...};
  auto shared = std::make_shared<const Model>(model);
  return rc::gen::exec([shared] {
    size_t n = *rc::gen::inRange<size_t>(0, sizeof...(Cmds));
    return kMakers[n](*shared);
  });
}

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
