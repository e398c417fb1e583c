/* The AMDGPU driver's device library: the blit kernels behind queue fills
 * and copies (and command-buffer fill/copy commands). Written once and
 * compiled twice:
 *   - for amdgcn (OpenCL C, clang -target amdgcn-amd-amdhsa -mcpu=gfx90a),
 *     the code object the driver embeds and loads on every device;
 *   - for the host with AMDGPU_DEVICE_TARGET_NATIVE, in the simulator
 *     kernel ABI (sim/core/sim_kernel_abi.h): the simulated ROCr runs a
 *     kernel object as the native build of the kernel of the same name.
 *
 * Both kernels run 64 work-items per workgroup, each over one 256-byte
 * chunk of the range (so a workgroup covers 16 KiB), and take their
 * arguments in the kernel ABI's order: buffer pointers, then 4-byte values.
 *
 *   amdgpu_blit_fill(dst, pattern, unused, length_lo, length_hi)
 *     byte k of [dst, dst + length) = byte (k % 4) of `pattern`, which the
 *     driver replicates to 4 bytes (a 1- or 2-byte pattern tiles it).
 *   amdgpu_blit_copy(src, dst, length_lo, length_hi)
 *     [dst, dst + length) = [src, src + length); the ranges do not overlap.
 */
#define AMDGPU_BLIT_CHUNK 256u
#define AMDGPU_BLIT_WORKGROUP 64u

#ifdef AMDGPU_DEVICE_TARGET_NATIVE

#include <stdint.h>

#include "sim/core/sim_kernel_abi.h"

#define EXPORT __attribute__((visibility("default")))

static uint64_t Length(const hal_sim_dispatch_state* s, int first) {
  return (uint64_t)s->constants[first] |
         ((uint64_t)s->constants[first + 1] << 32);
}

static int OutOfRange(hal_sim_dispatch_state* s, uint32_t binding,
                      uint64_t length, uint32_t fault) {
  if (length <= s->binding_lengths[binding]) return 0;
  s->fault = fault;
  s->fault_binding = binding;
  s->fault_offset = s->binding_lengths[binding];
  s->fault_length = length - s->binding_lengths[binding];
  return 1;
}

EXPORT void amdgpu_blit_fill(hal_sim_dispatch_state* s) {
  const uint64_t length = Length(s, 2);
  const uint32_t pattern = s->constants[0];
  uint8_t* dst = s->binding_data[0];
  if (OutOfRange(s, 0, length, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS)) return;
  const uint64_t per_group =
      (uint64_t)AMDGPU_BLIT_CHUNK * AMDGPU_BLIT_WORKGROUP;
  uint64_t begin = s->workgroup_begin * per_group;
  uint64_t end = s->workgroup_end * per_group;
  if (end > length) end = length;
  for (uint64_t k = begin; k < end; ++k) {
    dst[k] = (uint8_t)(pattern >> (8 * (k & 3)));
  }
}
EXPORT const hal_sim_kernel_info amdgpu_blit_fill__hal_sim_info = {
    HAL_SIM_KERNEL_ABI_VERSION, 1, 4, {AMDGPU_BLIT_WORKGROUP, 1, 1}};

EXPORT void amdgpu_blit_copy(hal_sim_dispatch_state* s) {
  const uint64_t length = Length(s, 0);
  const uint8_t* src = s->binding_data[0];
  uint8_t* dst = s->binding_data[1];
  if (OutOfRange(s, 0, length, HAL_SIM_FAULT_READ_OUT_OF_BOUNDS) ||
      OutOfRange(s, 1, length, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS)) {
    return;
  }
  const uint64_t per_group =
      (uint64_t)AMDGPU_BLIT_CHUNK * AMDGPU_BLIT_WORKGROUP;
  uint64_t begin = s->workgroup_begin * per_group;
  uint64_t end = s->workgroup_end * per_group;
  if (end > length) end = length;
  for (uint64_t k = begin; k < end; ++k) dst[k] = src[k];
}
EXPORT const hal_sim_kernel_info amdgpu_blit_copy__hal_sim_info = {
    HAL_SIM_KERNEL_ABI_VERSION, 2, 2, {AMDGPU_BLIT_WORKGROUP, 1, 1}};

#else /* amdgcn, OpenCL C */

static ulong chunk_begin(void) {
  return ((ulong)__builtin_amdgcn_workgroup_id_x() * AMDGPU_BLIT_WORKGROUP +
          __builtin_amdgcn_workitem_id_x()) *
         AMDGPU_BLIT_CHUNK;
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void amdgpu_blit_fill(
    __global uchar* dst, uint pattern, uint unused, uint length_lo,
    uint length_hi) {
  ulong length = ((ulong)length_hi << 32) | length_lo;
  ulong begin = chunk_begin();
  ulong end = begin + AMDGPU_BLIT_CHUNK;
  if (end > length) end = length;
  for (ulong k = begin; k < end; ++k)
    dst[k] = (uchar)(pattern >> (8 * (k & 3)));
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void amdgpu_blit_copy(
    __global const uchar* src, __global uchar* dst, uint length_lo,
    uint length_hi) {
  ulong length = ((ulong)length_hi << 32) | length_lo;
  ulong begin = chunk_begin();
  ulong end = begin + AMDGPU_BLIT_CHUNK;
  if (end > length) end = length;
  for (ulong k = begin; k < end; ++k) dst[k] = src[k];
}

#endif
