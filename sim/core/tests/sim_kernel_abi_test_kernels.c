/* Kernels for sim_kernel_abi_test.cc, compiled into the test with the
 * native macro layer of hal/cts/kernels/hal_kernel.h and the flags of the
 * simulator's kernels, and called through the kernel ABI directly. */
#include "hal/cts/kernels/hal_kernel.h"

/* 2x3x2 workgroups (the nested invocation loop): every invocation writes
 * its ids at its linear invocation index over a c0 x c1 x ... grid:
 * b0[2 * n] = workgroup x + 100 * y + 10000 * z + 1,
 * b0[2 * n + 1] = local x + 10 * y + 100 * z. */
HAL_KERNEL(abi_ids_3d, 1, 2, 2, 3, 2)
uint wg = HAL_WORKGROUP_ID_X +
          HAL_CONSTANT(0) *
              (HAL_WORKGROUP_ID_Y + HAL_CONSTANT(1) * HAL_WORKGROUP_ID_Z);
uint n =
    wg * 12u + HAL_LOCAL_ID_X + 2u * (HAL_LOCAL_ID_Y + 3u * HAL_LOCAL_ID_Z);
HAL_STORE(0, 2u * n,
          HAL_WORKGROUP_ID_X + 100u * HAL_WORKGROUP_ID_Y +
              10000u * HAL_WORKGROUP_ID_Z + 1u);
HAL_STORE(0, 2u * n + 1u,
          HAL_LOCAL_ID_X + 10u * HAL_LOCAL_ID_Y + 100u * HAL_LOCAL_ID_Z);
HAL_KERNEL_END

/* 64x1x1 (the flat loop): the same over a c0 x c1 x ... grid of 64-wide
 * workgroups: b0[n] = workgroup x * 1000 + local x + 1 + 1000000 * (y +
 * 10 * z), n = the linear invocation index. */
HAL_KERNEL(abi_ids_flat, 1, 2, 64, 1, 1)
uint row = HAL_WORKGROUP_ID_Y + HAL_CONSTANT(1) * HAL_WORKGROUP_ID_Z;
uint n = row * HAL_CONSTANT(0) * 64u + HAL_GLOBAL_ID_X;
HAL_STORE(0, n,
          HAL_WORKGROUP_ID_X * 1000u + HAL_LOCAL_ID_X + 1u +
              1000000u * (HAL_WORKGROUP_ID_Y + 10u * HAL_WORKGROUP_ID_Z));
HAL_KERNEL_END

/* b1[i] = (i < c0 ? b0[i] : 7) + 1 for every global id i, unchecked by the
 * kernel: the macro layer decides. */
HAL_KERNEL(abi_copy_plus, 2, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
uint v = i < HAL_CONSTANT(0) ? HAL_LOAD(0, i) : 7u;
HAL_STORE(1, i, v + 1u);
HAL_KERNEL_END

/* Every third invocation (i % 3 == 2) stores c0 elements further on (out of
 * bounds when c0 is large); the others store i + 1 at i. */
HAL_KERNEL(abi_gaps, 1, 1, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
HAL_STORE(0, i % 3u == 2u ? i + HAL_CONSTANT(0) : i, i + 1u);
HAL_KERNEL_END

/* b0[global id] += 1, atomically. */
HAL_KERNEL(abi_atomic, 1, 0, 64, 1, 1)
HAL_ATOMIC_ADD(0, HAL_GLOBAL_ID_X, 1u);
HAL_KERNEL_END

/* Stores 5 at element 0 of binding 1 (a binding the state may lack). */
HAL_KERNEL(abi_store_b1, 2, 0, 1, 1, 1)
HAL_STORE(1, 0, 5u);
HAL_KERNEL_END

/* Guards against constants on both sides (the flat loop specializes its
 * check-free part for which constants the global id is below): for global
 * id i, nothing below c0; b1[i] = b0[i] + 1 below c1; 2 * i below c2;
 * c2 + 5 from c2 on. */
HAL_KERNEL(abi_windows, 2, 3, 64, 1, 1)
uint i = HAL_GLOBAL_ID_X;
if (i < HAL_CONSTANT(0)) return;
if (i < HAL_CONSTANT(1)) {
  HAL_STORE(1, i, HAL_LOAD(0, i) + 1u);
} else if (i < HAL_CONSTANT(2)) {
  HAL_STORE(1, i, 2u * i);
} else {
  HAL_STORE(1, i, HAL_CONSTANT(2) + 5u);
}
HAL_KERNEL_END
