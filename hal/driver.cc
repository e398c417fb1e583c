#include "hal/driver.h"

namespace hal {

Status DriverRegistry::Register(DriverFactory factory) {
  if (factory.name.empty() || !factory.try_create || !factory.enumerate) {
    return InvalidArgumentError(
        "driver factory needs a name, enumerate and try_create");
  }
  for (const auto& f : factories_) {
    if (f.name == factory.name) {
      return AlreadyExistsError("driver '%s' is already registered",
                                f.name.c_str());
    }
  }
  factories_.push_back(std::move(factory));
  return OkStatus();
}

std::vector<std::string> DriverRegistry::driver_names() const {
  std::vector<std::string> names;
  for (const auto& f : factories_) names.push_back(f.name);
  return names;
}

StatusOr<const DriverFactory*> DriverRegistry::Find(
    std::string_view name) const {
  for (const auto& f : factories_) {
    if (f.name == name) return &f;
  }
  std::string known;
  for (const auto& f : factories_)
    known += (known.empty() ? "" : ", ") + f.name;
  return NotFoundError("no driver named '%.*s' (registered: %s)",
                       static_cast<int>(name.size()), name.data(),
                       known.empty() ? "none" : known.c_str());
}

StatusOr<std::vector<DeviceInfo>> DriverRegistry::EnumerateDevices(
    std::string_view driver) const {
  HAL_ASSIGN_OR_RETURN(const DriverFactory* f, Find(driver));
  return f->enumerate();
}

StatusOr<Ref<Device>> DriverRegistry::CreateDevice(std::string_view uri) const {
  HAL_ASSIGN_OR_RETURN(DeviceUri parsed, DeviceUri::Parse(uri));
  HAL_ASSIGN_OR_RETURN(const DriverFactory* f, Find(parsed.driver));
  return f->try_create(parsed);
}

}  // namespace hal
