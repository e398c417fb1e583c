// hal-info: lists the compiled-in drivers and the devices each one sees.
//
//   hal-info [--json]
#include <cstdio>
#include <string>

#include "hal/driver.h"

namespace {
std::string Esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: hal-info [--json]\n"
          "Lists the compiled-in drivers and the devices each one sees.\n"
          "  --json  print JSON instead of a readable list\n");
      return 0;
    } else {
      std::fprintf(stderr, "usage: hal-info [--json]\n");
      return 2;
    }
  }
  const hal::DriverRegistry& registry = hal::DefaultDriverRegistry();
  if (json) std::printf("{\"drivers\": [");
  bool first_driver = true;
  for (const std::string& name : registry.driver_names()) {
    const hal::DriverFactory* f = registry.Find(name).value();
    auto devices = f->enumerate();
    if (json) {
      std::printf("%s\n  {\"name\": \"%s\", \"description\": \"%s\", ",
                  first_driver ? "" : ",", Esc(name).c_str(),
                  Esc(f->description).c_str());
      if (!devices.ok()) {
        std::printf("\"status\": \"%s\", \"devices\": []}",
                    Esc(devices.status().ToString()).c_str());
      } else {
        std::printf("\"status\": \"OK\", \"devices\": [");
        bool first = true;
        for (const auto& d : *devices) {
          std::printf(
              "%s{\"uri\": \"%s\", \"name\": \"%s\", \"uuid\": \"%s\", "
              "\"memory_bytes\": %llu, \"queues\": %d, \"properties\": {",
              first ? "" : ", ", Esc(d.uri).c_str(), Esc(d.name).c_str(),
              Esc(d.uuid).c_str(), (unsigned long long)d.memory_bytes,
              d.queue_count);
          bool first_property = true;
          for (const auto& [key, value] : d.properties) {
            std::printf("%s\"%s\": \"%s\"", first_property ? "" : ", ",
                        Esc(key).c_str(), Esc(value).c_str());
            first_property = false;
          }
          std::printf("}}");
          first = false;
        }
        std::printf("]}");
      }
    } else {
      std::printf("driver %s: %s\n", name.c_str(), f->description.c_str());
      if (!devices.ok()) {
        std::printf("  (no devices: %s)\n",
                    devices.status().ToString().c_str());
        continue;
      }
      for (const auto& d : *devices) {
        std::printf("  %-12s %s, uuid %s, %llu MiB, %d queue(s)\n",
                    d.uri.c_str(), d.name.c_str(), d.uuid.c_str(),
                    (unsigned long long)(d.memory_bytes >> 20), d.queue_count);
        // Driver-specific facts (compute capability, driver version, ...).
        for (const auto& [key, value] : d.properties) {
          std::printf("  %-12s   %s: %s\n", "", key.c_str(), value.c_str());
        }
      }
    }
    first_driver = false;
  }
  if (json) std::printf("\n]}\n");
  return 0;
}
