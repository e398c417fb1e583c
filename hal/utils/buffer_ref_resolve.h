// Resolving buffer references when the work runs, for every driver.
//
// A command buffer checks its references when it records them (direct
// buffers) and when it is submitted (binding-table slots,
// CommandBuffer::ValidateSubmission). Between that and the moment a driver
// touches the memory, a dealloca may have run, or the alloca that commits
// the memory may not have run yet (a missing semaphore). Every driver turns
// a reference into (allocation, offset, length) here, with the same checks
// and the same messages, and then maps the allocation to its own address
// (host pointer, device pointer) with CheckCommitted.
//
// Thread safety: the functions read buffer state atomically and may be
// called from any thread; the binding table is borrowed for the call.
#pragma once

#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal::utils {

// Resolves `ref` (a buffer, or a slot of `table`) to a range of its
// allocated buffer, for a command that touches `length` bytes of it
// (kWholeBuffer: the reference's whole range). `what` names the command in
// messages. Errors:
// - INVALID_ARGUMENT: the slot is outside the table or the table entry has
//   no buffer;
// - OUT_OF_RANGE: the entry's range, the reference's range within it, or
//   `length` within that, does not fit (no arithmetic overflows);
// - FAILED_PRECONDITION: the allocation was freed by a dealloca.
// A dealloca that is only queued is no error: work submitted before it may
// still run. Whether the memory is committed is the driver's to say
// (CheckCommitted).
StatusOr<ResolvedRef> ResolveBufferRef(const BufferRef& ref, BindingTable table,
                                       DeviceSize length, const char* what);

// The driver's half, once it looked up its memory: `committed` says whether
// the memory of `ref.buffer` (an allocated buffer) is there. When it is not,
// whatever the length: FAILED_PRECONDITION, "used after its dealloca ran"
// when a dealloca freed it, else "not committed" naming the buffer's state
// (the use was not ordered after its queue_alloca).
inline Status CheckCommitted(const ResolvedRef& ref, bool committed,
                             const char* what);
// CheckCommitted's error, for memory that is not there.
Status NotCommittedError(const ResolvedRef& ref, const char* what);

inline Status CheckCommitted(const ResolvedRef& ref, bool committed,
                             const char* what) {
  if (committed) [[likely]]
    return OkStatus();
  return NotCommittedError(ref, what);
}

}  // namespace hal::utils
