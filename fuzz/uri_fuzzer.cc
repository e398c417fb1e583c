// Device-URI parsing: any bytes either parse or give INVALID_ARGUMENT, and a
// parsed URI round-trips: Parse(ToString(u)) == u, and ToString is stable.
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "hal/uri.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hal;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<DeviceUri> uri = DeviceUri::Parse(text);
  if (!uri.ok()) {
    HAL_FUZZ_CHECK(uri.status().code() == StatusCode::kInvalidArgument, "%s",
                   uri.status().ToString().c_str());
    return 0;
  }
  std::string canonical = uri->ToString();
  StatusOr<DeviceUri> again = DeviceUri::Parse(canonical);
  HAL_FUZZ_CHECK(again.ok(), "canonical '%s' does not parse: %s",
                 canonical.c_str(), again.status().ToString().c_str());
  HAL_FUZZ_CHECK(*again == *uri, "'%s' round-trips to a different URI",
                 canonical.c_str());
  HAL_FUZZ_CHECK(again->ToString() == canonical, "'%s' is not stable",
                 canonical.c_str());
  // The typed getters never fail with anything but INVALID_ARGUMENT.
  for (const auto& [key, value] : uri->params) {
    StatusOr<uint64_t> n = uri->GetUint(key, 0, 1, 1000);
    if (!n.ok()) hal::fuzz::CheckStatus(n.status(), "GetUint");
    HAL_FUZZ_CHECK(n.ok() || n.status().code() == StatusCode::kInvalidArgument,
                   "GetUint");
    StatusOr<bool> b = uri->GetBool(key, false);
    HAL_FUZZ_CHECK(b.ok() || b.status().code() == StatusCode::kInvalidArgument,
                   "GetBool");
  }
  Status known = uri->CheckKnownParams({"queues", "seed"});
  HAL_FUZZ_CHECK(known.ok() || known.code() == StatusCode::kInvalidArgument,
                 "CheckKnownParams");
  return 0;
}
