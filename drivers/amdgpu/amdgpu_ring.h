// A byte ring with absolute indices (the seed's ringbuffers): positions are
// monotonic 64-bit byte counts that never wrap; the memory offset of a
// position is position % capacity. Each reservation is contiguous in memory
// (one that would straddle the end starts at the next lap, the skipped
// bytes belonging to it) and carries a tag: the number of the queue's
// packets that must have completed before it is free again (its packet's
// index + 1). Retire(completed) frees, in order, the reservations whose
// packets completed, so memory is reused only after the epoch signal of the
// queue passed the packet that used it.
//
// Not thread-safe: the owner (a queue) serialises calls.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace hal::amdgpu {

class AmdgpuRing {
 public:
  explicit AmdgpuRing(uint64_t capacity) : capacity_(capacity) {}

  uint64_t capacity() const { return capacity_; }
  // Bytes reserved so far (the next position) and the oldest live position.
  uint64_t head() const { return head_; }
  uint64_t tail() const { return tail_; }
  uint64_t Offset(uint64_t position) const { return position % capacity_; }

  // The position of `size` contiguous bytes aligned to `alignment` (a power
  // of two dividing the capacity), free once `tag` packets completed; none
  // when the live reservations leave no room now (Retire, then retry), or
  // `size` exceeds the capacity.
  std::optional<uint64_t> Reserve(uint64_t size, uint64_t alignment,
                                  uint64_t tag) {
    if (size == 0 || size > capacity_) return std::nullopt;
    uint64_t start = (head_ + alignment - 1) & ~(alignment - 1);
    if (Offset(start) + size > capacity_) {
      start += capacity_ - Offset(start);  // the next lap
    }
    const uint64_t end = start + size;
    if (end - tail_ > capacity_) return std::nullopt;
    head_ = end;
    live_.push_back({end, tag});
    return start;
  }

  // Frees the reservations, oldest first, whose tag is at most `completed`.
  void Retire(uint64_t completed) {
    while (!live_.empty() && live_.front().tag <= completed) {
      tail_ = live_.front().end;
      live_.pop_front();
    }
    if (live_.empty()) tail_ = head_;
  }

  // Undoes the newest reservation (its packet was not written).
  void CancelNewest() {
    if (live_.empty()) return;
    live_.pop_back();
    head_ = live_.empty() ? tail_ : live_.back().end;
  }

  // The tag of the oldest live reservation (what to wait for when full).
  std::optional<uint64_t> OldestTag() const {
    if (live_.empty()) return std::nullopt;
    return live_.front().tag;
  }
  bool empty() const { return live_.empty(); }

 private:
  struct Entry {
    uint64_t end;
    uint64_t tag;
  };
  const uint64_t capacity_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  std::deque<Entry> live_;
};

}  // namespace hal::amdgpu
