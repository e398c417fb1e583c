// Small value types shared by every HAL concept: memory types, buffer usage
// and access bits, queue affinities, timeouts and device size helpers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hal {

using DeviceSize = uint64_t;
// Passed as a length: "to the end of the buffer".
inline constexpr DeviceSize kWholeBuffer = ~DeviceSize{0};

#define HAL_BITFLAG_OPS(T)                                                 \
  inline constexpr T operator|(T a, T b) {                                 \
    return static_cast<T>(static_cast<uint32_t>(a) |                       \
                          static_cast<uint32_t>(b));                       \
  }                                                                        \
  inline constexpr T operator&(T a, T b) {                                 \
    return static_cast<T>(static_cast<uint32_t>(a) &                       \
                          static_cast<uint32_t>(b));                       \
  }                                                                        \
  inline constexpr T operator~(T a) {                                      \
    return static_cast<T>(~static_cast<uint32_t>(a));                      \
  }                                                                        \
  inline constexpr T& operator|=(T& a, T b) { return a = a | b; }          \
  inline constexpr bool Any(T a) { return static_cast<uint32_t>(a) != 0; } \
  inline constexpr bool AllOf(T a, T required) {                           \
    return (a & required) == required;                                     \
  }

enum class MemoryType : uint32_t {
  kNone = 0,
  kOptimal = 1u << 0,       // let the allocator pick
  kHostVisible = 1u << 1,   // the host can map it
  kHostCoherent = 1u << 2,  // no flush/invalidate needed
  kHostCached = 1u << 3,
  kHostLocal = 1u << 4 | kHostVisible,
  kDeviceVisible = 1u << 5,
  kDeviceLocal = 1u << 6 | kDeviceVisible,
};
HAL_BITFLAG_OPS(MemoryType)

enum class BufferUsage : uint32_t {
  kNone = 0,
  kTransferSource = 1u << 0,
  kTransferTarget = 1u << 1,
  kTransfer = kTransferSource | kTransferTarget,
  kDispatchIndirectParams = 1u << 8,
  kDispatchStorageRead = 1u << 11,
  kDispatchStorageWrite = 1u << 12,
  kDispatchStorage = kDispatchStorageRead | kDispatchStorageWrite,
  kMappingScoped = 1u << 24,
  kMappingPersistent = 1u << 25,
  kMapping = kMappingScoped | kMappingPersistent,
  kDefault = kTransfer | kDispatchStorage | kDispatchIndirectParams,
};
HAL_BITFLAG_OPS(BufferUsage)

enum class MemoryAccess : uint32_t {
  kNone = 0,
  kRead = 1u << 0,
  kWrite = 1u << 1,
  kDiscard = 1u << 2,
  kDiscardWrite = kDiscard | kWrite,
  kAll = kRead | kWrite | kDiscard,
};
HAL_BITFLAG_OPS(MemoryAccess)

std::string MemoryTypeString(MemoryType type);
std::string BufferUsageString(BufferUsage usage);

// A bit mask of queues; bit i selects queue i.
using QueueAffinity = uint64_t;
inline constexpr QueueAffinity kQueueAffinityAny = ~QueueAffinity{0};
inline constexpr int kMaxQueues = 64;

// An absolute deadline on the steady clock.
class Timeout {
 public:
  using Clock = std::chrono::steady_clock;
  static Timeout Infinite() { return Timeout(Clock::time_point::max()); }
  static Timeout Immediate() { return Timeout(Clock::time_point::min()); }
  static Timeout After(std::chrono::nanoseconds duration) {
    return Timeout(duration.count() <= 0 ? Clock::time_point::min()
                                         : Clock::now() + duration);
  }
  static Timeout At(Clock::time_point deadline) { return Timeout(deadline); }

  bool is_infinite() const { return deadline_ == Clock::time_point::max(); }
  bool is_immediate() const { return deadline_ == Clock::time_point::min(); }
  bool expired() const { return !is_infinite() && Clock::now() >= deadline_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  explicit Timeout(Clock::time_point d) : deadline_(d) {}
  Clock::time_point deadline_;
};

// Checks that [offset, offset+length) fits in [0, size); `length` may be
// kWholeBuffer. On success stores the resolved length. Never overflows.
bool ResolveRange(DeviceSize size, DeviceSize offset, DeviceSize length,
                  DeviceSize* out_length);

}  // namespace hal
