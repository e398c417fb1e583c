#include "hal/command_buffer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

namespace hal {

StatusOr<Ref<CommandBuffer>> CommandBuffer::Create(CommandBufferMode mode,
                                                   CommandCategory categories,
                                                   QueueAffinity affinity,
                                                   uint32_t binding_capacity,
                                                   BlockPool* pool) {
  if (!Any(categories)) {
    return InvalidArgumentError("command buffer needs at least one category");
  }
  if (Any(categories & ~CommandCategory::kAny)) {
    return InvalidArgumentError("unknown command category bits 0x%x",
                                static_cast<unsigned>(categories));
  }
  if (mode != CommandBufferMode::kOneShot &&
      mode != CommandBufferMode::kReusable) {
    return InvalidArgumentError("unknown command buffer mode %u",
                                static_cast<unsigned>(mode));
  }
  if (affinity == 0) {
    return InvalidArgumentError("command buffer queue affinity is empty");
  }
  return Ref<CommandBuffer>::Adopt(
      new CommandBuffer(mode, categories, affinity, binding_capacity,
                        Ref<BlockPool>(pool ? pool : BlockPool::Default())));
}

CommandBuffer::~CommandBuffer() {
  for (const RefCounted* object : retained_) {
    if (object) object->Release();
  }
  for (Command* block : blocks_) pool_->ReleaseBlock(block);
  for (void* block : data_blocks_) pool_->ReleaseBlock(block);
  for (void* p : large_data_) ::operator delete(p);
}

// Storage. Command slots are fixed-size, so commands()[i] is one division;
// blocks come from the pool, so a steady stream of command buffers reuses
// the same memory (no reallocation, no page faults).

Command* CommandBuffer::NewSlotBlock() {
  void* block = pool_->AcquireBlock();
  if (!block) return nullptr;
  blocks_.push_back(static_cast<Command*>(block));
  cursor_ = static_cast<Command*>(block);
  slot_end_ = cursor_ + CommandList::kPerBlock;
  ++count_;
  return cursor_++;
}

void* CommandBuffer::AllocateData(size_t bytes) {
  constexpr size_t kAlign = 16;
  bytes = (bytes + kAlign - 1) & ~(kAlign - 1);
  if (bytes > BlockPool::kBlockSize / 4) {
    // Large pieces (update payloads near the 64 KiB limit, long labels or
    // event lists) would waste most of a block.
    void* p = ::operator new(bytes, std::nothrow);
    if (p) large_data_.push_back(p);
    return p;
  }
  if (static_cast<size_t>(data_end_ - data_cursor_) < bytes) {
    void* block = pool_->AcquireBlock();
    if (!block) return nullptr;
    data_blocks_.push_back(block);
    data_cursor_ = static_cast<uint8_t*>(block);
    data_end_ = data_cursor_ + BlockPool::kBlockSize;
  }
  void* p = data_cursor_;
  data_cursor_ += bytes;
  return p;
}

namespace {
// Fibonacci hashing of a pointer into a power-of-two table (the upper half
// of the product mixes every bit of the address).
size_t PointerSlot(const void* p, size_t mask) {
  return static_cast<size_t>(
             (reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull) >> 32) &
         mask;
}
}  // namespace

void CommandBuffer::RetainSlow(const RefCounted* object, size_t set) {
  // The newest entry takes way 0; the older one moves to way 1.
  retain_cache_[set][1] = retain_cache_[set][0];
  retain_cache_[set][0] = object;
  if (2 * (retained_count_ + 1) > retained_.size()) {
    // Grow to keep the table at most half full (probes stay short).
    std::vector<const RefCounted*> old(
        std::max<size_t>(16, 2 * retained_.size()), nullptr);
    old.swap(retained_);
    const size_t mask = retained_.size() - 1;
    for (const RefCounted* o : old) {
      if (!o) continue;
      size_t i = PointerSlot(o, mask);
      while (retained_[i]) i = (i + 1) & mask;
      retained_[i] = o;
    }
  }
  const size_t mask = retained_.size() - 1;
  size_t i = PointerSlot(object, mask);
  while (retained_[i]) {
    if (retained_[i] == object) return;  // already retained
    i = (i + 1) & mask;
  }
  object->AddRef();
  retained_[i] = object;
  ++retained_count_;
}

namespace {
Status OutOfStorage(const char* what) {
  return ResourceExhaustedError(
      "%s: out of memory for the command buffer's storage", what);
}
}  // namespace

Status CommandBuffer::Begin() {
  if (state_ != State::kInitial) {
    return FailedPreconditionError(
        "command buffer Begin: already %s",
        state_ == State::kRecording ? "recording" : "ended");
  }
  state_ = State::kRecording;
  return OkStatus();
}

Status CommandBuffer::End() {
  if (state_ != State::kRecording) {
    return FailedPreconditionError("command buffer End: not recording");
  }
  if (debug_depth_ != 0) {
    return FailedPreconditionError("command buffer End: %d debug group(s) open",
                                   debug_depth_);
  }
  state_ = State::kExecutable;
  return OkStatus();
}

Status CommandBuffer::CheckRecording(CommandCategory category,
                                     const char* what) const {
  if (state_ != State::kRecording) {
    return FailedPreconditionError(
        "%s: command buffer is not recording (%s)", what,
        state_ == State::kInitial ? "Begin not called" : "already ended");
  }
  if (Any(category) && !AllOf(categories_, category)) {
    return InvalidArgumentError(
        "%s: command buffer categories 0x%x do not allow this command", what,
        static_cast<unsigned>(categories_));
  }
  return OkStatus();
}

Status CommandBuffer::BeginDebugGroup(const std::string& label) {
  HAL_RETURN_IF_ERROR(
      CheckRecording(CommandCategory::kNone, "BeginDebugGroup"));
  char* copy = nullptr;
  if (!label.empty()) {
    copy = static_cast<char*>(AllocateData(label.size()));
    if (!copy) return OutOfStorage("BeginDebugGroup");
    std::memcpy(copy, label.data(), label.size());
  }
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("BeginDebugGroup");
  ++debug_depth_;
  new (slot)
      Command(cmd::BeginDebugGroup{std::string_view(copy, label.size())});
  return OkStatus();
}

Status CommandBuffer::EndDebugGroup() {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kNone, "EndDebugGroup"));
  if (debug_depth_ == 0) {
    return FailedPreconditionError("EndDebugGroup without BeginDebugGroup");
  }
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("EndDebugGroup");
  --debug_depth_;
  new (slot) Command(cmd::EndDebugGroup{});
  return OkStatus();
}

Status CommandBuffer::ExecutionBarrier() {
  HAL_RETURN_IF_ERROR(
      CheckRecording(CommandCategory::kNone, "ExecutionBarrier"));
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("ExecutionBarrier");
  new (slot) Command(cmd::Barrier{});
  return OkStatus();
}

Status CommandBuffer::SignalEvent(Event* event) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kNone, "SignalEvent"));
  if (!event) return InvalidArgumentError("SignalEvent: event is null");
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("SignalEvent");
  Retain(event);
  new (slot) Command(cmd::SignalEvent{event});
  return OkStatus();
}

Status CommandBuffer::ResetEvent(Event* event) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kNone, "ResetEvent"));
  if (!event) return InvalidArgumentError("ResetEvent: event is null");
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("ResetEvent");
  Retain(event);
  new (slot) Command(cmd::ResetEvent{event});
  return OkStatus();
}

Status CommandBuffer::WaitEvents(std::span<Event* const> events) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kNone, "WaitEvents"));
  if (events.empty()) return InvalidArgumentError("WaitEvents: no events");
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i])
      return InvalidArgumentError("WaitEvents: event %zu is null", i);
  }
  auto* list =
      static_cast<Event**>(AllocateData(events.size() * sizeof(Event*)));
  Command* slot = list ? NewSlot() : nullptr;
  if (!slot) return OutOfStorage("WaitEvents");
  for (size_t i = 0; i < events.size(); ++i) {
    list[i] = events[i];
    Retain(events[i]);
  }
  new (slot)
      Command(cmd::WaitEvents{std::span<Event* const>(list, events.size())});
  return OkStatus();
}

Status CommandBuffer::ValidateRef(BufferRef& ref, BufferUsage usage,
                                  DeviceSize length, const char* what) const {
  if (ref.is_slot()) {
    if (ref.slot >= binding_capacity_) {
      return InvalidArgumentError(
          "%s: binding slot %u is not below the binding capacity %u", what,
          ref.slot, binding_capacity_);
    }
    if (ref.length != kWholeBuffer && length != kWholeBuffer &&
        length > ref.length) {
      return OutOfRangeError("%s: %llu bytes do not fit the slot range of %llu",
                             what, (unsigned long long)length,
                             (unsigned long long)ref.length);
    }
    return OkStatus();
  }
  DeviceSize resolved = 0;
  HAL_RETURN_IF_ERROR(ref.buffer->ValidateAccess(usage, ref.offset, ref.length,
                                                 &resolved, what));
  if (length != kWholeBuffer && length > resolved) {
    return OutOfRangeError(
        "%s: %llu bytes at offset %llu do not fit the buffer of %llu bytes",
        what, (unsigned long long)length, (unsigned long long)ref.offset,
        (unsigned long long)ref.buffer->byte_length());
  }
  ref.length = resolved;
  return OkStatus();
}

// The common valid case in a few compares; anything else (slots, and every
// error with its message) takes FillBufferSlow.
Status CommandBuffer::FillBuffer(const BufferRef& target, const void* pattern,
                                 size_t pattern_length) {
  Buffer* b = target.buffer;
  DeviceSize length;
  if (state_ == State::kRecording &&
      AllOf(categories_, CommandCategory::kTransfer) && b && pattern &&
      (pattern_length == 1 || pattern_length == 2 || pattern_length == 4) &&
      b->CheckAccess(BufferUsage::kTransferTarget, target.offset, target.length,
                     &length) &&
      (((b->byte_offset() + target.offset) | length) & (pattern_length - 1)) ==
          0) {
    if (Command* slot = NewSlot()) {
      // Fixed-size loads instead of a memcpy call of a variable size.
      uint32_t p;
      if (pattern_length == 4) {
        std::memcpy(&p, pattern, 4);
      } else if (pattern_length == 2) {
        uint16_t p16;
        std::memcpy(&p16, pattern, 2);
        p = p16;
      } else {
        p = *static_cast<const uint8_t*>(pattern);
      }
      Retain(b);
      new (slot) Command(cmd::Fill{BufferRef{b, 0, target.offset, length}, p,
                                   static_cast<uint8_t>(pattern_length)});
      return OkStatus();
    }
  }
  return FillBufferSlow(target, pattern, pattern_length);
}

Status CommandBuffer::FillBufferSlow(const BufferRef& target,
                                     const void* pattern,
                                     size_t pattern_length) {
  HAL_RETURN_IF_ERROR(
      CheckRecording(CommandCategory::kTransfer, "queue_execute: FillBuffer"));
  if (!pattern) return InvalidArgumentError("FillBuffer: pattern is null");
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError(
        "FillBuffer: pattern length %zu is not 1, 2 or 4", pattern_length);
  }
  BufferRef ref = target;
  HAL_RETURN_IF_ERROR(ValidateRef(ref, BufferUsage::kTransferTarget,
                                  kWholeBuffer, "FillBuffer"));
  // Alignment is on the offset in the allocation: a subspan's own offset
  // counts. A slot's base is known at submission (ValidateSubmission).
  DeviceSize base = ref.is_slot() ? 0 : ref.buffer->byte_offset();
  if ((base + ref.offset) % pattern_length ||
      (ref.length != kWholeBuffer && ref.length % pattern_length)) {
    return InvalidArgumentError(
        "FillBuffer: offset %llu in the allocation and length %llu must be "
        "multiples of the pattern length %zu",
        (unsigned long long)(base + ref.offset), (unsigned long long)ref.length,
        pattern_length);
  }
  uint32_t p = 0;
  std::memcpy(&p, pattern, pattern_length);
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("FillBuffer");
  RetainRef(ref);
  new (slot) Command(cmd::Fill{ref, p, static_cast<uint8_t>(pattern_length)});
  return OkStatus();
}

Status CommandBuffer::UpdateBuffer(const void* source,
                                   const BufferRef& target) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kTransfer,
                                     "queue_execute: UpdateBuffer"));
  if (target.length == kWholeBuffer) {
    return InvalidArgumentError(
        "UpdateBuffer: the target length must be explicit");
  }
  if (target.length > kMaxUpdateBytes) {
    return InvalidArgumentError(
        "UpdateBuffer: %llu bytes exceed the limit of %llu",
        (unsigned long long)target.length, (unsigned long long)kMaxUpdateBytes);
  }
  if (!source && target.length) {
    return InvalidArgumentError("UpdateBuffer: source is null");
  }
  BufferRef ref = target;
  HAL_RETURN_IF_ERROR(ValidateRef(ref, BufferUsage::kTransferTarget,
                                  target.length, "UpdateBuffer"));
  uint8_t* copy = nullptr;
  if (target.length) {
    copy = static_cast<uint8_t*>(AllocateData(target.length));
    if (!copy) return OutOfStorage("UpdateBuffer");
    std::memcpy(copy, source, target.length);
  }
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("UpdateBuffer");
  RetainRef(ref);
  new (slot) Command(cmd::Update{
      ref, std::span<const uint8_t>(copy, static_cast<size_t>(target.length))});
  return OkStatus();
}

// The common valid case (two direct references, no overlap) in a few
// compares; anything else takes CopyBufferSlow.
Status CommandBuffer::CopyBuffer(const BufferRef& source,
                                 const BufferRef& target, DeviceSize length) {
  Buffer* sb = source.buffer;
  Buffer* tb = target.buffer;
  DeviceSize source_length, target_length;
  if (state_ == State::kRecording &&
      AllOf(categories_, CommandCategory::kTransfer) && sb && tb &&
      length != kWholeBuffer &&
      sb->CheckAccess(BufferUsage::kTransferSource, source.offset,
                      source.length, &source_length) &&
      length <= source_length &&
      tb->CheckAccess(BufferUsage::kTransferTarget, target.offset,
                      target.length, &target_length) &&
      length <= target_length) {
    bool overlap = false;
    if (sb->allocated_buffer() == tb->allocated_buffer()) {
      DeviceSize s = sb->byte_offset() + source.offset;
      DeviceSize d = tb->byte_offset() + target.offset;
      overlap = s < d + length && d < s + length && length;
    }
    Command* slot = overlap ? nullptr : NewSlot();
    if (slot) {
      Retain(sb);
      Retain(tb);
      new (slot) Command(
          cmd::Copy{BufferRef{sb, 0, source.offset, source_length},
                    BufferRef{tb, 0, target.offset, target_length}, length});
      return OkStatus();
    }
  }
  return CopyBufferSlow(source, target, length);
}

Status CommandBuffer::CopyBufferSlow(const BufferRef& source,
                                     const BufferRef& target,
                                     DeviceSize length) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kTransfer, "CopyBuffer"));
  if (length == kWholeBuffer) {
    return InvalidArgumentError("CopyBuffer: length must be explicit");
  }
  BufferRef src = source, dst = target;
  HAL_RETURN_IF_ERROR(ValidateRef(src, BufferUsage::kTransferSource, length,
                                  "queue_execute: CopyBuffer source"));
  HAL_RETURN_IF_ERROR(ValidateRef(dst, BufferUsage::kTransferTarget, length,
                                  "queue_execute: CopyBuffer target"));
  if (!src.is_slot() && !dst.is_slot() &&
      src.buffer->allocated_buffer() == dst.buffer->allocated_buffer()) {
    DeviceSize s = src.buffer->byte_offset() + src.offset;
    DeviceSize d = dst.buffer->byte_offset() + dst.offset;
    if (s < d + length && d < s + length && length) {
      return InvalidArgumentError(
          "CopyBuffer: source and target ranges overlap");
    }
  }
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("CopyBuffer");
  RetainRef(src);
  RetainRef(dst);
  new (slot) Command(cmd::Copy{src, dst, length});
  return OkStatus();
}

namespace {
constexpr DeviceSize kDispatchAlignment = 4;

BufferUsage BindingUsage(const FunctionInfo& f, uint32_t i) {
  return f.binding_read_only(i) ? BufferUsage::kDispatchStorageRead
                                : BufferUsage::kDispatchStorage;
}
}  // namespace

Status CommandBuffer::Dispatch(const DispatchParams& params) {
  HAL_RETURN_IF_ERROR(CheckRecording(CommandCategory::kDispatch, "Dispatch"));
  if (!params.executable)
    return InvalidArgumentError("Dispatch: executable is null");
  HAL_ASSIGN_OR_RETURN(const FunctionInfo* f,
                       params.executable->function(params.entry_point));
  const char* name = f->name.c_str();
  if (params.constants.size() != f->constant_count) {
    return InvalidArgumentError(
        "Dispatch of '%s': %zu constants given, the function takes %u", name,
        params.constants.size(), f->constant_count);
  }
  if (params.bindings.size() != f->binding_count) {
    return InvalidArgumentError(
        "Dispatch of '%s': %zu bindings given, the function takes %u", name,
        params.bindings.size(), f->binding_count);
  }
  cmd::Dispatch d;
  d.executable = params.executable;
  d.entry_point = params.entry_point;
  d.indirect = params.indirect_workgroup_count != nullptr;
  for (int i = 0; i < 3; ++i) {
    d.workgroup_count[i] = d.indirect ? 0 : params.workgroup_count[i];
    if (d.workgroup_count[i] > kMaxWorkgroupCount) {
      return InvalidArgumentError(
          "Dispatch of '%s': workgroup count [%u, %u, %u] exceeds %u in a "
          "dimension",
          name, params.workgroup_count[0], params.workgroup_count[1],
          params.workgroup_count[2], kMaxWorkgroupCount);
    }
  }
  // The context of an error ("Dispatch of 'f': binding 2") is formatted
  // only when there is an error: this is the recording hot path.
  auto context = [name](int binding) {
    char what[96];
    if (binding < 0) {
      std::snprintf(what, sizeof(what),
                    "Dispatch of '%s': indirect workgroup count", name);
    } else {
      std::snprintf(what, sizeof(what), "Dispatch of '%s': binding %d", name,
                    binding);
    }
    return std::string(what);
  };
  // One piece of storage for the references (the indirect one first) and
  // the constants; an error below leaves it unused until the command buffer
  // dies.
  const size_t ref_count = params.bindings.size() + (d.indirect ? 1 : 0);
  void* storage = AllocateData(ref_count * sizeof(BufferRef) +
                               params.constants.size() * sizeof(uint32_t));
  if (!storage) return OutOfStorage("Dispatch");
  BufferRef* refs = static_cast<BufferRef*>(storage);
  uint32_t* constants = reinterpret_cast<uint32_t*>(refs + ref_count);
  BufferRef* bindings = d.indirect ? refs + 1 : refs;
  d.indirect_workgroup_count = nullptr;
  if (d.indirect) {
    BufferRef ref = *params.indirect_workgroup_count;
    Status s = ValidateRef(ref, BufferUsage::kDispatchIndirectParams,
                           kIndirectWorkgroupCountSize, "Dispatch");
    if (!s.ok()) return s.Annotate(context(-1));
    DeviceSize base = ref.is_slot() ? 0 : ref.buffer->byte_offset();
    if ((base + ref.offset) % kDispatchAlignment) {
      return InvalidArgumentError("%s: offset %llu is not 4-byte aligned",
                                  context(-1).c_str(),
                                  (unsigned long long)(base + ref.offset));
    }
    ref.length = kIndirectWorkgroupCountSize;
    refs[0] = ref;
    d.indirect_workgroup_count = &refs[0];
  }
  if (!params.constants.empty()) {
    std::memcpy(constants, params.constants.data(),
                params.constants.size() * sizeof(uint32_t));
  }
  d.constants = std::span<const uint32_t>(constants, params.constants.size());
  for (uint32_t i = 0; i < params.bindings.size(); ++i) {
    BufferRef ref = params.bindings[i];
    // The common valid direct binding in a few compares; the general
    // checks below give every error its message.
    DeviceSize resolved;
    if (ref.buffer &&
        ref.buffer->CheckAccess(BindingUsage(*f, i), ref.offset, ref.length,
                                &resolved) &&
        (ref.buffer->byte_offset() + ref.offset) % kDispatchAlignment == 0) {
      ref.length = resolved;
      bindings[i] = ref;
      continue;
    }
    Status s = ValidateRef(ref, BindingUsage(*f, i), kWholeBuffer, "Dispatch");
    if (!s.ok()) return s.Annotate(context(static_cast<int>(i)));
    DeviceSize base = ref.is_slot() ? 0 : ref.buffer->byte_offset();
    if ((base + ref.offset) % kDispatchAlignment) {
      return InvalidArgumentError("%s: offset %llu is not 4-byte aligned",
                                  context(static_cast<int>(i)).c_str(),
                                  (unsigned long long)(base + ref.offset));
    }
    bindings[i] = ref;
  }
  d.bindings = std::span<const BufferRef>(bindings, params.bindings.size());
  Command* slot = NewSlot();
  if (!slot) return OutOfStorage("Dispatch");
  Retain(params.executable);
  if (d.indirect) RetainRef(refs[0]);
  for (const BufferRef& ref : d.bindings) RetainRef(ref);
  new (slot) Command(d);
  return OkStatus();
}

Status CommandBuffer::ValidateDispatchSubmission(const cmd::Dispatch& d,
                                                 BindingTable table) const {
  const FunctionInfo& f = d.executable->functions()[d.entry_point];
  auto context = [&f](int binding) {
    char what[96];
    if (binding < 0) {
      std::snprintf(what, sizeof(what),
                    "Dispatch of '%s': indirect workgroup count",
                    f.name.c_str());
    } else {
      std::snprintf(what, sizeof(what), "Dispatch of '%s': binding %d",
                    f.name.c_str(), binding);
    }
    return std::string(what);
  };
  if (d.indirect) {
    const BufferRef& indirect = *d.indirect_workgroup_count;
    Status s = ValidateSlotRef(indirect, kIndirectWorkgroupCountSize,
                               BufferUsage::kDispatchIndirectParams, table,
                               "Dispatch");
    if (!s.ok()) return s.Annotate(context(-1));
    if (indirect.is_slot()) {
      ResolvedRef r = ResolveRef(indirect, table);
      if (r.offset % kDispatchAlignment) {
        return InvalidArgumentError(
            "%s: slot %u resolves to offset %llu, not 4-byte aligned",
            context(-1).c_str(), indirect.slot, (unsigned long long)r.offset);
      }
    }
  }
  for (uint32_t i = 0; i < d.bindings.size(); ++i) {
    const BufferRef& ref = d.bindings[i];
    Status s = ValidateSlotRef(ref, kWholeBuffer, BindingUsage(f, i), table,
                               "Dispatch");
    if (!s.ok()) return s.Annotate(context(static_cast<int>(i)));
    if (ref.is_slot()) {
      ResolvedRef r = ResolveRef(ref, table);
      if (r.offset % kDispatchAlignment) {
        return InvalidArgumentError(
            "%s: slot %u resolves to offset %llu, not 4-byte aligned",
            context(static_cast<int>(i)).c_str(), ref.slot,
            (unsigned long long)r.offset);
      }
    }
  }
  return OkStatus();
}

Status CommandBuffer::ValidateSlotRef(const BufferRef& ref, DeviceSize length,
                                      BufferUsage usage, BindingTable table,
                                      const char* what) const {
  if (!ref.is_slot()) {
    // Direct buffers were validated at record time; only their state may
    // have changed since (a dealloca).
    return ref.buffer->ValidateAccess(usage, ref.offset, ref.length, &length,
                                      what);
  }
  const Binding& b = table[ref.slot];
  if (!b.buffer) {
    return InvalidArgumentError("%s: binding table slot %u is empty", what,
                                ref.slot);
  }
  DeviceSize entry_length = 0;
  HAL_RETURN_IF_ERROR(
      b.buffer->ValidateAccess(usage, b.offset, b.length, &entry_length, what));
  DeviceSize resolved = 0;
  if (!ResolveRange(entry_length, ref.offset, ref.length, &resolved) ||
      (length != kWholeBuffer && length > resolved)) {
    return OutOfRangeError(
        "%s: range [%llu, +%llu) is outside binding slot %u of %llu bytes",
        what, (unsigned long long)ref.offset,
        (unsigned long long)(length != kWholeBuffer ? length : ref.length),
        ref.slot, (unsigned long long)entry_length);
  }
  return OkStatus();
}

Status CommandBuffer::ValidateSubmission(BindingTable table) {
  if (state_ != State::kExecutable) {
    return FailedPreconditionError(
        "queue_execute: command buffer was not ended");
  }
  if (mode_ == CommandBufferMode::kOneShot && submitted_.load()) {
    return FailedPreconditionError(
        "queue_execute: one-shot command buffer was already submitted");
  }
  if (table.size() < binding_capacity_) {
    return InvalidArgumentError(
        "queue_execute: binding table has %zu entries, the command buffer "
        "needs %u",
        table.size(), binding_capacity_);
  }
  for (const Command& c : commands()) {
    Status s;
    if (auto* f = std::get_if<cmd::Fill>(&c)) {
      s = ValidateSlotRef(f->target, kWholeBuffer, BufferUsage::kTransferTarget,
                          table, "FillBuffer");
      if (s.ok() && f->target.is_slot()) {
        ResolvedRef r = ResolveRef(f->target, table);
        if (r.offset % f->pattern_length || r.length % f->pattern_length) {
          s = InvalidArgumentError(
              "FillBuffer: slot %u range is not a multiple of the pattern "
              "length %u",
              f->target.slot, f->pattern_length);
        }
      }
    } else if (auto* u = std::get_if<cmd::Update>(&c)) {
      s = ValidateSlotRef(u->target, u->target.length,
                          BufferUsage::kTransferTarget, table, "UpdateBuffer");
    } else if (auto* cp = std::get_if<cmd::Copy>(&c)) {
      s = ValidateSlotRef(cp->source, cp->length, BufferUsage::kTransferSource,
                          table, "CopyBuffer source");
      if (s.ok()) {
        s = ValidateSlotRef(cp->target, cp->length,
                            BufferUsage::kTransferTarget, table,
                            "CopyBuffer target");
      }
      if (s.ok() && (cp->source.is_slot() || cp->target.is_slot()) &&
          cp->length) {
        ResolvedRef a = ResolveRef(cp->source, table);
        ResolvedRef b = ResolveRef(cp->target, table);
        if (a.buffer == b.buffer && a.offset < b.offset + cp->length &&
            b.offset < a.offset + cp->length) {
          s = InvalidArgumentError(
              "CopyBuffer: source and target ranges overlap");
        }
      }
    } else if (auto* d = std::get_if<cmd::Dispatch>(&c)) {
      s = ValidateDispatchSubmission(*d, table);
    }
    HAL_RETURN_IF_ERROR(s);
  }
  if (mode_ == CommandBufferMode::kOneShot && submitted_.exchange(true)) {
    return FailedPreconditionError(
        "queue_execute: one-shot command buffer was already submitted");
  }
  return OkStatus();
}

Status CommandBuffer::NarrowAffinity(BindingTable table,
                                     QueueAffinity* affinity) const {
  auto narrow = [&](const BufferRef& ref, const char* what) -> Status {
    // Slots out of the table are ValidateSubmission's to report.
    if (ref.is_slot() && ref.slot >= table.size()) return OkStatus();
    return NarrowQueueAffinity(
        ref.is_slot() ? table[ref.slot].buffer : ref.buffer, what, affinity);
  };
  for (const Command& c : commands()) {
    if (auto* f = std::get_if<cmd::Fill>(&c)) {
      HAL_RETURN_IF_ERROR(narrow(f->target, "queue_execute: FillBuffer"));
    } else if (auto* u = std::get_if<cmd::Update>(&c)) {
      HAL_RETURN_IF_ERROR(narrow(u->target, "queue_execute: UpdateBuffer"));
    } else if (auto* cp = std::get_if<cmd::Copy>(&c)) {
      HAL_RETURN_IF_ERROR(
          narrow(cp->source, "queue_execute: CopyBuffer source"));
      HAL_RETURN_IF_ERROR(
          narrow(cp->target, "queue_execute: CopyBuffer target"));
    } else if (auto* d = std::get_if<cmd::Dispatch>(&c)) {
      for (const BufferRef& b : d->bindings) {
        HAL_RETURN_IF_ERROR(narrow(b, "queue_execute: Dispatch binding"));
      }
      if (d->indirect && d->indirect_workgroup_count) {
        HAL_RETURN_IF_ERROR(narrow(*d->indirect_workgroup_count,
                                   "queue_execute: Dispatch workgroup count"));
      }
    }
  }
  return OkStatus();
}

ResolvedRef CommandBuffer::ResolveRef(const BufferRef& ref,
                                      BindingTable table) {
  Buffer* buffer;
  DeviceSize base, window;
  if (ref.is_slot()) {
    const Binding& b = table[ref.slot];
    buffer = b.buffer;
    base = b.offset;
    ResolveRange(b.buffer->byte_length(), b.offset, b.length, &window);
  } else {
    buffer = ref.buffer;
    base = 0;
    window = buffer->byte_length();
  }
  DeviceSize length = 0;
  ResolveRange(window, ref.offset, ref.length, &length);
  return ResolvedRef{buffer->allocated_buffer(),
                     buffer->byte_offset() + base + ref.offset, length};
}

}  // namespace hal
