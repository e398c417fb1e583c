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
 *   HAL_KERNEL_TARGET_NATIVE  host C for the simulator
 * (sim/core/sim_kernel_abi.h); every binding access is bounds-checked and a
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

#include "sim/core/sim_kernel_abi.h"

typedef unsigned int uint;

#define HAL_EXPORT __attribute__((visibility("default")))
/* On x86-64 every kernel entry is built twice, for AVX-512F and for
 * baseline x86-64, and the loader picks one for the host (an IFUNC; its
 * resolver needs libgcc, so the module links it: see CMakeLists.txt).
 * The flat loop (below) folds a kernel's guard against a constant (`if (i <
 * n)`), and both entries vectorize it with plain loads and stores; where a
 * kernel's stores stay conditional, AVX-512's masked loads and stores still
 * let the compiler vectorize it (fast on Intel; on AMD Zen 4 masked stores
 * are slow, and such a loop runs slower than the scalar one). The checks
 * and faults are the same in both. Not AVX2: its masked stores (vpmaskmovd)
 * are microcoded on AMD hosts, and the copy kernel ran 2.5x slower than the
 * scalar entry there. Define
 * HAL_KERNEL_NO_CLONES to build one baseline entry. Clang (14) refuses
 * target_clones together with the visibility attribute, so a Clang build
 * (the asan and tsan presets) has the baseline entry only. */
#if defined(__x86_64__) && !defined(__clang__) && !defined(HAL_KERNEL_NO_CLONES)
#define HAL_ENTRY_CLONES __attribute__((target_clones("avx512f", "default")))
#else
#define HAL_ENTRY_CLONES
#endif
#define HAL_INLINE static inline __attribute__((always_inline))
#define HAL_COLD static __attribute__((noinline, cold))

/* What a kernel call reads from the state once, before its first workgroup.
 * The fast check of every access is one compare against one local, `lim`:
 * the smallest element count (binding length / 4) of the kernel's bindings,
 * 0 if one of them is missing or not 4-byte aligned. An index below it is
 * in bounds of every binding. (Where the loop knows that the global id is
 * below `lim`, an access at the global id needs no compare at all: see
 * HAL_FLAT_CASE_.) A store also needs `w[b]` (not read-only), a per-call
 * constant that the flat loop turns into a compile-time one (one loop per
 * writable-binding mask), so a load and a store at the same index share one
 * compare. Anything
 * else goes to the slow path, which repeats the full checks in their old
 * order and either makes the access (in bounds of a longer binding) or
 * records the fault. `rd[b]` and `w[b]` are 0 for b >= the kernel's binding
 * count (compile-time). The locals live in the kernel's own frame and are
 * never passed to the slow path, so the compiler knows that a store through
 * a binding cannot change them: nothing is reloaded after a store. */
typedef struct hal_locals {
  uint32_t* p[4];
  uint64_t lim;
  uint32_t rd[4];
  uint32_t w[4];
  uint32_t cst[4];
  uint32_t wg[3]; /* wg[0] is unused: the x id is derived from hal_g */
} hal_locals;

/* Unrolled by hand (no loops, no variable indices) so that the compiler
 * keeps every field in a register. */
#define HAL_INIT_BINDING_(k, s, nb, b)                                    \
  do {                                                                    \
    (k)->p[b] = 0;                                                        \
    (k)->rd[b] = (k)->w[b] = 0;                                           \
    if ((b) < (nb)) {                                                     \
      uint64_t n = 0;                                                     \
      (k)->rd[b] = 1;                                                     \
      if ((b) < (s)->binding_count) {                                     \
        uint8_t* base = (s)->binding_data[b];                             \
        (k)->p[b] = (uint32_t*)base;                                      \
        if (((uintptr_t)base & 3) == 0) n = (s)->binding_lengths[b] / 4;  \
        (k)->w[b] = !((s)->binding_flags[b] & HAL_SIM_BINDING_READ_ONLY); \
      }                                                                   \
      if (n < (k)->lim) (k)->lim = n;                                     \
    }                                                                     \
  } while (0)
#define HAL_INIT_CONSTANT_(k, s, nc, c) \
  (k)->cst[c] = (c) < (nc) && (c) < (s)->constant_count ? (s)->constants[c] : 0

HAL_INLINE void hal_locals_init(hal_locals* k, const hal_sim_dispatch_state* s,
                                uint32_t nb, uint32_t nc) {
  k->lim = nb ? ~(uint64_t)0 : 0;
  HAL_INIT_BINDING_(k, s, nb, 0);
  HAL_INIT_BINDING_(k, s, nb, 1);
  HAL_INIT_BINDING_(k, s, nb, 2);
  HAL_INIT_BINDING_(k, s, nb, 3);
  HAL_INIT_CONSTANT_(k, s, nc, 0);
  HAL_INIT_CONSTANT_(k, s, nc, 1);
  HAL_INIT_CONSTANT_(k, s, nc, 2);
  HAL_INIT_CONSTANT_(k, s, nc, 3);
}

/* The slow path: the full checks, in this order (the first that fails is
 * the fault): binding exists, index in bounds, not a store to a read-only
 * binding, aligned. Records the first fault of the call in the state. */
HAL_COLD uint32_t* hal_element(hal_sim_dispatch_state* s, uint32_t b,
                               uint64_t i, int write, uint64_t g, uint32_t wsx,
                               uint32_t ly, uint32_t lz, uint32_t wgy,
                               uint32_t wgz) {
  uint32_t kind = HAL_SIM_FAULT_NONE;
  uint32_t* p = 0;
  if (b >= s->binding_count) {
    kind = HAL_SIM_FAULT_NO_SUCH_BINDING;
  } else if (i >= s->binding_lengths[b] / 4) {
    kind = write ? HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS
                 : HAL_SIM_FAULT_READ_OUT_OF_BOUNDS;
  } else if (write && (s->binding_flags[b] & HAL_SIM_BINDING_READ_ONLY)) {
    kind = HAL_SIM_FAULT_WRITE_READ_ONLY;
  } else {
    p = (uint32_t*)(s->binding_data[b] + i * 4);
    if (((uintptr_t)p & 3) != 0) {
      kind = HAL_SIM_FAULT_MISALIGNED;
      p = 0;
    }
  }
  if (kind == HAL_SIM_FAULT_NONE || s->fault != HAL_SIM_FAULT_NONE) return p;
  /* The first fault of the call wins: workgroups run in increasing linear
   * order, invocations in x, y, z order. */
  s->fault = kind;
  s->fault_binding = b;
  s->fault_offset = i > (~(uint64_t)0) / 4 ? ~(uint64_t)0 : i * 4;
  s->fault_length = 4;
  s->fault_local_id[0] = (uint32_t)(g % wsx);
  s->fault_local_id[1] = ly;
  s->fault_local_id[2] = lz;
  s->fault_workgroup_id[0] = (uint32_t)(g / wsx);
  s->fault_workgroup_id[1] = wgy;
  s->fault_workgroup_id[2] = wgz;
  return 0;
}

HAL_COLD uint hal_load_slow(hal_sim_dispatch_state* s, uint32_t b, uint64_t i,
                            uint64_t g, uint32_t wsx, uint32_t ly, uint32_t lz,
                            uint32_t wgy, uint32_t wgz) {
  uint32_t* p = hal_element(s, b, i, 0, g, wsx, ly, lz, wgy, wgz);
  return p ? *p : 0;
}
HAL_COLD void hal_store_slow(hal_sim_dispatch_state* s, uint32_t b, uint64_t i,
                             uint v, uint64_t g, uint32_t wsx, uint32_t ly,
                             uint32_t lz, uint32_t wgy, uint32_t wgz) {
  uint32_t* p = hal_element(s, b, i, 1, g, wsx, ly, lz, wgy, wgz);
  if (p) *p = v;
}
HAL_COLD uint hal_atomic_add_slow(hal_sim_dispatch_state* s, uint32_t b,
                                  uint64_t i, uint v, uint64_t g, uint32_t wsx,
                                  uint32_t ly, uint32_t lz, uint32_t wgy,
                                  uint32_t wgz) {
  uint32_t* p = hal_element(s, b, i, 1, g, wsx, ly, lz, wgy, wgz);
  return p ? __atomic_fetch_add(p, v, __ATOMIC_RELAXED) : 0;
}

/* gok: the caller's loop guarantees that index g is below lim (a
 * compile-time 0 or 1), so `i == g` needs no further check. */
#define HAL_FAST_(k, arr, b, i)                               \
  __builtin_expect((uint32_t)(b) < 4u && (k)->arr[(b)&3] &&   \
                       ((gok && (i) == g) || (i) < (k)->lim), \
                   1)

HAL_INLINE uint hal_load(const hal_locals* k, hal_sim_dispatch_state* s,
                         uint32_t b, uint64_t i, uint64_t g, uint32_t gok,
                         uint32_t wsx, uint32_t ly, uint32_t lz) {
  if (HAL_FAST_(k, rd, b, i)) return k->p[b & 3][i];
  return hal_load_slow(s, b, i, g, wsx, ly, lz, k->wg[1], k->wg[2]);
}
HAL_INLINE void hal_store(const hal_locals* k, hal_sim_dispatch_state* s,
                          uint32_t b, uint64_t i, uint v, uint64_t g,
                          uint32_t gok, uint32_t wsx, uint32_t ly,
                          uint32_t lz) {
  if (HAL_FAST_(k, w, b, i))
    k->p[b & 3][i] = v;
  else
    hal_store_slow(s, b, i, v, g, wsx, ly, lz, k->wg[1], k->wg[2]);
}
HAL_INLINE uint hal_atomic_add(const hal_locals* k, hal_sim_dispatch_state* s,
                               uint32_t b, uint64_t i, uint v, uint64_t g,
                               uint32_t gok, uint32_t wsx, uint32_t ly,
                               uint32_t lz) {
  if (HAL_FAST_(k, w, b, i))
    return __atomic_fetch_add(&k->p[b & 3][i], v, __ATOMIC_RELAXED);
  return hal_atomic_add_slow(s, b, i, v, g, wsx, ly, lz, k->wg[1], k->wg[2]);
}

/* Index arguments convert to uint64 first, so a negative int is a huge
 * (out-of-bounds) index rather than a wrapped small one. */
#define HAL_LOAD(b, i)                                                         \
  hal_load(hal_k, hal_s, (b), (uint64_t)(int64_t)(i), hal_g, hal_gok, hal_wsx, \
           hal_ly, hal_lz)
#define HAL_STORE(b, i, v)                                                  \
  hal_store(hal_k, hal_s, (b), (uint64_t)(int64_t)(i), (v), hal_g, hal_gok, \
            hal_wsx, hal_ly, hal_lz)
#define HAL_ATOMIC_ADD(b, i, v)                                         \
  hal_atomic_add(hal_k, hal_s, (b), (uint64_t)(int64_t)(i), (v), hal_g, \
                 hal_gok, hal_wsx, hal_ly, hal_lz)
#define HAL_CONSTANT(c) (hal_k->cst[(c)&3])
/* An invocation is (hal_g, hal_ly, hal_lz, wg[1], wg[2]) where hal_g =
 * workgroup x id * workgroup size x + local x id, exactly (uint64): the x
 * ids are derived from it only where used, and the fault path derives them
 * itself, so the hot loop carries one counter. */
#define HAL_LOCAL_ID_X ((uint32_t)(hal_g % hal_wsx))
#define HAL_LOCAL_ID_Y hal_ly
#define HAL_LOCAL_ID_Z hal_lz
#define HAL_WORKGROUP_ID_X ((uint32_t)(hal_g / hal_wsx))
#define HAL_GLOBAL_ID_X ((uint32_t)hal_g)
#define HAL_WORKGROUP_ID_Y (hal_k->wg[1])
#define HAL_WORKGROUP_ID_Z (hal_k->wg[2])

/* The 1-D loop of HAL_KERNEL for one set of writable bindings (mask m, a
 * constant here): with w[] known, a store's check is the same compare as a
 * load's at that index, and the compiler makes it once. */
#define HAL_FLAT_CASE_(name, wx, nc, m)                                 \
  case m: {                                                             \
    hal_locals k2 = k;                                                  \
    k2.w[0] = (m)&1;                                                    \
    k2.w[1] = ((m) >> 1) & 1;                                           \
    k2.w[2] = ((m) >> 2) & 1;                                           \
    k2.w[3] = ((m) >> 3) & 1;                                           \
    uint32_t g = x0 * (uint32_t)(wx);                                   \
    /* Global ids below ghi are below lim: there, an access at the      \
     * global id is in bounds of every binding without a compare. */    \
    const uint32_t ghi = (uint32_t)(k2.lim < g1 ? k2.lim : g1);         \
    HAL_FLAT_FAST_(name, nc)                                            \
    for (; g < (uint32_t)g1; ++g) name##__body(&k2, hal_s, g, 0, 0, 0); \
    break;                                                              \
  }

/* The check-free part [g, ghi) of a flat loop. `r` has bit c set when the
 * global id g is below constant c; the loop is specialized for it and leaves
 * as soon as g reaches one of those constants, then the next round
 * continues with the new pattern (bits only clear as g grows, so there are
 * at most nc + 1 rounds). Inside the loop the compiler therefore knows
 * g < constant c for every bit of r, so a kernel's own guard such as
 * `if (i < HAL_CONSTANT(0))` folds away: the loop has no per-invocation
 * branch and vectorizes with plain loads and stores, as a loop without the
 * guard would. (Without it every store is conditional: scalar code, or
 * masked vector stores, which AMD Zen 4 executes far more slowly than plain
 * ones.) The kernel runs exactly as before: same invocations, same order,
 * same checks. Cost: one loop per writable mask and pattern, at most
 * 2^nb x 2^nc copies of the body (compile-time pruned; sum3: 16 x 2).
 * (Hand-formatted: clang-format mangles macros that expand to cases.) */
/* clang-format off */
#define HAL_REL_BIT_(nc, c) \
  if ((c) < (nc)) rel |= (uint32_t)(g < k2.cst[c]) << (c);
#define HAL_REL_STOP_(nc, r, c) \
  ((c) < (nc) && (((r) >> (c)) & 1) && g >= k2.cst[c])
#define HAL_REL_CASE_(name, nc, r)                                   \
  case r:                                                            \
    if ((r) >> (nc)) __builtin_unreachable();                        \
    for (; g < ghi; ++g) {                                           \
      if (HAL_REL_STOP_(nc, r, 0) || HAL_REL_STOP_(nc, r, 1) ||      \
          HAL_REL_STOP_(nc, r, 2) || HAL_REL_STOP_(nc, r, 3))        \
        break;                                                       \
      name##__body(&k2, hal_s, g, 1, 0, 0);                          \
    }                                                                \
    break;
#define HAL_FLAT_FAST_(name, nc)                                       \
  while (g < ghi) {                                                    \
    uint32_t rel = 0;                                                  \
    HAL_REL_BIT_(nc, 0) HAL_REL_BIT_(nc, 1) HAL_REL_BIT_(nc, 2)        \
    HAL_REL_BIT_(nc, 3)                                                \
    switch (rel) {                                                     \
      HAL_REL_CASE_(name, nc, 0) HAL_REL_CASE_(name, nc, 1)            \
      HAL_REL_CASE_(name, nc, 2) HAL_REL_CASE_(name, nc, 3)            \
      HAL_REL_CASE_(name, nc, 4) HAL_REL_CASE_(name, nc, 5)            \
      HAL_REL_CASE_(name, nc, 6) HAL_REL_CASE_(name, nc, 7)            \
      HAL_REL_CASE_(name, nc, 8) HAL_REL_CASE_(name, nc, 9)            \
      HAL_REL_CASE_(name, nc, 10) HAL_REL_CASE_(name, nc, 11)          \
      HAL_REL_CASE_(name, nc, 12) HAL_REL_CASE_(name, nc, 13)          \
      HAL_REL_CASE_(name, nc, 14) HAL_REL_CASE_(name, nc, 15)          \
      default:                                                         \
        __builtin_unreachable();                                       \
    }                                                                  \
  }

/* clang-format on */

/* Exports `name`, which runs the workgroups [workgroup_begin, workgroup_end)
 * of the state in linear order (x fastest), each workgroup's invocations one
 * after another in x, y, z order, and `name__hal_sim_info`. The body is an
 * always-inlined static function (a `return` ends one invocation), so the
 * invocation loop is compiled around it with the locals in registers. For a
 * workgroup of wx x 1 x 1 (compile-time), the invocations of consecutive
 * workgroups in one row of the grid are one loop over the global x id (the
 * same order), so a 64-invocation loop does not end every 64 elements. */
#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                                  \
  HAL_INLINE void name##__body(                                               \
      const hal_locals* hal_k, hal_sim_dispatch_state* hal_s, uint64_t hal_g, \
      uint32_t hal_gok, uint32_t hal_ly, uint32_t hal_lz);                    \
  HAL_EXPORT const hal_sim_kernel_info name##__hal_sim_info = {               \
      HAL_SIM_KERNEL_ABI_VERSION, nb, nc, {wx, wy, wz}};                      \
  HAL_EXPORT HAL_ENTRY_CLONES void name(hal_sim_dispatch_state* hal_s) {      \
    uint64_t w = hal_s->workgroup_begin;                                      \
    const uint64_t end = hal_s->workgroup_end;                                \
    const uint32_t cx = hal_s->workgroup_count[0];                            \
    const uint32_t cy = hal_s->workgroup_count[1];                            \
    hal_locals k;                                                             \
    uint32_t x0;                                                              \
    if (w >= end || cx == 0 || cy == 0) return;                               \
    hal_locals_init(&k, hal_s, (nb), (nc));                                   \
    x0 = (uint32_t)(w % cx);                                                  \
    k.wg[1] = (uint32_t)((w / cx) % cy);                                      \
    k.wg[2] = (uint32_t)(w / cx / cy);                                        \
    for (;;) {                                                                \
      /* The workgroups [x0, x1) of row (wg[1], wg[2]). */                    \
      uint64_t run = end - w < cx - x0 ? end - w : cx - x0;                   \
      uint32_t x1 = x0 + (uint32_t)run;                                       \
      if ((wy) == 1 && (wz) == 1) {                                           \
        const uint64_t g1 = (uint64_t)x1 * (wx);                              \
        if (g1 <= 0xFFFFFFFFu) {                                              \
          /* A 32-bit counter that cannot wrap: the compiler sees the global  \
           * id as a plain induction variable. */                             \
          const uint32_t hal_wmask =                                          \
              (k.w[0] | k.w[1] << 1 | k.w[2] << 2 | k.w[3] << 3) &            \
              ((1u << (nb)) - 1u);                                            \
          switch (hal_wmask) {                                                \
            HAL_FLAT_CASE_(name, wx, nc, 0)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 1)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 2)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 3)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 4)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 5)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 6)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 7)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 8)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 9)                                   \
            HAL_FLAT_CASE_(name, wx, nc, 10)                                  \
            HAL_FLAT_CASE_(name, wx, nc, 11)                                  \
            HAL_FLAT_CASE_(name, wx, nc, 12)                                  \
            HAL_FLAT_CASE_(name, wx, nc, 13)                                  \
            HAL_FLAT_CASE_(name, wx, nc, 14)                                  \
            HAL_FLAT_CASE_(name, wx, nc, 15)                                  \
          }                                                                   \
        } else {                                                              \
          for (uint64_t g = (uint64_t)x0 * (wx); g < g1; ++g)                 \
            name##__body(&k, hal_s, g, 0, 0, 0);                              \
        }                                                                     \
      } else {                                                                \
        for (uint32_t gx = x0; gx < x1; ++gx)                                 \
          for (uint32_t z = 0; z < (wz); ++z)                                 \
            for (uint32_t y = 0; y < (wy); ++y)                               \
              for (uint32_t x = 0; x < (wx); ++x)                             \
                name##__body(&k, hal_s, (uint64_t)gx*(wx) + x, 0, y, z);      \
      }                                                                       \
      w += run;                                                               \
      if (w >= end) break;                                                    \
      x0 = 0;                                                                 \
      if (++k.wg[1] == cy) {                                                  \
        k.wg[1] = 0;                                                          \
        ++k.wg[2];                                                            \
      }                                                                       \
    }                                                                         \
  }                                                                           \
  HAL_INLINE void name##__body(                                               \
      const hal_locals* hal_k, hal_sim_dispatch_state* hal_s, uint64_t hal_g, \
      uint32_t hal_gok, uint32_t hal_ly, uint32_t hal_lz) {                   \
    const uint hal_wsx = (wx), hal_wsy = (wy), hal_wsz = (wz);                \
    (void)hal_wsx;                                                            \
    (void)hal_wsy;                                                            \
    (void)hal_wsz;                                                            \
    (void)hal_k;                                                              \
    (void)hal_s;                                                              \
    (void)hal_g;                                                              \
    (void)hal_gok;
#define HAL_KERNEL_END }

/* ------------------------------------------------------------------------ */
#elif defined(HAL_KERNEL_TARGET_MSL)

#define HAL_BINDINGS_0
#define HAL_BINDINGS_1 device uint *hal_b0 [[buffer(0)]],
#define HAL_BINDINGS_2 HAL_BINDINGS_1 device uint *hal_b1 [[buffer(1)]],
#define HAL_BINDINGS_3 HAL_BINDINGS_2 device uint *hal_b2 [[buffer(2)]],
#define HAL_BINDINGS_4 HAL_BINDINGS_3 device uint *hal_b3 [[buffer(3)]],
#define HAL_CONSTANTS_0
#define HAL_CONSTANTS_1 constant uint *hal_constants [[buffer(30)]],
#define HAL_CONSTANTS_2 HAL_CONSTANTS_1
#define HAL_CONSTANTS_3 HAL_CONSTANTS_1
#define HAL_CONSTANTS_4 HAL_CONSTANTS_1

#define HAL_LOAD(b, i) (HAL_CAT(hal_b, b)[(i)])
#define HAL_STORE(b, i, v) (HAL_CAT(hal_b, b)[(i)] = (v))
#define HAL_ATOMIC_ADD(b, i, v)                                                \
  atomic_fetch_add_explicit((device atomic_uint*)&HAL_CAT(hal_b, b)[(i)], (v), \
                            memory_order_relaxed)
#define HAL_CONSTANT(c) (hal_constants[(c)])
#define HAL_LOCAL_ID_X hal_lid.x
#define HAL_LOCAL_ID_Y hal_lid.y
#define HAL_LOCAL_ID_Z hal_lid.z
#define HAL_WORKGROUP_ID_X hal_wgid.x
#define HAL_WORKGROUP_ID_Y hal_wgid.y
#define HAL_WORKGROUP_ID_Z hal_wgid.z

#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                           \
  kernel void name(HAL_BINDINGS_##nb HAL_CONSTANTS_##nc uint3 hal_wgid \
                   [[threadgroup_position_in_grid]],                   \
                   uint3 hal_lid [[thread_position_in_threadgroup]]) { \
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

#define HAL_KERNEL(name, nb, nc, wx, wy, wz)                            \
  __kernel __attribute__((reqd_work_group_size(wx, wy, wz))) void name( \
      HAL_BINDINGS_##nb HAL_CONSTANTS_##nc) {                           \
    const uint hal_wsx = (wx), hal_wsy = (wy), hal_wsz = (wz);
#define HAL_KERNEL_END }

#else
#error \
    "hal_kernel.h: define HAL_KERNEL_TARGET_NATIVE or HAL_KERNEL_TARGET_MSL, or compile as OpenCL C"
#endif

/* Derived ids, the same everywhere. */
#define HAL_WORKGROUP_SIZE_X hal_wsx
#define HAL_WORKGROUP_SIZE_Y hal_wsy
#define HAL_WORKGROUP_SIZE_Z hal_wsz
#ifndef HAL_GLOBAL_ID_X
#define HAL_GLOBAL_ID_X (HAL_WORKGROUP_ID_X * hal_wsx + HAL_LOCAL_ID_X)
#endif

#endif /* HAL_CTS_KERNELS_HAL_KERNEL_H_ */
