// Replaying a recorded command buffer on the simulator.
//
// Commands between two barriers (ExecutionBarrier, WaitEvents) form a
// segment: the HAL lets them run in any order, so the replay runs each
// segment in a seed-chosen order. With checking on, two commands of one
// segment that touch overlapping bytes, one of them writing, are a hazard:
// the submission fails with FAILED_PRECONDITION naming both commands and
// the range, before anything runs.
#pragma once

#include <string>
#include <vector>

#include "drivers/sim/sim_context.h"
#include "hal/command_buffer.h"

namespace hal::sim {

// The buffer ranges `command` touches, resolved against `table`.
void CommandAccesses(const Command& command, BindingTable table,
                     std::vector<SimAccess>* out);

// Short name of a command ("fill", "copy", ...).
const char* CommandName(const Command& command);

// Checks every segment for hazards (when `checking`) and picks the order of
// each segment from `random`. Returns the command indices in execution order.
// Call with the context lock held (it uses the context's random stream).
StatusOr<std::vector<size_t>> PlanCommandBuffer(const CommandBuffer& cb,
                                                BindingTable table,
                                                const std::string& op_label,
                                                SimContext& context);

// Runs the commands in `order`.
Status ExecuteCommandBuffer(const CommandBuffer& cb, BindingTable table,
                            const std::vector<size_t>& order);

}  // namespace hal::sim
