// MetalBuffer (metal_buffer.h): storage modes, mapping, and the host writes
// a Managed buffer announces to the GPU.
#include "drivers/metal/metal_buffer.h"

namespace hal::metal {
namespace {

// Every MTLBuffer starts on a page: 4 KiB at least (16 KiB on Apple
// silicon). A larger alignment over-allocates and offsets the buffer.
constexpr DeviceSize kPageAlignment = 4096;

}  // namespace

MetalBuffer::MetalBuffer(const Params& params, id<MTLDevice> device,
                         DeviceSize alignment, bool managed)
    : Buffer(params),
      device_([device retain]),
      alignment_(alignment),
      managed_(managed && AllOf(params.memory_type, MemoryType::kHostVisible)),
      coherent_(AllOf(params.memory_type, MemoryType::kHostCoherent)) {}

Status MetalBuffer::Commit() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_) return OkStatus();
  const bool host_visible = AllOf(memory_type(), MemoryType::kHostVisible);
  const MTLResourceOptions options =
      !host_visible ? MTLResourceStorageModePrivate
                    : (managed_ ? MTLResourceStorageModeManaged
                                : MTLResourceStorageModeShared);
  const DeviceSize pad =
      host_visible && alignment_ > kPageAlignment ? alignment_ : 0;
  @autoreleasepool {
    buffer_ = [device_ newBufferWithLength:(NSUInteger)(byte_length() + pad)
                                   options:options];
  }
  if (!buffer_) {
    return ResourceExhaustedError(
        "Metal: newBufferWithLength:%llu options:%lu returned nil",
        (unsigned long long)(byte_length() + pad), (unsigned long)options);
  }
  if (pad) {
    const auto base = reinterpret_cast<uintptr_t>([buffer_ contents]);
    offset_ = (alignment_ - base % alignment_) % alignment_;
  }
  allocator()->RecordAllocate(memory_type(), byte_length());
  return OkStatus();
}

void MetalBuffer::AdoptImported(id<MTLBuffer> buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffer_ = buffer;
  imported_ = true;
}

id<MTLBuffer> MetalBuffer::mtl() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return [[buffer_ retain] autorelease];
}

DeviceSize MetalBuffer::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}

void MetalBuffer::AnnounceOpenWrites() {
  if (!managed_ || !coherent_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!buffer_) return;
  for (const auto& [offset, length] : open_writes_) {
    if (length) [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
  }
}

void MetalBuffer::Decommit() {
  id<MTLBuffer> buffer;
  bool imported;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffer = buffer_;
    buffer_ = nil;
    imported = imported_;
  }
  if (!buffer) return;
  if (!imported) allocator()->RecordFree(memory_type(), byte_length());
  @autoreleasepool {
    [buffer release];
  }
}

MetalBuffer::~MetalBuffer() {
  Decommit();
  [device_ release];
  if (release_) release_();
}

StatusOr<uint8_t*> MetalBuffer::MapImpl(DeviceSize offset, DeviceSize length,
                                        MemoryAccess access) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!buffer_) {
    return FailedPreconditionError(
        "Metal: the buffer has no memory (not committed, or released by a "
        "queue_dealloca)");
  }
  void* p = [buffer_ contents];
  if (!p && byte_length() != 0) {
    return FailedPreconditionError(
        "Metal: a Private (device-only) MTLBuffer has no contents to map");
  }
  if (managed_ && Any(access & MemoryAccess::kWrite))
    open_writes_.emplace(offset, length);
  return static_cast<uint8_t*>(p) + offset_ + offset;
}

Status MetalBuffer::UnmapImpl(DeviceSize offset, DeviceSize length,
                              MemoryAccess access) {
  if (!managed_ || !Any(access & MemoryAccess::kWrite)) return OkStatus();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_writes_.find({offset, length});
  if (it != open_writes_.end()) open_writes_.erase(it);
  if (coherent_ && buffer_ && length) {
    [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
  }
  return OkStatus();
}

Status MetalBuffer::FlushImpl(DeviceSize offset, DeviceSize length) {
  if (!managed_ || !length) return OkStatus();
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_) [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
  return OkStatus();
}

}  // namespace hal::metal
