/* Test kernels, module 1 of test_kernels: indirect counts, atomics, a long
 * runner, and kernels that break the rules on purpose (for the simulator's
 * checks). Reflection for each is in test_kernels.manifest. */
#include "hal/cts/kernels/hal_kernel.h"

/* Writes an indirect workgroup count for `fill`-style kernels of 64
 * invocations: b0[0..2] = {ceil(c0 / 64), c1, c2}. One invocation. */
HAL_KERNEL(produce_counts, 1, 3, 1, 1, 1)
HAL_STORE(0, 0, (HAL_CONSTANT(0) + 63u) / 64u);
HAL_STORE(0, 1, HAL_CONSTANT(1));
HAL_STORE(0, 2, HAL_CONSTANT(2));
HAL_KERNEL_END

/* Every invocation adds 1 to b0[0] and c0 to b0[1], atomically. */
HAL_KERNEL(atomic_count, 1, 1, 64, 1, 1)
HAL_ATOMIC_ADD(0, 0, 1u);
HAL_ATOMIC_ADD(0, 1, HAL_CONSTANT(0));
HAL_KERNEL_END

/* Runs c0 steps of an LCG per invocation (bounded: it always ends), then
 * writes the state to b0[global id] for ids below c1. For timeout and
 * cancellation tests; the result is checkable (see the test). */
HAL_KERNEL(long_running, 1, 2, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
uint x = i;
for (uint k = 0; k < HAL_CONSTANT(0); ++k) x = x * 1664525u + 1013904223u;
if (i < HAL_CONSTANT(1)) HAL_STORE(0, i, x);
HAL_KERNEL_END

/* Stores 1 at element c0 of b0 with no bounds check: out of bounds when c0
 * is past the binding (undefined on a GPU; reported by the simulator). */
HAL_KERNEL(store_at, 1, 1, 1, 1, 1)
HAL_STORE(0, HAL_CONSTANT(0), 1u);
HAL_KERNEL_END

/* Reads element c0 of b0 (declared read-only) into b1[0]. */
HAL_KERNEL(load_at, 2, 1, 1, 1, 1)
HAL_STORE(1, 0, HAL_LOAD(0, HAL_CONSTANT(0)));
HAL_KERNEL_END

/* Writes b0[0] although the manifest declares b0 read-only. */
HAL_KERNEL(store_read_only, 1, 0, 1, 1, 1)
HAL_STORE(0, 0, 7u);
HAL_KERNEL_END

/* b3[i] = b0[i] + b1[i] + b2[i] for i < c0 (wrapping). b0..b2 are read-only.
 * The 4-binding kernel (the recording benchmark dispatches it). */
HAL_KERNEL(sum3, 4, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) {
  HAL_STORE(3, i, HAL_LOAD(0, i) + HAL_LOAD(1, i) + HAL_LOAD(2, i));
}
HAL_KERNEL_END
