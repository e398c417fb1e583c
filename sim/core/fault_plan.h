// The one fault grammar of every simulator: a plan is a list of
// `name=value` items (comma-separated in an environment variable, URI
// parameters for the HAL simulator). Counts are 1-based (0 = never), rates
// are parts per million drawn from the seed's fault stream
// (kFaultStreamSalt), so a seed replays its faults.
//
//   name            alias (older)          meaning
//   fail_alloc      alloc                  fail the Nth allocation
//   alloc_fail_ppm  alloc_ppm              fail allocations at this rate
//   fail_op         op                     fail the Nth queue operation
//   op_fail_ppm     op_ppm                 fail queue operations at this rate
//   slow_ppm                               an op takes 100x its duration
//   late_signal_us  late_event_us          a late signal completes U us late
//   late_signal_ppm late_event_ppm         rate of late signals
//   lose_device_at                         lose the device at virtual ns N
//
// Each simulator says which names it honours (Supports); an item it does not
// model is an error, not silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hal::sim {

struct FaultPlan {
  uint64_t fail_alloc = 0;
  uint32_t alloc_fail_ppm = 0;
  uint64_t fail_op = 0;
  uint32_t op_fail_ppm = 0;
  uint32_t slow_ppm = 0;
  uint64_t late_signal_us = 0;
  uint32_t late_signal_ppm = 0;
  uint64_t lose_device_at = 0;

  // Sets one item by its name or alias. False (and `error` says why) for an
  // unknown name or a rate above 10^6.
  bool Set(std::string_view name, uint64_t value, std::string* error);
  // Parses "name=value,name=value" (empty: no faults) into `out`; false (and
  // `out` unchanged) for a malformed plan.
  static bool Parse(std::string_view text, FaultPlan* out,
                    std::string* error = nullptr);
  // The canonical name of `name` (an alias or itself), or empty.
  static std::string_view CanonicalName(std::string_view name);
  bool any() const {
    return fail_alloc || alloc_fail_ppm || fail_op || op_fail_ppm || slow_ppm ||
           late_signal_us || late_signal_ppm || lose_device_at;
  }
};

}  // namespace hal::sim
