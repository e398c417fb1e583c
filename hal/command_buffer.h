// Command buffers: recorded once, submitted with queue_execute.
//
// Every driver records into this one deferred command buffer; validation
// happens here, at record time for direct buffer references and at submit
// time (ValidateSubmission) for binding-table slots. Drivers replay the
// command list (commands()) onto their queues and resolve each reference
// when its work runs with hal/utils/buffer_ref_resolve.h, which checks it
// again (a dealloca may have run since submission).
//
// Semantics: commands between two execution barriers may run in any order
// and may overlap; events order a signal before later waits.
//
// Ownership: every pointer passed to a recording call (a BufferRef's buffer,
// an event, DispatchParams and what it points to) is borrowed for the call.
// The command buffer retains each buffer, event and executable it records,
// once per command buffer (its resource set), until it is destroyed; the
// recorded commands hold raw pointers into that set. Constants, bindings,
// event lists, labels and update payloads are copied into the command
// buffer's own storage: fixed-size blocks from the device's BlockPool (the
// process-wide pool for a command buffer made with Create and no pool),
// which never move while the command buffer lives and go back to the pool
// when it dies.
//
// Thread safety: recording is single-threaded (one thread at a time, no
// concurrent calls). A command buffer that ended may be submitted from any
// thread, also concurrently when reusable.
#pragma once

#include <atomic>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "hal/block_pool.h"
#include "hal/buffer.h"
#include "hal/event.h"
#include "hal/executable.h"
#include "hal/ref.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal {

enum class CommandBufferMode : uint32_t {
  kReusable = 0,
  kOneShot = 1,
};

enum class CommandCategory : uint32_t {
  kNone = 0,
  kTransfer = 1u << 0,
  kDispatch = 1u << 1,
  kAny = kTransfer | kDispatch,
};
HAL_BITFLAG_OPS(CommandCategory)

// Largest UpdateBuffer payload.
inline constexpr DeviceSize kMaxUpdateBytes = 64 * 1024;

// Either a buffer or a binding-table slot, plus a range within it. A slot is
// resolved against the binding table given to queue_execute; its range is
// relative to the table entry's range. The buffer is borrowed: building a
// BufferRef costs no reference counting, and the command buffer retains the
// buffer when it records the reference.
struct BufferRef {
  Buffer* buffer = nullptr;  // null: use `slot`
  uint32_t slot = 0;
  DeviceSize offset = 0;
  DeviceSize length = kWholeBuffer;

  static BufferRef Direct(Buffer* b, DeviceSize offset = 0,
                          DeviceSize length = kWholeBuffer) {
    return BufferRef{b, 0, offset, length};
  }
  static BufferRef Slot(uint32_t slot, DeviceSize offset = 0,
                        DeviceSize length = kWholeBuffer) {
    return BufferRef{nullptr, slot, offset, length};
  }
  bool is_slot() const { return buffer == nullptr; }
};

// One entry of a binding table: a buffer range that a slot stands for.
struct Binding {
  Buffer* buffer = nullptr;
  DeviceSize offset = 0;
  DeviceSize length = kWholeBuffer;
};
using BindingTable = std::span<const Binding>;

// A reference resolved to the allocated buffer and an absolute range.
struct ResolvedRef {
  Buffer* buffer = nullptr;  // allocated buffer
  DeviceSize offset = 0;
  DeviceSize length = 0;
};

// Largest workgroup count in each dimension (direct or indirect).
inline constexpr uint32_t kMaxWorkgroupCount = 65535;
// Size of the indirect workgroup-count record: 3 x uint32 (x, y, z).
inline constexpr DeviceSize kIndirectWorkgroupCountSize = 12;

// Parameters of a dispatch. Borrowed for the call: the command buffer keeps
// its own reference to the executable and copies of the constants and
// binding references.
struct DispatchParams {
  Executable* executable = nullptr;
  // Index of the function (export) in `executable`.
  uint32_t entry_point = 0;
  // Workgroups in x, y, z; each at most kMaxWorkgroupCount. Zero in any
  // dimension runs nothing (the dispatch still completes and signals).
  uint32_t workgroup_count[3] = {1, 1, 1};
  // When set, the workgroup count is read from this buffer when the dispatch
  // runs: 3 x uint32 at the reference's offset (4-byte aligned), in a buffer
  // with DISPATCH_INDIRECT_PARAMS usage. A count above kMaxWorkgroupCount
  // read there fails the dispatch with OUT_OF_RANGE.
  const BufferRef* indirect_workgroup_count = nullptr;
  // Exactly the function's constant_count values.
  std::span<const uint32_t> constants;
  // Exactly the function's binding_count references, each 4-byte aligned,
  // with DISPATCH_STORAGE_READ usage, and DISPATCH_STORAGE_WRITE unless the
  // binding is read-only. The kernel sees each reference's range; accesses
  // outside it are undefined on GPUs and an error on the simulator.
  std::span<const BufferRef> bindings;
};

// Recorded commands. Every record is trivially destructible: the objects
// it points to are retained by the command buffer (its resource set) and the
// spans and strings point into the command buffer's block storage, both
// valid as long as the command buffer lives.
namespace cmd {
struct Barrier {};
struct SignalEvent {
  Event* event;
};
struct ResetEvent {
  Event* event;
};
struct WaitEvents {
  std::span<Event* const> events;
};
struct Fill {
  BufferRef target;  // length resolved for direct buffers
  uint32_t pattern;
  uint8_t pattern_length;
};
struct Update {
  BufferRef target;
  std::span<const uint8_t> data;  // target.length bytes captured at record
};
struct Copy {
  BufferRef source;
  BufferRef target;
  DeviceSize length;
};
struct Dispatch {
  Executable* executable;
  uint32_t entry_point;
  uint32_t workgroup_count[3];
  bool indirect;
  // Set when `indirect`; length kIndirectWorkgroupCountSize.
  const BufferRef* indirect_workgroup_count;
  std::span<const uint32_t> constants;
  std::span<const BufferRef> bindings;  // direct lengths resolved
};
struct BeginDebugGroup {
  std::string_view label;
};
struct EndDebugGroup {};
}  // namespace cmd

using Command =
    std::variant<cmd::Barrier, cmd::SignalEvent, cmd::ResetEvent,
                 cmd::WaitEvents, cmd::Fill, cmd::Update, cmd::Copy,
                 cmd::BeginDebugGroup, cmd::EndDebugGroup, cmd::Dispatch>;
static_assert(std::is_trivially_destructible_v<Command>);
static_assert(std::is_trivially_copyable_v<Command>);
// One slot per command: a larger record costs every command its bytes.
static_assert(sizeof(Command) <= 80, "keep the command records small");

// The recorded commands of a command buffer, in order: fixed-size slots in
// blocks that never move. A view, valid while the command buffer lives and
// does not record more commands.
class CommandList {
 public:
  static constexpr size_t kPerBlock = BlockPool::kBlockSize / sizeof(Command);

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Command;
    using difference_type = std::ptrdiff_t;
    using pointer = const Command*;
    using reference = const Command&;
    Iterator() = default;
    reference operator*() const {
      return blocks_[index_ / kPerBlock][index_ % kPerBlock];
    }
    pointer operator->() const { return &**this; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++index_;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.index_ == b.index_;
    }

   private:
    friend class CommandList;
    Iterator(Command* const* blocks, size_t index)
        : blocks_(blocks), index_(index) {}
    Command* const* blocks_ = nullptr;
    size_t index_ = 0;
  };

  CommandList(Command* const* blocks, size_t size)
      : blocks_(blocks), size_(size) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Command& operator[](size_t i) const {
    return blocks_[i / kPerBlock][i % kPerBlock];
  }
  Iterator begin() const { return Iterator(blocks_, 0); }
  Iterator end() const { return Iterator(blocks_, size_); }

 private:
  Command* const* blocks_;
  size_t size_;
};

class CommandBuffer : public RefCounted {
 public:
  // INVALID_ARGUMENT for an empty category or affinity. Storage comes from
  // `pool` (retained), BlockPool::Default() when null.
  static StatusOr<Ref<CommandBuffer>> Create(CommandBufferMode mode,
                                             CommandCategory categories,
                                             QueueAffinity affinity,
                                             uint32_t binding_capacity,
                                             BlockPool* pool = nullptr);

  CommandBufferMode mode() const { return mode_; }
  CommandCategory categories() const { return categories_; }
  QueueAffinity queue_affinity() const { return affinity_; }
  uint32_t binding_capacity() const { return binding_capacity_; }

  // Recording. Each returns FAILED_PRECONDITION outside Begin/End, and
  // RESOURCE_EXHAUSTED when no storage block can be allocated.
  Status Begin();
  // FAILED_PRECONDITION with an open debug group.
  Status End();
  Status BeginDebugGroup(const std::string& label);
  Status EndDebugGroup();
  Status ExecutionBarrier();
  Status SignalEvent(Event* event);
  Status ResetEvent(Event* event);
  Status WaitEvents(std::span<Event* const> events);
  // Pattern of 1, 2 or 4 bytes; length and the offset in the allocation (a
  // subspan's own offset counts; a slot's, at submission) multiples of it.
  Status FillBuffer(const BufferRef& target, const void* pattern,
                    size_t pattern_length);
  // Copies `target.length` bytes from `source` now (at most kMaxUpdateBytes);
  // the caller may reuse `source` once this returns.
  Status UpdateBuffer(const void* source, const BufferRef& target);
  Status CopyBuffer(const BufferRef& source, const BufferRef& target,
                    DeviceSize length);
  // Records a dispatch (category kDispatch). INVALID_ARGUMENT for a null
  // executable, a constant or binding count that differs from the function's,
  // a workgroup count above kMaxWorkgroupCount, a misaligned binding or
  // indirect offset, or a buffer lacking the usage listed at DispatchParams;
  // OUT_OF_RANGE for an entry point at or above function_count() or a range
  // outside its buffer (the indirect record needs 12 bytes).
  Status Dispatch(const DispatchParams& params);

  bool is_recording() const { return state_ == State::kRecording; }
  bool is_executable() const { return state_ == State::kExecutable; }
  CommandList commands() const { return CommandList(blocks_.data(), count_); }
  // Distinct objects retained by the resource set.
  size_t retained_count() const { return retained_count_; }
  // The resource-set cache set that `object` maps to.
  static size_t RetainCacheSetForTesting(const RefCounted* object) {
    return static_cast<size_t>(
        (reinterpret_cast<uintptr_t>(object) * 0x9E3779B97F4A7C15ull) >>
        (64 - kRetainCacheBits));
  }

  // Called by queue_execute: checks the state (ended; one-shot not yet
  // submitted), the table size and every slot reference's range and usage.
  // On success a one-shot command buffer is marked submitted.
  Status ValidateSubmission(BindingTable table);
  // Narrows `*affinity` to the queues every buffer the commands use allows
  // (Buffer::queue_affinity; slots resolved through `table`; slots out of
  // it are left to ValidateSubmission, which is called after this so that a
  // refused submission leaves a one-shot command buffer submittable);
  // INVALID_ARGUMENT, naming the command, when no queue is left.
  Status NarrowAffinity(BindingTable table, QueueAffinity* affinity) const;

  // Resolves a recorded reference (validated by ValidateSubmission against
  // `table`), without checks: for use at submission, e.g. to plan hazards.
  // Work that runs later resolves with utils::ResolveBufferRef
  // (hal/utils/buffer_ref_resolve.h), which checks first and then calls this.
  static ResolvedRef ResolveRef(const BufferRef& ref, BindingTable table);

 protected:
  CommandBuffer(CommandBufferMode mode, CommandCategory categories,
                QueueAffinity affinity, uint32_t binding_capacity,
                Ref<BlockPool> pool)
      : mode_(mode),
        categories_(categories),
        affinity_(affinity),
        binding_capacity_(binding_capacity),
        pool_(std::move(pool)) {}
  ~CommandBuffer() override;

 private:
  enum class State { kInitial, kRecording, kExecutable };
  Status CheckRecording(CommandCategory category, const char* what) const;
  // Validates a reference at record time; resolves direct lengths.
  Status ValidateRef(BufferRef& ref, BufferUsage usage, DeviceSize length,
                     const char* what) const;
  Status ValidateSlotRef(const BufferRef& ref, DeviceSize length,
                         BufferUsage usage, BindingTable table,
                         const char* what) const;
  Status ValidateDispatchSubmission(const cmd::Dispatch& d,
                                    BindingTable table) const;
  // The general paths (every check, every error message) behind the inline
  // fast paths of FillBuffer and CopyBuffer.
  Status FillBufferSlow(const BufferRef& target, const void* pattern,
                        size_t pattern_length);
  Status CopyBufferSlow(const BufferRef& source, const BufferRef& target,
                        DeviceSize length);

  // Storage. A new slot for one command (nullptr when out of memory).
  Command* NewSlot() {
    if (cursor_ == slot_end_) return NewSlotBlock();
    ++count_;
    return cursor_++;
  }
  Command* NewSlotBlock();
  // `bytes` of stable storage aligned for any record field; nullptr when
  // out of memory.
  void* AllocateData(size_t bytes);
  // Resource set: retains `object` once per command buffer. A small
  // two-way set-associative cache of recently used pointers answers most
  // lookups with two compares (two ways, so two objects that hash alike do
  // not evict each other on every command); a miss looks the object up in
  // the exact set (an open-addressing table) and retains it when new.
  void Retain(const RefCounted* object) {
    // Fibonacci hashing: objects allocated at a regular stride (buffers of
    // one size) must not all fall into one set.
    const size_t set = RetainCacheSetForTesting(object);
    if (retain_cache_[set][0] != object && retain_cache_[set][1] != object) {
      RetainSlow(object, set);
    }
  }
  void RetainSlow(const RefCounted* object, size_t set);
  void RetainRef(const BufferRef& ref) {
    if (ref.buffer) Retain(ref.buffer);
  }

  static constexpr int kRetainCacheBits = 4;
  static constexpr size_t kRetainCacheSets = size_t{1} << kRetainCacheBits;

  CommandBufferMode mode_;
  CommandCategory categories_;
  QueueAffinity affinity_;
  uint32_t binding_capacity_;
  State state_ = State::kInitial;
  int debug_depth_ = 0;
  std::atomic<bool> submitted_{false};
  Ref<BlockPool> pool_;
  // Command slots: blocks_[i / kPerBlock][i % kPerBlock].
  std::vector<Command*> blocks_;
  Command* cursor_ = nullptr;
  Command* slot_end_ = nullptr;
  size_t count_ = 0;
  // Variable-size data (bump allocated in pool blocks; larger pieces on the
  // heap).
  std::vector<void*> data_blocks_;
  std::vector<void*> large_data_;
  uint8_t* data_cursor_ = nullptr;
  uint8_t* data_end_ = nullptr;
  const RefCounted* retain_cache_[kRetainCacheSets][2] = {};
  // The exact set: power-of-two capacity, linear probing, at most half full.
  std::vector<const RefCounted*> retained_;
  size_t retained_count_ = 0;
};

}  // namespace hal
