// A small reader that turns fuzzer bytes into values (the same on GCC and
// Clang, so a corpus replays identically in both builds), and the checks
// every target shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hal/status.h"

namespace hal::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return size_ - pos_; }

  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{U8()} << (8 * i);
    return v;
  }
  uint64_t U64() { return uint64_t{U32()} | (uint64_t{U32()} << 32); }
  // In [0, n); n > 0.
  uint32_t Below(uint32_t n) { return U8() % n; }
  bool Bool() { return U8() & 1; }
  // A size or offset: mostly small, sometimes at the edges of the range.
  uint64_t Size(uint64_t typical) {
    switch (U8() % 8) {
      case 0:
        return ~uint64_t{0};  // kWholeBuffer
      case 1:
        return ~uint64_t{0} - U8();
      case 2:
        return U32();
      default:
        return typical ? U32() % (typical + 1) : 0;
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// A HAL error must carry a canonical code, and never UNKNOWN or INTERNAL
// (those would be bugs, not validation).
inline void CheckStatus(const Status& status, const char* what) {
  int code = static_cast<int>(status.code());
  if (code < 0 || code > static_cast<int>(StatusCode::kUnauthenticated) ||
      status.code() == StatusCode::kUnknown ||
      status.code() == StatusCode::kInternal) {
    std::fprintf(stderr, "%s: unexpected status %s\n", what,
                 status.ToString().c_str());
    std::abort();
  }
}

#define HAL_FUZZ_CHECK(cond, ...)                        \
  do {                                                   \
    if (!(cond)) {                                       \
      std::fprintf(stderr, "check failed: %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                 \
      std::fprintf(stderr, "\n");                        \
      std::abort();                                      \
    }                                                    \
  } while (false)

}  // namespace hal::fuzz
