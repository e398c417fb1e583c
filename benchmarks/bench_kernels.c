/* The simulator's `copy` test kernel (hal/cts/kernels/basic_kernels.c),
 * compiled into bench_dispatch through the same checked native macro layer
 * and flags, so that it can be called directly, workgroup by workgroup,
 * without the HAL: the difference between this and the plain loop is the
 * cost of the kernel's bounds checks; the difference between this and a
 * simulator dispatch is the dispatch machinery. Keep the body identical to
 * the test kernel's. */
#include "hal/cts/kernels/hal_kernel.h"

HAL_KERNEL(hal_bench_copy, 2, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) HAL_STORE(1, i, HAL_LOAD(0, i));
HAL_KERNEL_END

/* The same range of workgroups without the macro layer: no bounds,
 * read-only or alignment checks, binding pointers read once. What an
 * unchecked kernel could reach with the simulator's kernel ABI. */
void hal_bench_copy_unchecked(hal_sim_dispatch_state* s) {
  const uint32_t* src = (const uint32_t*)s->binding_data[0];
  uint32_t* dst = (uint32_t*)s->binding_data[1];
  const uint32_t n = s->constants[0];
  for (uint64_t w = s->workgroup_begin; w < s->workgroup_end; ++w) {
    const uint32_t first = (uint32_t)w * 64u;
    for (uint32_t x = 0; x < 64u; ++x) {
      uint32_t i = first + x;
      if (i < n) dst[i] = src[i];
    }
  }
}
