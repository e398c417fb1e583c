/* The one control ABI of every simulated vendor library (libhalsim_cuda,
 * _hip, _ze, _hsa and _metal .so, via sim/skin/skin_control.h), exported
 * under exactly these names by each. Shared tools (hal-check, the property
 * tests, the fuzzers) look them up with dlsym on the library a driver loaded
 * (dlopen of the same path returns the same handle), so they name no
 * vendor.
 *
 * Environment, read when the library initialises (the vendor's init call):
 *   HALSIM_SEED=N        the schedule's seed (default 0)
 *   HALSIM_FAULTS=plan   the fault plan (sim/core/fault_plan.h)
 *   HALSIM_TRACE=path    writes the trace lines there
 *   HALSIM_RACES=abort   a race aborts the process (default: count it)
 *   HALSIM_SETTLE_US=N   the settle window (default 1; 0 runs free)
 *   HALSIM_KERNEL_DIR    where the native test-kernel modules are
 * Each library also accepts its older vendor-prefixed names as aliases
 * (HALSIM_CUDA_SEED, ...); the plain name wins when both are set.
 *
 * Thread-safe; none may be called from a host function.
 */
#ifndef HAL_SIM_CORE_HALSIM_CONTROL_H_
#define HAL_SIM_CORE_HALSIM_CONTROL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Restarts the schedule as if HALSIM_SEED were `seed`: the random streams,
 * the virtual clock, the trace hash and the fault counters (the fault plan
 * stays); queues created afterwards are numbered from 0 in the trace.
 * Returns 0, or -1 (and changes nothing) while any queue has work. */
int halsim_reset_schedule(uint64_t seed);
/* Replaces the fault plan (HALSIM_FAULTS syntax, e.g.
 * "fail_alloc=3,op_fail_ppm=1000"; "" for none) and restarts its counters
 * and stream. Returns 0, or -1 (and prints why) for a malformed plan or a
 * fault this library does not model. */
int halsim_set_faults(const char* plan);
/* The seed, the FNV-1a hash and count of the trace lines so far (one per
 * completed queue op), and the virtual time in ns. Same seed + same host
 * calls = same hash. */
uint64_t halsim_seed(void);
uint64_t halsim_trace_hash(void);
uint64_t halsim_trace_length(void);
uint64_t halsim_virtual_time_ns(void);

/* Counters since the library loaded. */
/* Races: ops of different queues that overlapped in virtual time on the
 * same bytes (one writing) with nothing ordering them. */
uint64_t halsim_races(void);
/* Host notifications (host functions, callbacks) enqueued / run. */
uint64_t halsim_host_functions_launched(void);
uint64_t halsim_host_functions_run(void);
/* Vendor API calls made from inside a host notification (each an error). */
uint64_t halsim_api_violations(void);
/* Copies, fills and kernels that ran; kernels; graph launches that ran. */
uint64_t halsim_work_done(void);
uint64_t halsim_kernels_run(void);
uint64_t halsim_graphs_run(void);
/* Waits on an event never recorded (no-ops in CUDA and HIP). */
uint64_t halsim_unsignalled_waits(void);
/* Queue ops completed; and those taken while the host was not quiet (after
 * 250 ms of waiting): nonzero means the trace may not replay. */
uint64_t halsim_steps(void);
uint64_t halsim_unsettled_steps(void);
/* Vendor API entry points the host called (outermost calls; a host
 * notification's calls do not count): the driver's vendor calls. */
uint64_t halsim_api_calls(void);
/* Vendor rules broken (each also reported on stderr as "<prefix>: <API>
 * rule violated: ...; seed=N"), and the library's live objects (handles
 * created and not yet destroyed; reported at exit when nonzero). */
uint64_t halsim_rule_violations(void);
uint64_t halsim_live_objects(void);
/* While paused, host notifications wait before they run (and block their
 * queue); other queues keep running. */
void halsim_pause_host_functions(int paused);

#ifdef __cplusplus
}
#endif

#endif /* HAL_SIM_CORE_HALSIM_CONTROL_H_ */
