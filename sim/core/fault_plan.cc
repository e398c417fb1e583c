#include "sim/core/fault_plan.h"

#include <cstdlib>

namespace hal::sim {
namespace {

struct Item {
  const char* name;
  const char* alias;  // today's vendor-simulator name, or null
  bool rate;          // parts per million
};

constexpr Item kItems[] = {
    {"fail_alloc", "alloc", false},
    {"alloc_fail_ppm", "alloc_ppm", true},
    {"fail_op", "op", false},
    {"op_fail_ppm", "op_ppm", true},
    {"slow_ppm", nullptr, true},
    {"late_signal_us", "late_event_us", false},
    {"late_signal_ppm", "late_event_ppm", true},
    {"lose_device_at", nullptr, false},
};

const Item* Find(std::string_view name) {
  for (const Item& item : kItems) {
    if (name == item.name || (item.alias && name == item.alias)) return &item;
  }
  return nullptr;
}

}  // namespace

std::string_view FaultPlan::CanonicalName(std::string_view name) {
  const Item* item = Find(name);
  return item ? item->name : std::string_view();
}

bool FaultPlan::Set(std::string_view name, uint64_t value, std::string* error) {
  const Item* item = Find(name);
  if (!item) {
    if (error) *error = "unknown fault '" + std::string(name) + "'";
    return false;
  }
  if (item->rate && value > 1000000) {
    if (error) {
      *error = "fault rate " + std::string(name) + "=" + std::to_string(value) +
               " is above 1000000 (parts per million)";
    }
    return false;
  }
  std::string_view n = item->name;
  if (n == "fail_alloc") fail_alloc = value;
  if (n == "alloc_fail_ppm") alloc_fail_ppm = static_cast<uint32_t>(value);
  if (n == "fail_op") fail_op = value;
  if (n == "op_fail_ppm") op_fail_ppm = static_cast<uint32_t>(value);
  if (n == "slow_ppm") slow_ppm = static_cast<uint32_t>(value);
  if (n == "late_signal_us") late_signal_us = value;
  if (n == "late_signal_ppm") late_signal_ppm = static_cast<uint32_t>(value);
  if (n == "lose_device_at") lose_device_at = value;
  return true;
}

bool FaultPlan::Parse(std::string_view text, FaultPlan* out,
                      std::string* error) {
  FaultPlan plan;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item(text.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq + 1 == item.size()) {
      if (error) *error = "'" + item + "' is not name=value";
      return false;
    }
    char* tail = nullptr;
    uint64_t value = std::strtoull(item.c_str() + eq + 1, &tail, 10);
    if (!tail || *tail || item[eq + 1] == '-') {
      if (error) *error = "'" + item + "' has no unsigned number";
      return false;
    }
    if (!plan.Set(std::string_view(item).substr(0, eq), value, error)) {
      return false;
    }
  }
  *out = plan;
  return true;
}

}  // namespace hal::sim
