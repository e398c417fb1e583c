// The byte ranges a user kernel's dispatch declares to the engine's race
// checker (the device library's blits declare their exact ones in BuildOp):
// the first 4 bytes of each binding, engine::Engine::KernelBindingRanges
// (shared with the CUDA and HIP skins) says why.
#include <cstring>

#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

void DeclareKernelRanges(const KernelObject& kernel, const uint8_t* kernargs,
                         engine::Op* op) {
  const uint32_t bindings = kernel.kernel.info->binding_count;
  if (!kernargs || uint64_t{bindings} * 8 > kernel.kernarg_size) return;
  std::vector<uintptr_t> pointers(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    uint64_t v;
    std::memcpy(&v, kernargs + 8 * i, 8);
    pointers[i] = static_cast<uintptr_t>(v);
  }
  for (const Range& r : E().KernelBindingRanges(pointers)) {
    op->more_writes.push_back(r);
  }
}

}  // namespace hal::sim::hsa
