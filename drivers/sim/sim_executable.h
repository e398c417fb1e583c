// Simulator executables: the sim format's cache and dispatch execution.
//
// A sim executable's modules are ELF shared objects for the host (see
// sim/core/sim_kernel_abi.h). The cache loads each module from memory
// (memfd_create + dlopen of /proc/self/fd/N), resolves every export and
// checks its `__hal_sim_info` against the export table. Only the sim format
// can be prepared; CanPrepareFormat is false for the others.
//
// A dispatch is one kernel call over all its workgroups on one worker, or
// up to 8 ranges of workgroups per worker on a small worker pool owned by
// the cache (shared by its executables; kernel ABI v2 runs a range per
// call). Results do not depend on how workgroups are spread over workers,
// as long as kernels do not race (atomics are fine).
// Faults reported by kernels fail the dispatch with the fault of the lowest
// workgroup, so the message is the same on every run.
//
// Executing native code: a sim executable runs with the process's rights.
// ParseExecutable verifies the container; it cannot make untrusted machine
// code safe. Load sim executables only from trusted builds.
#pragma once

#include <memory>

#include "hal/command_buffer.h"
#include "hal/executable.h"

namespace hal::sim {

class SimWorkerPool;

// `workers` >= 1 threads run workgroups (the submitting thread is one of
// them; workers - 1 helper threads are started).
StatusOr<Ref<ExecutableCache>> CreateSimExecutableCache(int workers);

// Runs one recorded dispatch on host memory, resolving slots against
// `table`. The command passed ValidateSubmission. Errors: INVALID_ARGUMENT
// for an executable not prepared by a sim cache; OUT_OF_RANGE for an
// indirect count above kMaxWorkgroupCount or a kernel access outside a
// binding (naming kernel, workgroup, binding and offset); PERMISSION_DENIED
// for a store to a read-only binding; FAILED_PRECONDITION for memory that is
// not committed or was freed.
Status ExecuteSimDispatch(const cmd::Dispatch& dispatch, BindingTable table);

}  // namespace hal::sim
