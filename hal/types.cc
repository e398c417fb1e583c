#include "hal/types.h"

namespace hal {

namespace {
template <typename T, size_t N>
std::string FlagString(T value, const std::pair<T, const char*> (&names)[N]) {
  if (!Any(value)) return "NONE";
  std::string out;
  T rest = value;
  for (const auto& [bit, name] : names) {
    if (AllOf(value, bit) && Any(rest & bit)) {
      if (!out.empty()) out += "|";
      out += name;
      rest = rest & ~bit;
    }
  }
  if (Any(rest)) {
    if (!out.empty()) out += "|";
    out += "0x" + std::to_string(static_cast<uint32_t>(rest));
  }
  return out;
}
}  // namespace

std::string MemoryTypeString(MemoryType type) {
  static const std::pair<MemoryType, const char*> kNames[] = {
      {MemoryType::kDeviceLocal, "DEVICE_LOCAL"},
      {MemoryType::kHostLocal, "HOST_LOCAL"},
      {MemoryType::kOptimal, "OPTIMAL"},
      {MemoryType::kHostVisible, "HOST_VISIBLE"},
      {MemoryType::kHostCoherent, "HOST_COHERENT"},
      {MemoryType::kHostCached, "HOST_CACHED"},
      {MemoryType::kDeviceVisible, "DEVICE_VISIBLE"},
  };
  return FlagString(type, kNames);
}

std::string BufferUsageString(BufferUsage usage) {
  static const std::pair<BufferUsage, const char*> kNames[] = {
      {BufferUsage::kTransferSource, "TRANSFER_SOURCE"},
      {BufferUsage::kTransferTarget, "TRANSFER_TARGET"},
      {BufferUsage::kDispatchIndirectParams, "DISPATCH_INDIRECT_PARAMS"},
      {BufferUsage::kDispatchStorageRead, "DISPATCH_STORAGE_READ"},
      {BufferUsage::kDispatchStorageWrite, "DISPATCH_STORAGE_WRITE"},
      {BufferUsage::kMappingScoped, "MAPPING_SCOPED"},
      {BufferUsage::kMappingPersistent, "MAPPING_PERSISTENT"},
  };
  return FlagString(usage, kNames);
}

bool ResolveRange(DeviceSize size, DeviceSize offset, DeviceSize length,
                  DeviceSize* out_length) {
  if (offset > size) return false;
  if (length == kWholeBuffer) {
    *out_length = size - offset;
    return true;
  }
  if (length > size - offset) return false;
  *out_length = length;
  return true;
}

}  // namespace hal
