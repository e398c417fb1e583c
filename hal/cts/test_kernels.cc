#include "hal/cts/test_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hal::cts {

#ifndef HAL_CTS_KERNELS_DIR
#define HAL_CTS_KERNELS_DIR ""
#endif
#ifndef HAL_CTS_KERNEL_FORMATS
#define HAL_CTS_KERNEL_FORMATS ""
#endif

std::string TestKernelsDir() {
  if (const char* env = std::getenv("HAL_CTS_KERNELS_DIR"); env && *env) {
    return env;
  }
  return HAL_CTS_KERNELS_DIR;
}

std::vector<ExecutableFormat> ProducedTestKernelFormats() {
  std::vector<ExecutableFormat> out;
  std::stringstream names(HAL_CTS_KERNEL_FORMATS);
  for (std::string name; std::getline(names, name, ',');) {
    auto f = ParseExecutableFormatName(name);
    if (f.ok()) out.push_back(*f);
  }
  return out;
}

bool TestKernelFormatProduced(ExecutableFormat format) {
  auto all = ProducedTestKernelFormats();
  return std::find(all.begin(), all.end(), format) != all.end();
}

std::string TestKernelPath(ExecutableFormat format) {
  return TestKernelsDir() + "/test_kernels." + ExecutableFormatName(format);
}

StatusOr<std::vector<uint8_t>> ReadTestKernels(ExecutableFormat format) {
  std::string path = TestKernelPath(format);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError("test kernels '%s' not found (set HAL_CTS_KERNELS_DIR)",
                         path.c_str());
  }
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

}  // namespace hal::cts
