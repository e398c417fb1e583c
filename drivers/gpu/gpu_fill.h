// Fills at any address with vendor memsets that need an aligned target
// (cuMemsetD16/D32Async, hipMemsetD16/D32Async, memset graph nodes): the
// HAL's fill rule is on the buffer's offsets, and a host import may start
// at any host address, so the absolute target of a 2- or 4-byte pattern
// may be misaligned.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/gpu/gpu_api.h"

namespace hal::gpu {

// One piece of a fill: `count` copies of the `pattern_length`-byte
// `pattern` (little-endian in the uint32) at `dst`, which is aligned to
// `pattern_length`.
struct GpuFillPiece {
  GpuDevicePtr dst = 0;
  uint32_t pattern = 0;
  size_t pattern_length = 1;
  size_t count = 0;
};

constexpr int kMaxGpuFillPieces = 7;

// Splits a fill of `length` bytes (a multiple of `pattern_length`: 1, 2 or
// 4) at `dst` into pieces that each meet GpuApi::MemsetAsync's alignment
// rule and together write exactly the bytes of the fill: one piece when
// `dst` is aligned; else 1-byte pieces before the first aligned address and
// after the last whole pattern, and the pattern rotated to start at that
// address in between. Returns the number of pieces (0 for `length` 0), at
// most kMaxGpuFillPieces.
int SplitFill(GpuDevicePtr dst, uint32_t pattern, size_t pattern_length,
              size_t length, GpuFillPiece out[kMaxGpuFillPieces]);

}  // namespace hal::gpu
