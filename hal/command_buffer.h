// Command buffers: recorded once, submitted with queue_execute.
//
// Every driver records into this one deferred command buffer; validation
// happens here, at record time for direct buffer references and at submit
// time (ValidateSubmission) for binding-table slots. Drivers replay the
// command list (Commands()) onto their queues, resolving slots with
// ResolveRef.
//
// Semantics: commands between two execution barriers may run in any order
// and may overlap; events order a signal before later waits.
//
// Thread safety: recording is single-threaded (one thread at a time, no
// concurrent calls). A command buffer that ended may be submitted from any
// thread, also concurrently when reusable.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

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
// relative to the table entry's range.
struct BufferRef {
  Ref<Buffer> buffer;  // null: use `slot`
  uint32_t slot = 0;
  DeviceSize offset = 0;
  DeviceSize length = kWholeBuffer;

  static BufferRef Direct(Buffer* b, DeviceSize offset = 0,
                          DeviceSize length = kWholeBuffer) {
    return BufferRef{Ref<Buffer>(b), 0, offset, length};
  }
  static BufferRef Slot(uint32_t slot, DeviceSize offset = 0,
                        DeviceSize length = kWholeBuffer) {
    return BufferRef{nullptr, slot, offset, length};
  }
  bool is_slot() const { return !buffer; }
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

namespace cmd {
struct Barrier {};
struct SignalEvent { Ref<Event> event; };
struct ResetEvent { Ref<Event> event; };
struct WaitEvents { std::vector<Ref<Event>> events; };
struct Fill {
  BufferRef target;  // length resolved for direct buffers
  uint32_t pattern;
  uint8_t pattern_length;
};
struct Update {
  BufferRef target;
  size_t data_offset;  // into CommandBuffer::data()
};
struct Copy {
  BufferRef source;
  BufferRef target;
  DeviceSize length;
};
struct Dispatch {
  Ref<Executable> executable;
  uint32_t entry_point;
  uint32_t workgroup_count[3];
  bool indirect;
  BufferRef indirect_workgroup_count;  // length kIndirectWorkgroupCountSize
  std::vector<uint32_t> constants;
  std::vector<BufferRef> bindings;  // direct lengths resolved
};
struct BeginDebugGroup { std::string label; };
struct EndDebugGroup {};
}  // namespace cmd

using Command = std::variant<cmd::Barrier, cmd::SignalEvent, cmd::ResetEvent,
                             cmd::WaitEvents, cmd::Fill, cmd::Update, cmd::Copy,
                             cmd::BeginDebugGroup, cmd::EndDebugGroup,
                             cmd::Dispatch>;

class CommandBuffer : public RefCounted {
 public:
  // INVALID_ARGUMENT for an empty category or affinity.
  static StatusOr<Ref<CommandBuffer>> Create(CommandBufferMode mode,
                                             CommandCategory categories,
                                             QueueAffinity affinity,
                                             uint32_t binding_capacity);

  CommandBufferMode mode() const { return mode_; }
  CommandCategory categories() const { return categories_; }
  QueueAffinity queue_affinity() const { return affinity_; }
  uint32_t binding_capacity() const { return binding_capacity_; }

  // Recording. Each returns FAILED_PRECONDITION outside Begin/End.
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
  const std::vector<Command>& commands() const { return commands_; }
  const std::vector<uint8_t>& data() const { return data_; }

  // Called by queue_execute: checks the state (ended; one-shot not yet
  // submitted), the table size and every slot reference's range and usage.
  // On success a one-shot command buffer is marked submitted.
  Status ValidateSubmission(BindingTable table);

  // Resolves a recorded reference (validated by ValidateSubmission).
  static ResolvedRef ResolveRef(const BufferRef& ref, BindingTable table);

 protected:
  CommandBuffer(CommandBufferMode mode, CommandCategory categories,
                QueueAffinity affinity, uint32_t binding_capacity)
      : mode_(mode),
        categories_(categories),
        affinity_(affinity),
        binding_capacity_(binding_capacity) {}

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

  CommandBufferMode mode_;
  CommandCategory categories_;
  QueueAffinity affinity_;
  uint32_t binding_capacity_;
  State state_ = State::kInitial;
  int debug_depth_ = 0;
  std::atomic<bool> submitted_{false};
  std::vector<Command> commands_;
  std::vector<uint8_t> data_;
};

}  // namespace hal
