/* Test kernels, module 0 of test_kernels: element-wise kernels and ids.
 * Written once in the portable subset of hal_kernel.h; every binding is an
 * array of uint32. Reflection for each is in test_kernels.manifest. */
#include "hal/cts/kernels/hal_kernel.h"

/* b0[i] = c0 for i < c1. */
HAL_KERNEL(fill, 1, 2, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(1)) HAL_STORE(0, i, HAL_CONSTANT(0));
HAL_KERNEL_END

/* b1[i] = b0[i] for i < c0. b0 is read-only. */
HAL_KERNEL(copy, 2, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) HAL_STORE(1, i, HAL_LOAD(0, i));
HAL_KERNEL_END

/* b1[i] = |(int)b0[i]| for i < c0. b0 is read-only. */
HAL_KERNEL(abs_i32, 2, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) {
  int v = (int)HAL_LOAD(0, i);
  HAL_STORE(1, i, (uint)(v < 0 ? -v : v));
}
HAL_KERNEL_END

/* b1[i] = b0[i] * c0 + c1 for i < c2 (uint32 arithmetic, wrapping). */
HAL_KERNEL(scale_offset, 2, 3, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(2)) {
  HAL_STORE(1, i, HAL_LOAD(0, i) * HAL_CONSTANT(0) + HAL_CONSTANT(1));
}
HAL_KERNEL_END

/* b0[i] = i + c0 for i < c1. */
HAL_KERNEL(iota, 1, 2, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(1)) HAL_STORE(0, i, i + HAL_CONSTANT(0));
HAL_KERNEL_END

/* Each workgroup (x, y, z) of a c0 x c1 x ... grid writes its linear id + 1
 * at that index; only invocation (0, 0, 0) of the 2x2x1 workgroup writes. */
HAL_KERNEL(write_ids, 1, 2, 2, 2, 1)
if (HAL_LOCAL_ID_X == 0 && HAL_LOCAL_ID_Y == 0 && HAL_LOCAL_ID_Z == 0) {
  uint id = HAL_WORKGROUP_ID_X +
            HAL_CONSTANT(0) *
                (HAL_WORKGROUP_ID_Y + HAL_CONSTANT(1) * HAL_WORKGROUP_ID_Z);
  HAL_STORE(0, id, id + 1u);
}
HAL_KERNEL_END

/* Two entry points over the same data: b0[i] += 1 and b0[i] -= 1, i < c0. */
HAL_KERNEL(increment, 1, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) HAL_STORE(0, i, HAL_LOAD(0, i) + 1u);
HAL_KERNEL_END

HAL_KERNEL(decrement, 1, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) HAL_STORE(0, i, HAL_LOAD(0, i) - 1u);
HAL_KERNEL_END
