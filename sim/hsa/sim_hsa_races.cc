// The byte ranges a user kernel's dispatch declares to the engine's race
// checker (the device library's blits declare their exact ones in BuildOp).
//
// The simulator does not know which bytes a kernel will touch, nor whether
// it reads or writes a binding: the native kernel learns only pointers. The
// driver's buffers are suballocations of large blocks, so "from the pointer
// to the end of its allocation" would overlap unrelated buffers of the same
// block and report races that are not there. So each pointer argument that
// lies in an allocation declares its first 4 bytes (one element of the
// kernel ABI, clipped to the allocation) as written: two unordered kernels
// (or a kernel and a blit) that use the same binding address are reported,
// races on other bytes only are missed, and two unordered kernels that both
// only read one binding address are reported too (the kernel ABI has no
// read-only flag for the simulator to honour).
#include <cstring>

#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

void DeclareKernelRanges(const KernelObject& kernel, const uint8_t* kernargs,
                         engine::Op* op) {
  constexpr uint64_t kElementBytes = 4;
  const uint32_t bindings = kernel.kernel.info->binding_count;
  if (!kernargs || uint64_t{bindings} * 8 > kernel.kernarg_size) return;
  for (uint32_t i = 0; i < bindings; ++i) {
    uint64_t v;
    std::memcpy(&v, kernargs + 8 * i, 8);
    const auto p = static_cast<uintptr_t>(v);
    engine::Allocation a;
    if (!E().FindAllocation(p, &a) || p >= a.base + a.size) continue;
    const uint64_t left = a.base + a.size - p;
    op->more_writes.push_back(
        Range::Of(p, left < kElementBytes ? left : kElementBytes));
  }
}

}  // namespace hal::sim::hsa
