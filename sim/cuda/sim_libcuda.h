/* The CUDA API simulator's older control names (libhalsim_cuda.so).
 *
 * Besides the CUDA driver-API subset the HAL's CUDA driver uses (see
 * sim_libcuda.cc and docs/drivers/cuda.md), the library exports the control
 * ABI every simulated vendor library shares, sim/core/halsim_control.h
 * (halsim_reset_schedule, halsim_races, ...). The halsim_cuda_* names below
 * are aliases of those, kept for existing callers; new code uses
 * halsim_control.h. Likewise HALSIM_SEED, HALSIM_FAULTS, HALSIM_TRACE,
 * HALSIM_RACES, HALSIM_SETTLE_US and HALSIM_KERNEL_DIR are the variables;
 * HALSIM_CUDA_<same> are aliases (the plain name wins).
 */
#ifndef HAL_SIM_CUDA_SIM_LIBCUDA_H_
#define HAL_SIM_CUDA_SIM_LIBCUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Host functions enqueued with cuLaunchHostFunc / run so far. */
uint64_t halsim_cuda_host_functions_launched(void);
uint64_t halsim_cuda_host_functions_run(void);
/* CUDA calls made from inside a host function (each returned
 * CUDA_ERROR_NOT_PERMITTED and printed a line to stderr). */
uint64_t halsim_cuda_api_violations(void);
/* Transfers, fills and kernels that have finished running on a stream so
 * far. */
uint64_t halsim_cuda_stream_work_done(void);
/* Kernel launches (cuLaunchKernel) that ran to completion without a fault. */
uint64_t halsim_cuda_kernels_run(void);
/* Graph launches (cuGraphLaunch) whose nodes have all run. */
uint64_t halsim_cuda_graphs_run(void);
/* While paused, host functions wait before they run (and block the stream
 * they are on, as CUDA's do); other streams keep running. */
void halsim_cuda_pause_host_functions(int paused);
/* The seed (HALSIM_SEED) and the schedule it drove so far: the FNV-1a
 * hash and count of the trace lines (one per completed stream op; the lines
 * go to HALSIM_TRACE when set), and the virtual time in ns. Same seed +
 * same host calls = same hash. */
uint64_t halsim_cuda_seed(void);
uint64_t halsim_cuda_trace_hash(void);
uint64_t halsim_cuda_trace_length(void);
uint64_t halsim_cuda_virtual_time_ns(void);
/* Restarts the schedule as if HALSIM_SEED were `seed`: the random
 * streams, the virtual clock, the trace hash and the fault counters (the
 * fault plan stays); streams created afterwards are numbered from 0 in the
 * trace. Returns 0, or -1 (and changes nothing) while any stream has work. */
int halsim_cuda_reset_schedule(uint64_t seed);
/* Races found: copies, fills and stream-ordered frees that overlapped in
 * virtual time with an op of another stream on the same bytes (one
 * writing), with no event between them. */
uint64_t halsim_cuda_races(void);
/* cuStreamWaitEvent calls on events never recorded (no-ops in CUDA, so they
 * order nothing; each also printed a line to stderr). */
uint64_t halsim_cuda_unrecorded_waits(void);
/* Engine steps taken while the host was not quiet (after 20 ms of waiting);
 * nonzero means the trace may not replay. */
uint64_t halsim_cuda_unsettled_steps(void);
/* Replaces the fault plan (HALSIM_FAULTS syntax, sim/core/fault_plan.h:
 * e.g. "fail_alloc=3,fail_op=2,alloc_fail_ppm=1000,op_fail_ppm=1000,
 * slow_ppm=1000,late_signal_us=500,late_signal_ppm=250000", with the older
 * alloc=, op=, alloc_ppm=, op_ppm=, late_event_us=, late_event_ppm= as
 * aliases; rates are drawn from the seed's fault stream) and restarts its
 * counters and that stream. Returns 0, or -1 for a malformed plan. */
int halsim_cuda_set_faults(const char* plan);

#ifdef __cplusplus
}
#endif

#endif /* HAL_SIM_CUDA_SIM_LIBCUDA_H_ */
