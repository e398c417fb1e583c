#include "drivers/gpu/gpu_fill.h"

namespace hal::gpu {

namespace {

// Byte `i` of the fill (the pattern repeats from the fill's first byte).
uint8_t PatternByte(uint32_t pattern, size_t pattern_length, size_t i) {
  return static_cast<uint8_t>(pattern >> (8 * (i % pattern_length)));
}

}  // namespace

int SplitFill(GpuDevicePtr dst, uint32_t pattern, size_t pattern_length,
              size_t length, GpuFillPiece out[kMaxGpuFillPieces]) {
  if (length == 0) return 0;
  const size_t misaligned = dst % pattern_length;
  if (pattern_length == 1 || misaligned == 0) {
    out[0] = {dst, pattern, pattern_length, length / pattern_length};
    return 1;
  }
  int n = 0;
  // Bytes before the first aligned address.
  const size_t head = pattern_length - misaligned;
  for (size_t i = 0; i < head && i < length; ++i) {
    out[n++] = {dst + i, PatternByte(pattern, pattern_length, i), 1, 1};
  }
  if (head >= length) return n;
  // The body: whole patterns from the aligned address, each starting with
  // byte `head` of the pattern.
  const size_t body = (length - head) / pattern_length;
  if (body > 0) {
    uint32_t rotated = 0;
    for (size_t j = 0; j < pattern_length; ++j) {
      rotated |= uint32_t{PatternByte(pattern, pattern_length, head + j)}
                 << (8 * j);
    }
    out[n++] = {dst + head, rotated, pattern_length, body};
  }
  // Bytes after the last whole pattern.
  for (size_t i = head + body * pattern_length; i < length; ++i) {
    out[n++] = {dst + i, PatternByte(pattern, pattern_length, i), 1, 1};
  }
  return n;
}

}  // namespace hal::gpu
