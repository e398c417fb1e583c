/* The AMDGPU driver's device library: the indirect-dispatch patch kernel
 * (the seed's "Indirect Dispatches": AQL has no dispatch packet that reads
 * its grid from memory, so an ancillary dispatch patches the next packet).
 * Written once and compiled twice, with the blits, through
 * amdgpu_device_library.c: for amdgcn (OpenCL C) and natively in the
 * simulator kernel ABI (AMDGPU_DEVICE_TARGET_NATIVE). The logic
 * (PatchDispatch) is shared text; only the entry points differ.
 *
 *   amdgpu_dispatch_patch(packet, count, status,
 *                         workgroup_x, workgroup_y, workgroup_z, max_count,
 *                         dispatch_header, noop_header)
 *
 * One work-item (workgroup 1x1x1). `packet` is the target
 * KERNEL_DISPATCH packet in the AQL ring: the host wrote its body (with
 * the grid left 0) and left its header INVALID; `count` holds the three
 * uint32 workgroup counts; `status` is the stream's indirect-dispatch
 * status record (4 x uint32: error flag, then the offending count).
 *
 *   - Every count in [1, max_count] and count * workgroup size <=
 *     UINT32_MAX: writes
 *     grid_size_x/y/z (count * workgroup size), then publishes the packet
 *     by storing `dispatch_header` (the 16-bit header and the 16-bit setup,
 *     one 32-bit store, release, system scope).
 *   - A count above `max_count` (the HAL's limit), or whose grid does not
 *     fit the packet's uint32 grid size (it would wrap): launches nothing
 *     (below), and the first such count is recorded in `status` (flag 1,
 *     then x, y, z) for the host to report as the stream's error.
 *   - Otherwise, any count 0: launches nothing. HSA requires grid sizes
 *     > 0, so the packet becomes a BARRIER_AND with no dependencies
 *     (`noop_header`), which keeps its completion signal: the queue's epoch
 *     still counts it.
 *
 * Packet layouts (uint32 words): dispatch 0 header|setup, 3..5 grid_size;
 * barrier-AND 0 header|reserved, 1 reserved, 2..11 dep_signal[5], 12..13
 * reserved, 14..15 completion_signal (the dispatch's, same offset).
 */
#define AMDGPU_PATCH_WORKGROUP 1u

#ifdef AMDGPU_DEVICE_TARGET_NATIVE
#include <stdint.h>

#include "sim/core/sim_kernel_abi.h"
#define AMDGPU_GLOBAL
typedef uint32_t amdgpu_u32;
typedef uint64_t amdgpu_u64;
#else
#define AMDGPU_GLOBAL __global
typedef uint amdgpu_u32;
typedef ulong amdgpu_u64;
#endif

static void PatchDispatch(AMDGPU_GLOBAL amdgpu_u32* packet,
                          AMDGPU_GLOBAL const amdgpu_u32* count,
                          AMDGPU_GLOBAL amdgpu_u32* status,
                          const amdgpu_u32 workgroup[3], amdgpu_u32 max_count,
                          amdgpu_u32 dispatch_header, amdgpu_u32 noop_header) {
  amdgpu_u64 grid[3];
  int zero = 0, overflow = 0;
  for (int i = 0; i < 3; ++i) {
    grid[i] = (amdgpu_u64)count[i] * workgroup[i];
    zero |= grid[i] == 0;
    overflow |= count[i] > max_count || grid[i] > 0xffffffffu;
  }
  if (!zero && !overflow) {
    packet[3] = (amdgpu_u32)grid[0];
    packet[4] = (amdgpu_u32)grid[1];
    packet[5] = (amdgpu_u32)grid[2];
    __atomic_store_n(packet, dispatch_header, __ATOMIC_RELEASE);
    return;
  }
  /* A stream's packets run in order (barrier bit), so no other patch of
   * this stream touches `status` meanwhile: the first error stays. */
  if (overflow && __atomic_load_n(status, __ATOMIC_ACQUIRE) == 0) {
    status[1] = count[0];
    status[2] = count[1];
    status[3] = count[2];
    __atomic_store_n(status, 1u, __ATOMIC_RELEASE);
  }
  for (int i = 1; i < 14; ++i) packet[i] = 0;
  __atomic_store_n(packet, noop_header, __ATOMIC_RELEASE);
}

#ifdef AMDGPU_DEVICE_TARGET_NATIVE

#define EXPORT __attribute__((visibility("default")))

EXPORT void amdgpu_dispatch_patch(hal_sim_dispatch_state* s) {
  static const uint64_t kNeed[3] = {64, 12, 16};
  static const uint32_t kFault[3] = {HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS,
                                     HAL_SIM_FAULT_READ_OUT_OF_BOUNDS,
                                     HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS};
  for (uint32_t i = 0; i < 3; ++i) {
    if (s->binding_lengths[i] >= kNeed[i]) continue;
    s->fault = kFault[i];
    s->fault_binding = i;
    s->fault_offset = s->binding_lengths[i];
    s->fault_length = kNeed[i] - s->binding_lengths[i];
    return;
  }
  const uint32_t workgroup[3] = {s->constants[0], s->constants[1],
                                 s->constants[2]};
  PatchDispatch((uint32_t*)s->binding_data[0],
                (const uint32_t*)s->binding_data[1],
                (uint32_t*)s->binding_data[2], workgroup, s->constants[3],
                s->constants[4], s->constants[5]);
}
EXPORT const hal_sim_kernel_info amdgpu_dispatch_patch__hal_sim_info = {
    HAL_SIM_KERNEL_ABI_VERSION, 3, 6, {AMDGPU_PATCH_WORKGROUP, 1, 1}};

#else /* amdgcn, OpenCL C */

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
amdgpu_dispatch_patch(__global uint* packet, __global const uint* count,
                      __global uint* status, uint workgroup_x, uint workgroup_y,
                      uint workgroup_z, uint max_count, uint dispatch_header,
                      uint noop_header) {
  const uint workgroup[3] = {workgroup_x, workgroup_y, workgroup_z};
  PatchDispatch(packet, count, status, workgroup, max_count, dispatch_header,
                noop_header);
}

#endif
