#include "hal/formats/spirv_reader.h"

#include <cstring>
#include <map>

namespace hal::formats {

namespace {
constexpr uint32_t kOpEntryPoint = 15, kOpTypeInt = 21, kOpTypeFloat = 22,
                   kOpTypePointer = 32, kOpFunction = 54,
                   kOpFunctionParameter = 55, kOpFunctionEnd = 56;
constexpr uint32_t kExecutionModelKernel = 6;
}  // namespace

bool ParseSpirvKernels(std::span<const uint8_t> module,
                       std::vector<SpirvKernel>* out, std::string* error) {
  out->clear();
  if (module.size() < 20 || module.size() % 4 != 0) {
    *error = "not SPIR-V (shorter than its header or not whole words)";
    return false;
  }
  std::vector<uint32_t> w(module.size() / 4);
  std::memcpy(w.data(), module.data(), module.size());
  if (w[0] != kSpirvMagic) {
    *error = "not SPIR-V (bad magic number)";
    return false;
  }
  std::map<uint32_t, int> type_bytes;           // type id -> bytes
  std::map<uint32_t, size_t> entry_ids;         // function id -> out index
  std::map<uint32_t, std::vector<int>> params;  // function id -> sizes
  uint32_t function = 0;
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || count > w.size() - i) {
      *error = "truncated instruction at word " + std::to_string(i);
      return false;
    }
    const uint32_t* a = &w[i + 1];
    const uint32_t n = count - 1;
    if (op == kOpEntryPoint && n >= 3 && a[0] == kExecutionModelKernel) {
      const char* name = reinterpret_cast<const char*>(&a[2]);
      const size_t max = size_t{n - 2} * 4;
      const size_t len = strnlen(name, max);
      if (len == max) {
        *error = "OpEntryPoint name not terminated";
        return false;
      }
      entry_ids[a[1]] = out->size();
      out->push_back({std::string(name, len), {}});
    } else if ((op == kOpTypeInt || op == kOpTypeFloat) && n >= 2) {
      type_bytes[a[0]] = static_cast<int>(a[1] / 8);
    } else if (op == kOpTypePointer && n >= 3) {
      type_bytes[a[0]] = 8;
    } else if (op == kOpFunction && n >= 4) {
      function = a[1];
      params[function];
    } else if (op == kOpFunctionParameter && n >= 2 && function) {
      auto t = type_bytes.find(a[0]);
      params[function].push_back(t == type_bytes.end() ? -1 : t->second);
    } else if (op == kOpFunctionEnd) {
      function = 0;
    }
    i += count;
  }
  if (out->empty()) {
    *error = "no OpEntryPoint with the Kernel execution model";
    return false;
  }
  for (const auto& [id, index] : entry_ids) {
    auto p = params.find(id);
    if (p == params.end()) {
      *error = "entry point '" + (*out)[index].name + "' has no OpFunction";
      return false;
    }
    (*out)[index].param_bytes = p->second;
  }
  return true;
}

}  // namespace hal::formats
