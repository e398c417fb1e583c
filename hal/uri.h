// Device URIs.
//
//   sim                        driver only: its default device
//   sim://?seed=7&queues=4     parameters
//   cuda:0                     device by ordinal
//   cuda://GPU-<uuid>          device by id
//   amdgpu://0,1               several physical devices as one logical device
//
// Grammar: driver [ ":" devices | "://" devices ] [ "?" key=value ("&" ...)* ]
// where driver is [a-z][a-z0-9_-]*, devices is a comma-separated list of
// non-empty ids ([A-Za-z0-9_.-]+), and keys and values may use %XX escapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hal/status.h"

namespace hal {

struct DeviceUri {
  std::string driver;
  std::vector<std::string> devices;
  std::map<std::string, std::string> params;

  // INVALID_ARGUMENT naming the offending character position and reason.
  static StatusOr<DeviceUri> Parse(std::string_view uri);
  // Canonical text; Parse(ToString()) gives an equal DeviceUri.
  std::string ToString() const;

  bool has_param(const std::string& key) const {
    return params.count(key) != 0;
  }
  // INVALID_ARGUMENT when present and not a decimal number in [min, max].
  StatusOr<uint64_t> GetUint(const std::string& key, uint64_t default_value,
                             uint64_t min = 0, uint64_t max = UINT64_MAX) const;
  // INVALID_ARGUMENT when present and not one of 1/0/true/false/on/off.
  StatusOr<bool> GetBool(const std::string& key, bool default_value) const;
  // INVALID_ARGUMENT naming the first parameter not in `known`.
  Status CheckKnownParams(std::initializer_list<std::string_view> known) const;

  friend bool operator==(const DeviceUri&, const DeviceUri&) = default;
};

}  // namespace hal
