// The kernel-argument layout of an AMDGPU code object, from its metadata
// note (NT_AMDGPU_METADATA: a MessagePack map whose "amdhsa.kernels" lists
// each kernel's ".name" and ".args" with ".offset", ".size" and
// ".value_kind"). HSA itself gives only the kernarg segment's size; the
// driver needs each explicit argument's place to write kernel arguments.
//
// The input is untrusted (executable files): every read is bounded and a
// malformed note is INVALID_ARGUMENT, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "hal/status.h"

namespace hal::amdgpu {

struct KernelArgument {
  uint32_t offset = 0;
  uint32_t size = 0;
};

// Explicit arguments only (value kinds "hidden_*" are left out), in order.
using KernelArgumentLayouts =
    std::map<std::string, std::vector<KernelArgument>>;

StatusOr<KernelArgumentLayouts> ReadKernelArgumentLayouts(
    std::span<const uint8_t> elf);

}  // namespace hal::amdgpu
