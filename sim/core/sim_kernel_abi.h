/* The simulator kernel ABI: how sim executables' native code is called.
 *
 * Plain C, shared by the simulator (C++) and by kernels compiled for it
 * (hal/cts/kernels/hal_kernel.h). A module of a sim executable is an ELF
 * shared object for the host; for every export `name` it defines
 *
 *   void name(hal_sim_dispatch_state* state);        runs a RANGE of
 *                                                    workgroups
 *   const hal_sim_kernel_info name__hal_sim_info;    what it was built for
 *
 * The simulator checks the info against the export table at prepare time,
 * then calls `name` once per range of workgroups: the workgroups with linear
 * index [workgroup_begin, workgroup_end) (linear = x + count_x * (y +
 * count_y * z)), which the kernel runs in increasing order, each
 * workgroup's invocations one after another. Several calls (each with its own
 * state) may run at once on different threads. A kernel must touch binding
 * memory only inside [binding_data[i], binding_data[i] + binding_lengths[i]);
 * the macro layer checks every access and, instead of making it, records the
 * first fault of the call in the state (with the workgroup and invocation
 * that made it) and goes on with the next access, so the fault is that of
 * the lowest faulting workgroup of the range.
 *
 * Version 2 (version 1 ran exactly one workgroup, `workgroup_id`, per call).
 */
#ifndef HAL_SIM_KERNEL_ABI_H_
#define HAL_SIM_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAL_SIM_KERNEL_ABI_VERSION 2u

enum {
  HAL_SIM_FAULT_NONE = 0,
  HAL_SIM_FAULT_READ_OUT_OF_BOUNDS = 1,
  HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS = 2,
  HAL_SIM_FAULT_WRITE_READ_ONLY = 3, /* store to a read-only binding */
  HAL_SIM_FAULT_NO_SUCH_BINDING = 4,
  HAL_SIM_FAULT_MISALIGNED = 5, /* atomic on a misaligned address */
};

#define HAL_SIM_BINDING_READ_ONLY 1u /* = hal::BindingFlags::kReadOnly */

typedef struct hal_sim_dispatch_state {
  /* Inputs, set by the simulator. */
  uint64_t workgroup_begin; /* first linear workgroup index to run */
  uint64_t workgroup_end;   /* one past the last; begin < end <= product */
  uint32_t workgroup_count[3];
  uint32_t workgroup_size[3];
  uint32_t constant_count;
  const uint32_t* constants;
  uint32_t specialization_constant_count;
  const uint32_t* specialization_constants;
  uint32_t binding_count;
  uint8_t* const* binding_data;
  const uint64_t* binding_lengths;
  const uint32_t* binding_flags; /* HAL_SIM_BINDING_* */
  /* Output: the first fault of this call (HAL_SIM_FAULT_NONE if none). */
  uint32_t fault;
  uint32_t fault_binding;
  uint64_t fault_offset; /* byte offset within the binding */
  uint64_t fault_length; /* bytes of the access */
  uint32_t fault_local_id[3];
  uint32_t fault_workgroup_id[3];
} hal_sim_dispatch_state;

typedef void (*hal_sim_kernel_fn)(hal_sim_dispatch_state* state);

typedef struct hal_sim_kernel_info {
  uint32_t abi_version; /* HAL_SIM_KERNEL_ABI_VERSION */
  uint32_t binding_count;
  uint32_t constant_count;
  uint32_t workgroup_size[3];
} hal_sim_kernel_info;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HAL_SIM_KERNEL_ABI_H_ */
