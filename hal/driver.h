// Drivers and the driver registry.
//
// A driver is a factory {name, enumerate, try_create}. Drivers register
// explicitly (RegisterBuiltinDrivers, generated from the CMake options); no
// static constructors. A driver whose vendor library or hardware is missing
// returns UNAVAILABLE from enumerate/try_create with a hint.
//
// Thread safety: register everything before use; lookups and device creation
// may then run from any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hal/device.h"
#include "hal/ref.h"
#include "hal/status.h"
#include "hal/uri.h"

namespace hal {

struct DriverFactory {
  std::string name;         // the URI scheme
  std::string description;  // one line
  std::function<StatusOr<std::vector<DeviceInfo>>()> enumerate;
  std::function<StatusOr<Ref<Device>>(const DeviceUri& uri)> try_create;
};

class DriverRegistry {
 public:
  // ALREADY_EXISTS for a second driver with the same name.
  Status Register(DriverFactory factory);
  std::vector<std::string> driver_names() const;
  // NOT_FOUND naming the registered drivers.
  StatusOr<const DriverFactory*> Find(std::string_view name) const;
  StatusOr<std::vector<DeviceInfo>> EnumerateDevices(
      std::string_view driver) const;
  // Parses `uri` and calls the driver's try_create.
  StatusOr<Ref<Device>> CreateDevice(std::string_view uri) const;

 private:
  std::vector<DriverFactory> factories_;
};

// Registers every driver compiled in (see drivers/CMakeLists.txt).
Status RegisterBuiltinDrivers(DriverRegistry* registry);

// A registry with the builtin drivers, built on first use.
const DriverRegistry& DefaultDriverRegistry();

}  // namespace hal
