// The wait-for graph: every queue operation submitted through hal::Device
// with the (semaphore, value) points it waits on and signals, while it is
// pending. It turns "a wait timed out" into an explanation, and gives two
// checks that need no knowledge of the driver:
//
//   * Liveness: an operation whose waits are all reached (or failed) is
//     runnable; one still runnable and unfinished after a bound is lost
//     work (a completion nobody delivered, a queue that stopped), reported
//     with the graph, instead of a hang or a timeout far away.
//   * Lifetime: a semaphore destroyed while a pending operation still waits
//     on a value it has not reached, or still has to signal it, means the
//     driver did not keep it alive until the operation finished.
//
// An operation is finished when each of its signal points is reached or
// failed; operations without signals are not tracked (nothing observes
// them). At most 16,384 pending operations are held (later ones are not
// tracked, said once on stderr). Off by default (one relaxed load per
// submission); hal-check turns it on. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "hal/semaphore.h"
#include "hal/types.h"

namespace hal {

class Device;

void EnableWaitGraph(bool enabled);
bool WaitGraphEnabled();

// Records a submitted operation of `device` (an opaque key). No-op when
// disabled or when `signal` is empty.
void WaitGraphRecord(const void* device, const char* kind,
                     QueueAffinity affinity, SemaphoreList wait,
                     SemaphoreList signal);
// Drops `device`'s entries (its destruction cancelled or finished them).
void WaitGraphForget(const void* device);
// Called by ~Semaphore: a pending operation that still needs `semaphore`
// (an unreached wait or signal) is a lifetime violation, counted and
// printed with the graph; entries then forget the semaphore.
void WaitGraphSemaphoreDestroyed(const Semaphore* semaphore);
uint64_t WaitGraphLifetimeViolations();

// The pending operations of `device` (null: every device), finished ones
// pruned: one line per operation with its waits (reached or not, and which
// pending operation would signal an unreached one) and its signals. Empty
// when nothing is pending.
std::string DescribeWaitGraph(const void* device);

// Liveness: waits until no operation of `device` is runnable and
// unfinished, at most `bound`, pausing in device->WaitIdle (where a
// deterministic simulator runs its work). OK, or DEADLINE_EXCEEDED whose
// message holds the graph. OK at once when disabled.
Status CheckWaitGraphLiveness(Device* device, std::chrono::milliseconds bound);

}  // namespace hal
