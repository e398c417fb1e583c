#include "hal/buffer.h"

#include <cstring>
#include <limits>

#include "hal/allocator.h"

namespace hal {

const char* BufferStateName(BufferState state) {
  switch (state) {
    case BufferState::kReserved:
      return "reserved (queue_alloca not committed)";
    case BufferState::kLive:
      return "live";
    case BufferState::kDeallocaQueued:
      return "dealloca queued";
    case BufferState::kFreed:
      return "freed by dealloca";
  }
  return "unknown";
}

// A window onto another buffer. All memory operations forward to the
// allocated buffer, so the hooks below are never reached.
class Buffer::SubspanBuffer final : public Buffer {
 public:
  SubspanBuffer(Ref<Buffer> parent, DeviceSize offset, DeviceSize length)
      : Buffer(std::move(parent), offset, length) {}

 protected:
  StatusOr<uint8_t*> MapImpl(DeviceSize, DeviceSize, MemoryAccess) override {
    return InternalError("subspan MapImpl reached");
  }
  Status UnmapImpl(DeviceSize, DeviceSize, MemoryAccess) override {
    return InternalError("subspan UnmapImpl reached");
  }
  Status FlushImpl(DeviceSize, DeviceSize) override {
    return InternalError("subspan FlushImpl reached");
  }
  Status InvalidateImpl(DeviceSize, DeviceSize) override {
    return InternalError("subspan InvalidateImpl reached");
  }
};

Buffer::Buffer(const Params& params)
    : allocator_(params.allocator),
      memory_type_(params.memory_type),
      allowed_usage_(params.allowed_usage),
      allowed_access_(params.allowed_access),
      queue_affinity_(params.queue_affinity),
      byte_length_(params.byte_length),
      state_word_(
          static_cast<uint32_t>(params.initial_state) |
          (params.initial_state == BufferState::kLive ? kCommittedBit : 0)) {}

Buffer::Buffer(Ref<Buffer> parent, DeviceSize offset, DeviceSize length)
    : parent_(parent->allocated_buffer()),
      memory_type_(parent->memory_type_),
      allowed_usage_(parent->allowed_usage_),
      allowed_access_(parent->allowed_access_),
      queue_affinity_(parent->queue_affinity_),
      byte_offset_(parent->byte_offset_ + offset),
      byte_length_(length) {}

Buffer::~Buffer() = default;

StatusOr<Ref<Buffer>> Buffer::Subspan(DeviceSize offset, DeviceSize length) {
  DeviceSize resolved = 0;
  if (!ResolveRange(byte_length_, offset, length, &resolved)) {
    return OutOfRangeError(
        "subspan [%llu, +%llu) is outside the buffer of %llu bytes",
        (unsigned long long)offset, (unsigned long long)length,
        (unsigned long long)byte_length_);
  }
  return Ref<Buffer>::Adopt(
      new SubspanBuffer(Ref<Buffer>(this), offset, resolved));
}

Status Buffer::ValidateLive(const char* what) const {
  BufferState s = state();
  if (s == BufferState::kLive) return OkStatus();
  if (s == BufferState::kReserved) {
    // Queue operations may use a reserved buffer (their waits order them
    // after the alloca); only the host may not touch it yet.
    return FailedPreconditionError("%s: buffer is %s", what,
                                   BufferStateName(s));
  }
  return FailedPreconditionError("%s: buffer used after dealloca (%s)", what,
                                 BufferStateName(s));
}

Status Buffer::ValidateAccess(BufferUsage required_usage, DeviceSize offset,
                              DeviceSize length, DeviceSize* out_length,
                              const char* what) const {
  if (!AllOf(allowed_usage_, required_usage)) {
    return InvalidArgumentError(
        "%s: buffer usage %s lacks %s", what,
        BufferUsageString(allowed_usage_).c_str(),
        BufferUsageString(required_usage & ~allowed_usage_).c_str());
  }
  BufferState s = state();
  if (s == BufferState::kDeallocaQueued || s == BufferState::kFreed) {
    return FailedPreconditionError("%s: buffer used after dealloca (%s)", what,
                                   BufferStateName(s));
  }
  if (!ResolveRange(byte_length_, offset, length, out_length)) {
    return OutOfRangeError(
        "%s: range [%llu, +%llu) is outside the buffer of %llu bytes", what,
        (unsigned long long)offset, (unsigned long long)length,
        (unsigned long long)byte_length_);
  }
  return OkStatus();
}

bool Buffer::TransitionState(BufferState from, BufferState to) {
  std::atomic<uint32_t>& word = allocated_buffer()->state_word_;
  uint32_t cur = word.load(std::memory_order_acquire);
  uint32_t next;
  do {
    if ((cur & kStateMask) != static_cast<uint32_t>(from)) return false;
    next = (cur & ~kStateMask) | static_cast<uint32_t>(to);
    if (to == BufferState::kLive) next |= kCommittedBit;
    if (to == BufferState::kFreed) next &= ~kCommittedBit;
  } while (!word.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                       std::memory_order_acquire));
  return true;
}

Status Buffer::BeginDealloca() {
  std::atomic<uint32_t>& word = allocated_buffer()->state_word_;
  uint32_t cur = word.load(std::memory_order_acquire);
  uint32_t next;
  do {
    auto state = static_cast<BufferState>(cur & kStateMask);
    if (state != BufferState::kLive && state != BufferState::kReserved) {
      return FailedPreconditionError("queue_dealloca: buffer is %s",
                                     BufferStateName(state));
    }
    next = (cur & ~kStateMask) |
           static_cast<uint32_t>(BufferState::kDeallocaQueued);
  } while (!word.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                       std::memory_order_acquire));
  return OkStatus();
}

void Buffer::CancelDealloca() {
  std::atomic<uint32_t>& word = allocated_buffer()->state_word_;
  uint32_t cur = word.load(std::memory_order_acquire);
  uint32_t next;
  do {
    if ((cur & kStateMask) !=
        static_cast<uint32_t>(BufferState::kDeallocaQueued)) {
      return;
    }
    BufferState back =
        (cur & kCommittedBit) ? BufferState::kLive : BufferState::kReserved;
    next = (cur & ~kStateMask) | static_cast<uint32_t>(back);
  } while (!word.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                       std::memory_order_acquire));
}

void Buffer::MarkCommitted() {
  std::atomic<uint32_t>& word = allocated_buffer()->state_word_;
  uint32_t cur = word.load(std::memory_order_acquire);
  uint32_t next;
  do {
    // A buffer freed already (an alloca completing after a misordered
    // dealloca) stays freed.
    if ((cur & kStateMask) == static_cast<uint32_t>(BufferState::kFreed)) {
      return;
    }
    next = cur | kCommittedBit;
    if ((cur & kStateMask) == static_cast<uint32_t>(BufferState::kReserved)) {
      next = (next & ~kStateMask) | static_cast<uint32_t>(BufferState::kLive);
    }
  } while (!word.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                       std::memory_order_acquire));
}

void Buffer::MarkFreed() {
  TransitionState(BufferState::kDeallocaQueued, BufferState::kFreed);
}

StatusOr<BufferMapping> Buffer::Map(MappingMode mode, MemoryAccess access,
                                    DeviceSize offset, DeviceSize length) {
  if (!AllOf(memory_type_, MemoryType::kHostVisible)) {
    return InvalidArgumentError(
        "cannot map buffer with memory type %s: it is not HOST_VISIBLE",
        MemoryTypeString(memory_type_).c_str());
  }
  BufferUsage needed = mode == MappingMode::kScoped
                           ? BufferUsage::kMappingScoped
                           : BufferUsage::kMappingPersistent;
  if (!Any(access) || !AllOf(allowed_access_, access)) {
    return InvalidArgumentError(
        "mapping access 0x%x not allowed (allowed 0x%x)",
        static_cast<unsigned>(access), static_cast<unsigned>(allowed_access_));
  }
  DeviceSize resolved = 0;
  HAL_RETURN_IF_ERROR(ValidateAccess(needed, offset, length, &resolved, "map"));
  HAL_RETURN_IF_ERROR(ValidateLive("map"));
  Buffer* root = allocated_buffer();
  DeviceSize root_offset = byte_offset_ + offset;
  HAL_ASSIGN_OR_RETURN(uint8_t * ptr,
                       root->MapImpl(root_offset, resolved, access));
  if (!Any(access & MemoryAccess::kDiscard) &&
      !AllOf(memory_type_, MemoryType::kHostCoherent)) {
    Status s = root->InvalidateImpl(root_offset, resolved);
    if (!s.ok()) {
      root->UnmapImpl(root_offset, resolved, access).IgnoreError();
      return s;
    }
  }
  BufferMapping mapping;
  mapping.buffer_ = Ref<Buffer>(root);
  mapping.offset_ = root_offset;
  mapping.access_ = access;
  mapping.contents_ = std::span<uint8_t>(ptr, resolved);
  return mapping;
}

Status Buffer::MapZero(DeviceSize offset, DeviceSize length) {
  uint8_t zero = 0;
  return MapFill(offset, length, &zero, 1);
}

Status Buffer::MapFill(DeviceSize offset, DeviceSize length,
                       const void* pattern, size_t pattern_length) {
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError("fill pattern length %zu is not 1, 2 or 4",
                                pattern_length);
  }
  if (!pattern) return InvalidArgumentError("fill pattern is null");
  DeviceSize resolved = 0;
  if (!ResolveRange(byte_length_, offset, length, &resolved)) {
    return OutOfRangeError("fill range [%llu, +%llu) outside %llu bytes",
                           (unsigned long long)offset,
                           (unsigned long long)length,
                           (unsigned long long)byte_length_);
  }
  // As for queue fills: the offset in the allocation counts.
  if ((byte_offset_ + offset) % pattern_length || resolved % pattern_length) {
    return InvalidArgumentError(
        "fill offset %llu in the allocation and length %llu must be "
        "multiples of the pattern length %zu",
        (unsigned long long)(byte_offset_ + offset),
        (unsigned long long)resolved, pattern_length);
  }
  if (resolved == 0) return OkStatus();
  HAL_ASSIGN_OR_RETURN(
      BufferMapping m,
      Map(MappingMode::kScoped, MemoryAccess::kDiscardWrite, offset, resolved));
  uint8_t* p = m.data();
  for (DeviceSize i = 0; i < resolved; i += pattern_length) {
    std::memcpy(p + i, pattern, pattern_length);
  }
  return m.Unmap();
}

Status Buffer::MapWrite(DeviceSize offset, const void* source,
                        DeviceSize length) {
  if (length == 0) return OkStatus();
  if (!source) return InvalidArgumentError("write source is null");
  if (length == kWholeBuffer) {
    return InvalidArgumentError("write length must be explicit");
  }
  HAL_ASSIGN_OR_RETURN(
      BufferMapping m,
      Map(MappingMode::kScoped, MemoryAccess::kDiscardWrite, offset, length));
  std::memcpy(m.data(), source, length);
  return m.Unmap();
}

Status Buffer::MapRead(DeviceSize offset, void* target, DeviceSize length) {
  if (length == 0) return OkStatus();
  if (!target) return InvalidArgumentError("read target is null");
  if (length == kWholeBuffer) {
    return InvalidArgumentError("read length must be explicit");
  }
  HAL_ASSIGN_OR_RETURN(
      BufferMapping m,
      Map(MappingMode::kScoped, MemoryAccess::kRead, offset, length));
  std::memcpy(target, m.data(), length);
  return m.Unmap();
}

BufferMapping::BufferMapping(BufferMapping&& other) noexcept
    : buffer_(std::move(other.buffer_)),
      offset_(other.offset_),
      access_(other.access_),
      contents_(std::exchange(other.contents_, {})) {}

BufferMapping& BufferMapping::operator=(BufferMapping&& other) noexcept {
  if (this != &other) {
    Unmap().IgnoreError();
    buffer_ = std::move(other.buffer_);
    offset_ = other.offset_;
    access_ = other.access_;
    contents_ = std::exchange(other.contents_, {});
  }
  return *this;
}

BufferMapping::~BufferMapping() { Unmap().IgnoreError(); }

static Status CheckMappingRange(DeviceSize size, DeviceSize offset,
                                DeviceSize length, DeviceSize* out) {
  if (!ResolveRange(size, offset, length, out)) {
    return OutOfRangeError(
        "range [%llu, +%llu) is outside the mapping of %llu bytes",
        (unsigned long long)offset, (unsigned long long)length,
        (unsigned long long)size);
  }
  return OkStatus();
}

Status BufferMapping::Flush(DeviceSize offset, DeviceSize length) {
  if (!buffer_) return FailedPreconditionError("flush of an unmapped mapping");
  DeviceSize resolved = 0;
  HAL_RETURN_IF_ERROR(CheckMappingRange(size(), offset, length, &resolved));
  if (AllOf(buffer_->memory_type(), MemoryType::kHostCoherent))
    return OkStatus();
  return buffer_->FlushImpl(offset_ + offset, resolved);
}

Status BufferMapping::Invalidate(DeviceSize offset, DeviceSize length) {
  if (!buffer_)
    return FailedPreconditionError("invalidate of an unmapped mapping");
  DeviceSize resolved = 0;
  HAL_RETURN_IF_ERROR(CheckMappingRange(size(), offset, length, &resolved));
  if (AllOf(buffer_->memory_type(), MemoryType::kHostCoherent))
    return OkStatus();
  return buffer_->InvalidateImpl(offset_ + offset, resolved);
}

Status BufferMapping::Unmap() {
  if (!buffer_) return OkStatus();
  Status status;
  if (Any(access_ & MemoryAccess::kWrite) &&
      !AllOf(buffer_->memory_type(), MemoryType::kHostCoherent)) {
    status = buffer_->FlushImpl(offset_, size());
  }
  Status unmap = buffer_->UnmapImpl(offset_, size(), access_);
  if (status.ok()) status = unmap;
  buffer_.reset();
  contents_ = {};
  return status;
}

size_t ElementTypeSize(ElementType type) {
  switch (type) {
    case ElementType::kOpaque8:
    case ElementType::kInt8:
    case ElementType::kUint8:
      return 1;
    case ElementType::kInt16:
    case ElementType::kUint16:
    case ElementType::kFloat16:
      return 2;
    case ElementType::kInt32:
    case ElementType::kUint32:
    case ElementType::kFloat32:
      return 4;
    case ElementType::kInt64:
    case ElementType::kUint64:
    case ElementType::kFloat64:
      return 8;
  }
  return 0;
}

StatusOr<Ref<BufferView>> BufferView::Create(Ref<Buffer> buffer,
                                             std::vector<int64_t> shape,
                                             ElementType element_type) {
  if (!buffer) return InvalidArgumentError("buffer view of a null buffer");
  size_t element_size = ElementTypeSize(element_type);
  if (element_size == 0) return InvalidArgumentError("unknown element type");
  unsigned __int128 bytes = element_size;
  for (int64_t d : shape) {
    if (d < 0)
      return InvalidArgumentError("negative dimension %lld", (long long)d);
    bytes *= static_cast<uint64_t>(d);
    if (bytes > std::numeric_limits<uint64_t>::max()) {
      return InvalidArgumentError("buffer view shape overflows");
    }
  }
  if (static_cast<DeviceSize>(bytes) != buffer->byte_length()) {
    return InvalidArgumentError(
        "buffer view needs %llu bytes but the buffer has %llu",
        (unsigned long long)bytes, (unsigned long long)buffer->byte_length());
  }
  return Ref<BufferView>::Adopt(
      new BufferView(std::move(buffer), std::move(shape), element_type));
}

DeviceSize BufferView::element_count() const {
  DeviceSize n = 1;
  for (int64_t d : shape_) n *= static_cast<DeviceSize>(d);
  return n;
}

Status NarrowQueueAffinity(const Buffer* buffer, const char* what,
                           QueueAffinity* affinity) {
  if (!buffer) return OkStatus();
  const QueueAffinity both = *affinity & buffer->queue_affinity();
  if (both == 0) {
    return InvalidArgumentError(
        "%s: the buffer's queue affinity 0x%llx allows none of the "
        "operation's queues 0x%llx",
        what, (unsigned long long)buffer->queue_affinity(),
        (unsigned long long)*affinity);
  }
  *affinity = both;
  return OkStatus();
}

}  // namespace hal
