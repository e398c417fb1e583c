// Locating the test kernels (hal/cts/kernels/) from conformance tests.
//
// The build writes test_kernels.<format> for every format its toolchain can
// produce into one directory, compiled in as HAL_CTS_KERNELS_DIR; the
// environment variable of the same name overrides it (for an installed
// hal-check or kernels built elsewhere).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/executable.h"
#include "hal/status.h"

namespace hal::cts {

std::string TestKernelsDir();
// The formats this build produced (a missing toolchain skips a format).
std::vector<ExecutableFormat> ProducedTestKernelFormats();
bool TestKernelFormatProduced(ExecutableFormat format);
std::string TestKernelPath(ExecutableFormat format);
// The file's bytes; NOT_FOUND when it is missing.
StatusOr<std::vector<uint8_t>> ReadTestKernels(ExecutableFormat format);

}  // namespace hal::cts
