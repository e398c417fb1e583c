// Executable loading, every format: any bytes either parse or give
// INVALID_ARGUMENT (never a crash), and what parses is internally consistent
// and survives a serialize/parse round trip unchanged.
//
// Loading stops at verification: preparing a sim-format executable dlopens
// native code, which is only for trusted files (docs/executables.md).
#include <span>

#include "fuzz/fuzz_input.h"
#include "hal/executable.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hal;
  std::span<const uint8_t> bytes(data, size);
  StatusOr<ExecutableFormat> format = IdentifyExecutableFormat(bytes);
  HAL_FUZZ_CHECK(
      format.ok() || format.status().code() == StatusCode::kInvalidArgument,
      "%s", format.status().ToString().c_str());
  StatusOr<ExecutableData> parsed = ParseExecutable(bytes);
  if (!parsed.ok()) {
    HAL_FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument, "%s",
                   parsed.status().ToString().c_str());
    return 0;
  }
  const ExecutableData& e = *parsed;
  HAL_FUZZ_CHECK(format.ok() && *format == e.format,
                 "format disagrees with the header");
  HAL_FUZZ_CHECK(!e.functions.empty() && !e.modules.empty(),
                 "empty executable parsed");
  for (const FunctionInfo& f : e.functions) {
    HAL_FUZZ_CHECK(f.module_ordinal < e.modules.size(),
                   "module ordinal %u out of range", f.module_ordinal);
    HAL_FUZZ_CHECK(f.binding_flags.size() == f.binding_count,
                   "binding flags size");
    HAL_FUZZ_CHECK(f.binding_count <= kMaxDispatchBindings, "binding count");
    HAL_FUZZ_CHECK(f.constant_count <= kMaxDispatchConstants, "constant count");
    uint64_t invocations = uint64_t{f.workgroup_size[0]} * f.workgroup_size[1] *
                           f.workgroup_size[2];
    HAL_FUZZ_CHECK(invocations > 0 && invocations <= kMaxWorkgroupInvocations,
                   "workgroup size");
    HAL_FUZZ_CHECK(!f.name.empty() && f.name.size() <= kMaxExportNameLength,
                   "name");
  }
  std::vector<uint8_t> again = SerializeExecutable(e);
  StatusOr<ExecutableData> reparsed = ParseExecutable(again);
  HAL_FUZZ_CHECK(reparsed.ok(), "serialized executable does not parse: %s",
                 reparsed.status().ToString().c_str());
  HAL_FUZZ_CHECK(reparsed->functions.size() == e.functions.size() &&
                     reparsed->modules.size() == e.modules.size() &&
                     reparsed->format == e.format,
                 "round trip changed the executable");
  for (size_t i = 0; i < e.functions.size(); ++i) {
    const FunctionInfo& a = e.functions[i];
    const FunctionInfo& b = reparsed->functions[i];
    HAL_FUZZ_CHECK(a.name == b.name && a.module_ordinal == b.module_ordinal &&
                       a.binding_count == b.binding_count &&
                       a.constant_count == b.constant_count &&
                       a.shared_memory_size == b.shared_memory_size,
                   "round trip changed export %zu", i);
  }
  for (size_t i = 0; i < e.modules.size(); ++i) {
    HAL_FUZZ_CHECK(e.modules[i].code == reparsed->modules[i].code &&
                       e.modules[i].isa == reparsed->modules[i].isa,
                   "round trip changed module %zu", i);
  }
  return 0;
}
