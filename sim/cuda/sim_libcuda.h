/* The CUDA API simulator's older control names (libhalsim_cuda.so).
 *
 * Besides the CUDA driver-API subset the HAL's CUDA driver uses (see
 * sim_libcuda.cc and docs/drivers/cuda.md), the library exports the control
 * ABI every simulated vendor library shares, sim/core/halsim_control.h. The
 * halsim_cuda_* names below are aliases of those (the halsim_ name after
 * the prefix, except where a comment names another), kept for existing
 * callers; new code uses halsim_control.h. Likewise HALSIM_SEED,
 * HALSIM_FAULTS, HALSIM_TRACE, HALSIM_RACES, HALSIM_SETTLE_US and
 * HALSIM_KERNEL_DIR are the variables; HALSIM_CUDA_<same> are aliases (the
 * plain name wins).
 */
#ifndef HAL_SIM_CUDA_SIM_LIBCUDA_H_
#define HAL_SIM_CUDA_SIM_LIBCUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint64_t halsim_cuda_host_functions_launched(void);
uint64_t halsim_cuda_host_functions_run(void);
uint64_t halsim_cuda_api_violations(void);
uint64_t halsim_cuda_stream_work_done(void); /* halsim_work_done */
uint64_t halsim_cuda_kernels_run(void);
uint64_t halsim_cuda_graphs_run(void);
void halsim_cuda_pause_host_functions(int paused);
uint64_t halsim_cuda_seed(void);
uint64_t halsim_cuda_trace_hash(void);
uint64_t halsim_cuda_trace_length(void);
uint64_t halsim_cuda_virtual_time_ns(void);
int halsim_cuda_reset_schedule(uint64_t seed);
uint64_t halsim_cuda_races(void);
uint64_t halsim_cuda_unrecorded_waits(void); /* halsim_unsignalled_waits */
uint64_t halsim_cuda_unsettled_steps(void);
int halsim_cuda_set_faults(const char* plan);

#ifdef __cplusplus
}
#endif

#endif /* HAL_SIM_CUDA_SIM_LIBCUDA_H_ */
