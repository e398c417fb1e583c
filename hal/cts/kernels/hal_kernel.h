/* The macro layer of the test kernels: one portable C subset, every target.
 *
 * A kernel is written once, per invocation:
 *
 *   HAL_KERNEL(fill, 1, 2, 64, 1, 1)   name, bindings, constants, workgroup
 *     uint i = HAL_GLOBAL_ID_X;
 *     if (i < HAL_CONSTANT(1)) HAL_STORE(0, i, HAL_CONSTANT(0));
 *   HAL_KERNEL_END
 *
 * Inside a kernel use only: the types uint and int; HAL_LOAD(b, i),
 * HAL_STORE(b, i, v), HAL_ATOMIC_ADD(b, i, v) on binding b (a literal 0..3)
 * at uint32 element i; HAL_CONSTANT(c) (a literal 0..3); the ids below;
 * plain C statements. No pointers, no shared memory, no barriers, no calls.
 *
 * Targets (chosen by the compiler invocation, see CMakeLists.txt):
 *   HAL_KERNEL_TARGET_NATIVE  host C for the simulator (sim/sim_kernel_abi.h);
 *                             every binding access is bounds-checked and a
 *                             fault is recorded instead of made
 *   __NVPTX__                 OpenCL C -> PTX (clang nvptx64-nvidia-nvcl)
 *   __AMDGCN__                OpenCL C -> HSACO (clang amdgcn-amd-amdhsa)
 *   __SPIR__                  OpenCL C -> SPIR-V (clang spir64 + llvm-spirv)
 *   HAL_KERNEL_TARGET_MSL     Metal Shading Language text (preprocessed)
 *
 * The GPU kernel ABI (docs/executables.md): parameters are the bindings in
 * order, as global uint pointers, then the constants in order, as uint
 * values. MSL: binding i is [[buffer(i)]]; constants are one
 * `constant uint*` at [[buffer(30)]].
 */
#ifndef HAL_CTS_KERNELS_HAL_KERNEL_H_
#define HAL_CTS_KERNELS_HAL_KERNEL_H_

#define HAL_CAT_(a, b) a##b
#define HAL_CAT(a, b) HAL_CAT_(a, b)

/* ------------------------------------------------------------------------ */
#if defined(HAL_KERNEL_TARGET_NATIVE)

#include "sim/sim_kernel_abi.h"

typedef unsigned int uint;

#define HAL_EXPORT __attribute__((visibility("default")))

static inline void hal_fault(hal_sim_dispatch_state* s, uint32_t kind,
                             uint32_t binding, uint64_t index, uint32_t lx,
                             uint32_t ly, uint32_t lz) {
  if (s->fault != HAL_SIM_FAULT_NONE) return; /* the first fault wins */
  s->fault = kind;
  s->fault_binding = binding;
  s->fault_offset = index > (~(uint64_t)0) / 4 ? ~(uint64_t)0 : index * 4;
  s->fault_length = 4;
  s->fault_local_id[0] = lx;
  s->fault_local_id[1] = ly;
  s->fault_local_id[2] = lz;
}

/* Returns the element's address, or 0 after recording a fault. */
static inline uint32_t* hal_element(hal_sim_dispatch_state* s, uint32_t b,
                                    uint64_t i, int write, uint32_t lx,
                                    uint32_t ly, uint32_t lz) {
  if (b >= s->binding_count) {
    hal_fault(s, HAL_SIM_FAULT_NO_SUCH_BINDING, b, i, lx, ly, lz);
    return 0;
  }
  if (i >= s->binding_lengths[b] / 4) {
    hal_fault(s,
              write ? HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS
                    : HAL_SIM_FAULT_READ_OUT_OF_BOUNDS,
              b, i, lx, ly, lz);
    return 0;
  }
  if (write && (s->binding_flags[b] & HAL_SIM_BINDING_READ_ONLY)) {
    hal_fault(s, HAL_SIM_FAULT_WRITE_READ_ONLY, b, i, lx, ly, lz);
    return 0;
  }
  uint32_t* p = (uint32_t*)(s->binding_data[b] + i * 4);
  if (((uintptr_t)p & 3) != 0) {
    hal_fault(s, HAL_SIM_FAULT_MISALIGNED, b, i, lx, ly, lz);
    return 0;
  }
  return p;
}

static inline uint hal_load(hal_sim_dispatch_state* s, uint32_t b, uint64_t i,
                            uint32_t lx, uint32_t ly, uint32_t lz) {
  uint32_t* p = hal_element(s, b, i, 0, lx, ly, lz);
  return p ? *p : 0;
}
static inline void hal_store(hal_sim_dispatch_state* s, uint32_t b,
                             uint64_t i, uint v, uint32_t lx, uint32_t ly,
                             uint32_t lz) {
  uint32_t* p = hal_element(s, b, i, 1, lx, ly, lz);
  if (p) *p = v;
}
static inline uint hal_atomic_add(hal_sim_dispatch_state* s, uint32_t b,
                                  uint64_t i, uint v, uint32_t lx,
                                  uint32_t ly, uint32_t lz) {
  uint32_t* p = hal_element(s, b, i, 1, lx, ly, lz);
  return p ? __atomic_fetch_add(p, v, __ATOMIC_RELAXED) : 0;
}

/* Index arguments convert to uint64 first, so a negative int is a huge
 * (out-of-bounds) index rather than a wrapped small one. */
#define HAL_LOAD(b, i) \
  hal_load(hal_s, (b), (uint64_t)(int64_t)(i), hal_lx, hal_ly, hal_lz)
#define HAL_STORE(b, i, v) \
  hal_store(hal_s, (b), (uint64_t)(int64_t)(i), (v), hal_lx, hal_ly, hal_lz)
#define HAL_ATOMIC_ADD(b, i, v) \
  hal_atomic_add(hal_s, (b), (uint64_t)(int64_t)(i), (v), hal_lx, hal_ly, hal_lz)
#define HAL_CONSTANT(c) (hal_s->constants[(c)])
#define HAL_LOCAL_ID_X hal_lx
#define HAL_LOCAL_ID_Y hal_ly
#define HAL_LOCAL_ID_Z hal_lz
#define HAL_WORKGROUP_ID_X (hal_s->workgroup_id[0])
#define HAL_WORKGROUP_ID_Y (hal_s->workgroup_id[1])
#define HAL_WORKGROUP_ID_Z (hal_s->workgroup_id[2])

/* Exports `name` (one whole workgroup per call: the invocations run one
 * after another) and `name__hal_sim_info`; the body is a static function. */
#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                                 \
  static void name##__body(hal_sim_dispatch_state* hal_s, uint32_t hal_lx,  \
                           uint32_t hal_ly, uint32_t hal_lz);                \
  HAL_EXPORT const hal_sim_kernel_info name##__hal_sim_info = {             \
      HAL_SIM_KERNEL_ABI_VERSION, nb, nc, {wx, wy, wz}};                     \
  HAL_EXPORT void name(hal_sim_dispatch_state* hal_s) {                      \
    for (uint32_t z = 0; z < (wz); ++z)                                      \
      for (uint32_t y = 0; y < (wy); ++y)                                    \
        for (uint32_t x = 0; x < (wx); ++x) name##__body(hal_s, x, y, z);    \
  }                                                                          \
  static void name##__body(hal_sim_dispatch_state* hal_s, uint32_t hal_lx,  \
                           uint32_t hal_ly, uint32_t hal_lz) {               \
    const uint hal_wsx = (wx), hal_wsy = (wy), hal_wsz = (wz);               \
    (void)hal_wsx; (void)hal_wsy; (void)hal_wsz;
#define HAL_KERNEL_END }

/* ------------------------------------------------------------------------ */
#elif defined(HAL_KERNEL_TARGET_MSL)

#define HAL_BINDINGS_0
#define HAL_BINDINGS_1 device uint* hal_b0 [[buffer(0)]],
#define HAL_BINDINGS_2 HAL_BINDINGS_1 device uint* hal_b1 [[buffer(1)]],
#define HAL_BINDINGS_3 HAL_BINDINGS_2 device uint* hal_b2 [[buffer(2)]],
#define HAL_BINDINGS_4 HAL_BINDINGS_3 device uint* hal_b3 [[buffer(3)]],
#define HAL_CONSTANTS_0
#define HAL_CONSTANTS_1 constant uint* hal_constants [[buffer(30)]],
#define HAL_CONSTANTS_2 HAL_CONSTANTS_1
#define HAL_CONSTANTS_3 HAL_CONSTANTS_1
#define HAL_CONSTANTS_4 HAL_CONSTANTS_1

#define HAL_LOAD(b, i) (HAL_CAT(hal_b, b)[(i)])
#define HAL_STORE(b, i, v) (HAL_CAT(hal_b, b)[(i)] = (v))
#define HAL_ATOMIC_ADD(b, i, v)                                          \
  atomic_fetch_add_explicit((device atomic_uint*)&HAL_CAT(hal_b, b)[(i)], \
                            (v), memory_order_relaxed)
#define HAL_CONSTANT(c) (hal_constants[(c)])
#define HAL_LOCAL_ID_X hal_lid.x
#define HAL_LOCAL_ID_Y hal_lid.y
#define HAL_LOCAL_ID_Z hal_lid.z
#define HAL_WORKGROUP_ID_X hal_wgid.x
#define HAL_WORKGROUP_ID_Y hal_wgid.y
#define HAL_WORKGROUP_ID_Z hal_wgid.z

#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                            \
  kernel void name(HAL_BINDINGS_##nb HAL_CONSTANTS_##nc                  \
                   uint3 hal_wgid [[threadgroup_position_in_grid]],      \
                   uint3 hal_lid [[thread_position_in_threadgroup]]) {   \
    const uint hal_wsx = (wx), hal_wsy = (wy), hal_wsz = (wz);
#define HAL_KERNEL_END }

/* ------------------------------------------------------------------------ */
#elif defined(__OPENCL_C_VERSION__)

#if defined(__NVPTX__)
#define HAL_LOCAL_ID_X ((uint)__nvvm_read_ptx_sreg_tid_x())
#define HAL_LOCAL_ID_Y ((uint)__nvvm_read_ptx_sreg_tid_y())
#define HAL_LOCAL_ID_Z ((uint)__nvvm_read_ptx_sreg_tid_z())
#define HAL_WORKGROUP_ID_X ((uint)__nvvm_read_ptx_sreg_ctaid_x())
#define HAL_WORKGROUP_ID_Y ((uint)__nvvm_read_ptx_sreg_ctaid_y())
#define HAL_WORKGROUP_ID_Z ((uint)__nvvm_read_ptx_sreg_ctaid_z())
/* clang 14 lowers __atomic_* on nvptx to a libcall; use the NVVM builtin. */
#define HAL_ATOMIC_ADD(b, i, v) \
  ((uint)__nvvm_atom_add_gen_i((int*)&HAL_CAT(hal_b, b)[(i)], (int)(v)))
#elif defined(__AMDGCN__)
/* get_local_id() etc. need the ROCm device libraries; the builtins do not. */
#define HAL_LOCAL_ID_X __builtin_amdgcn_workitem_id_x()
#define HAL_LOCAL_ID_Y __builtin_amdgcn_workitem_id_y()
#define HAL_LOCAL_ID_Z __builtin_amdgcn_workitem_id_z()
#define HAL_WORKGROUP_ID_X __builtin_amdgcn_workgroup_id_x()
#define HAL_WORKGROUP_ID_Y __builtin_amdgcn_workgroup_id_y()
#define HAL_WORKGROUP_ID_Z __builtin_amdgcn_workgroup_id_z()
#define HAL_ATOMIC_ADD(b, i, v) \
  __atomic_fetch_add(&HAL_CAT(hal_b, b)[(i)], (v), __ATOMIC_RELAXED)
#elif defined(__SPIR__)
/* OpenCL builtins; llvm-spirv turns them into SPIR-V builtin variables and
 * OpAtomicIAdd. Needs -Xclang -finclude-default-header. */
#define HAL_LOCAL_ID_X ((uint)get_local_id(0))
#define HAL_LOCAL_ID_Y ((uint)get_local_id(1))
#define HAL_LOCAL_ID_Z ((uint)get_local_id(2))
#define HAL_WORKGROUP_ID_X ((uint)get_group_id(0))
#define HAL_WORKGROUP_ID_Y ((uint)get_group_id(1))
#define HAL_WORKGROUP_ID_Z ((uint)get_group_id(2))
#define HAL_ATOMIC_ADD(b, i, v) atomic_add(&HAL_CAT(hal_b, b)[(i)], (v))
#else
#error "hal_kernel.h: unknown OpenCL target"
#endif

#define HAL_BINDINGS_1 __global uint* hal_b0
#define HAL_BINDINGS_2 HAL_BINDINGS_1, __global uint* hal_b1
#define HAL_BINDINGS_3 HAL_BINDINGS_2, __global uint* hal_b2
#define HAL_BINDINGS_4 HAL_BINDINGS_3, __global uint* hal_b3
#define HAL_CONSTANTS_0
#define HAL_CONSTANTS_1 , uint hal_c0
#define HAL_CONSTANTS_2 HAL_CONSTANTS_1, uint hal_c1
#define HAL_CONSTANTS_3 HAL_CONSTANTS_2, uint hal_c2
#define HAL_CONSTANTS_4 HAL_CONSTANTS_3, uint hal_c3

#define HAL_LOAD(b, i) (HAL_CAT(hal_b, b)[(i)])
#define HAL_STORE(b, i, v) (HAL_CAT(hal_b, b)[(i)] = (v))
#define HAL_CONSTANT(c) HAL_CAT(hal_c, c)

#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                         \
  __kernel __attribute__((reqd_work_group_size(wx, wy, wz))) void name( \
      HAL_BINDINGS_##nb HAL_CONSTANTS_##nc) {                         \
    const uint hal_wsx = (wx), hal_wsy = (wy), hal_wsz = (wz);
#define HAL_KERNEL_END }

#else
#error "hal_kernel.h: define HAL_KERNEL_TARGET_NATIVE or HAL_KERNEL_TARGET_MSL, or compile as OpenCL C"
#endif

/* Derived ids, the same everywhere. */
#define HAL_WORKGROUP_SIZE_X hal_wsx
#define HAL_WORKGROUP_SIZE_Y hal_wsy
#define HAL_WORKGROUP_SIZE_Z hal_wsz
#define HAL_GLOBAL_ID_X (HAL_WORKGROUP_ID_X * hal_wsx + HAL_LOCAL_ID_X)

#endif /* HAL_CTS_KERNELS_HAL_KERNEL_H_ */
