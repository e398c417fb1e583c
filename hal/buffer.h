// Buffers, subspans, mappings and buffer views.
//
// A buffer is a range of an allocation. The allocation itself (the
// "allocated buffer") is a driver subclass that owns the memory; Subspan()
// makes a buffer that shares the allocation. All range arguments are relative
// to the buffer they are passed to.
//
// Thread safety: buffers may be used from any thread. Mapping the same bytes
// from two threads and writing them is a data race, as with any memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hal/ref.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal {

class Allocator;
class Buffer;
namespace internal {
struct BufferInternal;
}  // namespace internal

// Life of the memory behind an allocated buffer; queue_alloca/dealloca move
// it along, synchronous allocations start kLive.
enum class BufferState : uint32_t {
  kReserved = 0,        // queue_alloca submitted, not committed yet
  kLive = 1,            // memory is usable
  kDeallocaQueued = 2,  // queue_dealloca submitted; further use is an error
  kFreed = 3,           // memory was released by a dealloca
};
const char* BufferStateName(BufferState state);

enum class MappingMode : uint32_t { kScoped = 1, kPersistent = 2 };

// An RAII view of mapped bytes. Unmaps on destruction. Movable, not copyable.
class BufferMapping {
 public:
  BufferMapping() = default;
  BufferMapping(BufferMapping&& other) noexcept;
  BufferMapping& operator=(BufferMapping&& other) noexcept;
  ~BufferMapping();

  std::span<uint8_t> contents() const { return contents_; }
  uint8_t* data() const { return contents_.data(); }
  size_t size() const { return contents_.size(); }

  // Make host writes visible to the device / device writes visible to the
  // host, for memory that is not HOST_COHERENT. Ranges are relative to the
  // mapping; OUT_OF_RANGE when outside it.
  Status Flush(DeviceSize offset = 0, DeviceSize length = kWholeBuffer);
  Status Invalidate(DeviceSize offset = 0, DeviceSize length = kWholeBuffer);
  // Unmaps now (and flushes writes for non-coherent memory).
  Status Unmap();

 private:
  friend class Buffer;
  Ref<Buffer> buffer_;     // the allocated buffer
  DeviceSize offset_ = 0;  // within the allocated buffer
  MemoryAccess access_ = MemoryAccess::kNone;
  std::span<uint8_t> contents_;
};

class Buffer : public RefCounted {
 public:
  // What a driver passes when it constructs an allocated buffer.
  struct Params {
    Ref<Allocator> allocator;
    MemoryType memory_type = MemoryType::kNone;
    BufferUsage allowed_usage = BufferUsage::kNone;
    MemoryAccess allowed_access = MemoryAccess::kAll;
    QueueAffinity queue_affinity = kQueueAffinityAny;
    DeviceSize byte_length = 0;
    BufferState initial_state = BufferState::kLive;
  };

  MemoryType memory_type() const { return memory_type_; }
  BufferUsage allowed_usage() const { return allowed_usage_; }
  MemoryAccess allowed_access() const { return allowed_access_; }
  // The queues that may use this buffer (BufferParams::queue_affinity; a
  // subspan has its allocation's). A queue operation runs on a queue that
  // both its own affinity and every buffer it uses allow; when there is
  // none, the operation is INVALID_ARGUMENT at submission (hal/device.h).
  QueueAffinity queue_affinity() const { return queue_affinity_; }
  DeviceSize byte_length() const { return byte_length_; }
  // Offset of this buffer within its allocated buffer.
  DeviceSize byte_offset() const { return byte_offset_; }
  // The buffer that owns the memory (this one when not a subspan).
  Buffer* allocated_buffer() const {
    return parent_ ? parent_.get() : const_cast<Buffer*>(this);
  }
  Allocator* allocator() const { return allocated_buffer()->allocator_.get(); }
  BufferState state() const {
    return static_cast<BufferState>(
        allocated_buffer()->state_word_.load(std::memory_order_acquire) &
        kStateMask);
  }

  // A buffer over [offset, offset+length) of this one. OUT_OF_RANGE when it
  // does not fit.
  StatusOr<Ref<Buffer>> Subspan(DeviceSize offset, DeviceSize length);

  // Maps a range. INVALID_ARGUMENT when the memory is not HOST_VISIBLE, the
  // usage lacks the mapping mode, or the access is not allowed;
  // FAILED_PRECONDITION when the buffer is not live (queue_alloca not yet
  // committed, dealloca queued or done); OUT_OF_RANGE for a bad range.
  StatusOr<BufferMapping> Map(MappingMode mode, MemoryAccess access,
                              DeviceSize offset = 0,
                              DeviceSize length = kWholeBuffer);

  // Synchronous helpers built on Map (scoped mapping).
  Status MapZero(DeviceSize offset, DeviceSize length);
  // `pattern_length` is 1, 2 or 4; length and the offset in the allocation
  // (byte_offset() + offset) are multiples of it.
  Status MapFill(DeviceSize offset, DeviceSize length, const void* pattern,
                 size_t pattern_length);
  Status MapWrite(DeviceSize offset, const void* source, DeviceSize length);
  Status MapRead(DeviceSize offset, void* target, DeviceSize length);

  // Validation shared by every command and queue operation that touches the
  // buffer: usage bits, live state, and [offset, offset+length) in bounds.
  // Stores the resolved length (kWholeBuffer resolved).
  Status ValidateAccess(BufferUsage required_usage, DeviceSize offset,
                        DeviceSize length, DeviceSize* out_length,
                        const char* what) const;
  // Only the live-state part of ValidateAccess.
  Status ValidateLive(const char* what) const;
  // The checks of ValidateAccess as a few inline compares, for hot paths:
  // true (and the resolved length) exactly when ValidateAccess would return
  // OK. A caller that gets false calls ValidateAccess for the error.
  bool CheckAccess(BufferUsage required_usage, DeviceSize offset,
                   DeviceSize length, DeviceSize* out_length) const {
    if (!AllOf(allowed_usage_, required_usage)) return false;
    const Buffer* root = parent_ ? parent_.get() : this;
    const uint32_t s =
        root->state_word_.load(std::memory_order_acquire) & kStateMask;
    if (s == static_cast<uint32_t>(BufferState::kDeallocaQueued) ||
        s == static_cast<uint32_t>(BufferState::kFreed)) {
      return false;
    }
    if (offset > byte_length_) return false;
    const DeviceSize available = byte_length_ - offset;
    if (length == kWholeBuffer) {
      *out_length = available;
      return true;
    }
    if (length > available) return false;
    *out_length = length;
    return true;
  }

  // Moves the allocated buffer between states; used by queue_alloca/dealloca
  // implementations. Returns false when the current state was not `from`.
  // Moving to kLive also records that the memory is committed.
  bool TransitionState(BufferState from, BufferState to);

  // The queue_alloca/dealloca life cycle. The state and whether the memory
  // was committed live in one atomic word, so each step below is a single
  // transition that cannot lose a race with another:
  // - BeginDealloca: kReserved or kLive -> kDeallocaQueued (remembering
  //   whether it was committed). FAILED_PRECONDITION only when a dealloca is
  //   already queued or done: a legal dealloca racing with its alloca's
  //   commit is always accepted.
  // - CancelDealloca: undoes BeginDealloca (the dealloca failed, or its wait
  //   did): kDeallocaQueued -> kLive when the memory was committed by then,
  //   else kReserved.
  // - MarkCommitted: the alloca committed the memory: kReserved -> kLive; a
  //   dealloca already queued keeps its state and learns that the memory is
  //   committed.
  // - MarkFreed: the dealloca ran: kDeallocaQueued -> kFreed.
  Status BeginDealloca();
  void CancelDealloca();
  void MarkCommitted();
  void MarkFreed();

 protected:
  // For allocated buffers (driver subclasses).
  explicit Buffer(const Params& params);
  ~Buffer() override;

  // Driver hooks, called on the allocated buffer with validated offsets
  // relative to it.
  virtual StatusOr<uint8_t*> MapImpl(DeviceSize offset, DeviceSize length,
                                     MemoryAccess access) = 0;
  // Ends a mapping that MapImpl made, with the same offset, length and access.
  virtual Status UnmapImpl(DeviceSize offset, DeviceSize length,
                           MemoryAccess access) = 0;
  virtual Status FlushImpl(DeviceSize offset, DeviceSize length) = 0;
  virtual Status InvalidateImpl(DeviceSize offset, DeviceSize length) = 0;

 private:
  friend class BufferMapping;
  friend struct internal::BufferInternal;
  // For drivers whose memory the CPU addresses directly (the simulator): the
  // host address of byte 0 of this allocated buffer, or nullptr. Bypasses
  // the mapping rules, so it is reached only through
  // hal/utils/buffer_internal.h, never by HAL users.
  virtual uint8_t* HostStorageImpl() { return nullptr; }
  class SubspanBuffer;
  Buffer(Ref<Buffer> parent, DeviceSize offset, DeviceSize length);

  Ref<Buffer> parent_;  // set for subspans
  Ref<Allocator> allocator_;
  MemoryType memory_type_;
  BufferUsage allowed_usage_;
  MemoryAccess allowed_access_;
  QueueAffinity queue_affinity_;
  DeviceSize byte_offset_ = 0;
  DeviceSize byte_length_;
  // Bits 0-1: the BufferState; kCommittedBit: the memory was committed (by
  // the allocation, or by the queue_alloca's commit) and not freed.
  static constexpr uint32_t kStateMask = 3;
  static constexpr uint32_t kCommittedBit = 4;
  std::atomic<uint32_t> state_word_{static_cast<uint32_t>(BufferState::kLive) |
                                    kCommittedBit};
};

enum class ElementType : uint32_t {
  kOpaque8 = 0,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kFloat32,
  kFloat64,
};
size_t ElementTypeSize(ElementType type);

// A typed, shaped view of a buffer range (row-major, dense).
class BufferView : public RefCounted {
 public:
  // INVALID_ARGUMENT when shape x element size overflows or does not equal
  // the buffer's length; null buffer is INVALID_ARGUMENT.
  static StatusOr<Ref<BufferView>> Create(Ref<Buffer> buffer,
                                          std::vector<int64_t> shape,
                                          ElementType element_type);
  Buffer* buffer() const { return buffer_.get(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  ElementType element_type() const { return element_type_; }
  DeviceSize element_count() const;
  DeviceSize byte_length() const { return buffer_->byte_length(); }

 private:
  BufferView(Ref<Buffer> b, std::vector<int64_t> s, ElementType t)
      : buffer_(std::move(b)), shape_(std::move(s)), element_type_(t) {}
  Ref<Buffer> buffer_;
  std::vector<int64_t> shape_;
  ElementType element_type_;
};

// Narrows `*affinity` to the queues `buffer` may be used on (its
// queue_affinity): the rule of every queue operation (hal/device.h).
// INVALID_ARGUMENT, starting with `what`, when no queue is left; a null
// buffer changes nothing (its caller reports it).
Status NarrowQueueAffinity(const Buffer* buffer, const char* what,
                           QueueAffinity* affinity);

}  // namespace hal
