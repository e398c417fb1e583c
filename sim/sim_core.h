// The simulator core's primitives (sim/core/), included as one header by the
// HAL simulator driver: the random stream a seed drives, the distribution of
// simulated op durations, the trace hash and byte ranges. The simulated-GPU
// engine under the vendor-API simulators (sim/engine/) uses the same ones.
#pragma once

#include "sim/core/range.h"
#include "sim/core/sim_random.h"
#include "sim/core/trace_hash.h"
