// The Metal driver, in Objective-C++ without ARC: explicit retain/release of
// every id<MTL...> it keeps, and @autoreleasepool around every call that
// gets autoreleased objects (command buffers, encoders, errors).
//
// Mapping (the IREE Metal design, docs/drivers/metal.md):
//   * a device per MTLDevice, a MTLCommandQueue per HAL queue;
//   * buffers on storage modes: host-visible memory is Shared, device-only
//     memory is Private (its `contents` is NULL, so it is never mapped);
//   * a timeline semaphore is a MTLSharedEvent: host signals set
//     signaledValue; a queue operation encodes a wait for every wait point
//     whose value is reached or will be signalled by work committed already
//     (device to device, no host round trip), and is held on the host until
//     the others are reached (NotifyAt), so that work waiting for a value
//     nobody has submitted yet never blocks its Metal queue;
//   * a queue operation is one MTLCommandBuffer: encoded waits, its work in
//     blit and compute encoders (a new encoder after each barrier), encoded
//     signals. A shared-event listener raises the HAL payload when the
//     event is signalled; the completion handler fails the signals of a
//     failed command buffer. Values signalled from the host (alloca,
//     dealloca, host calls) are not encoded: the host signals them;
//   * fill with a pattern Metal's blit fill cannot take (a 2- or 4-byte
//     pattern, or a range that is not 4-byte aligned) and update go through
//     a Shared staging buffer and blit copies; files through a Shared
//     staging buffer (hal/utils/file_staging.h);
//   * executables: a MTLLibrary per MSL module, a pipeline per export;
//     dispatch with dispatchThreadgroups (binding i at buffer index i, the
//     constants at index 30, the export's workgroup size per threadgroup).
#import "Metal/Metal.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

// Every program that links the Metal driver loads GCC's Objective-C runtime,
// whose class tables are allocated at load time and never freed (a constant
// ~8.9 KB, sim/metal/lsan_suppressions.txt), and whose +initialize takes its
// own lock under GNUstep's (sim/metal/tsan_suppressions.txt). The sanitizers
// read these weak hooks, so hal-check, the unit tests and a user's program
// get the same suppressions as the Metal tests' environment gives them;
// reports from the project's own code are untouched. Binaries that load the
// runtime without this object (a test linking hal_drivers but not the
// registration) get them from the asan/tsan test presets' environment.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libobjc.so\n";
}
extern "C" const char* __lsan_default_options() {
  return "print_suppressions=0";
}
extern "C" const char* __tsan_default_suppressions() {
  return "deadlock:libobjc.so\n";
}

#include "drivers/metal/metal_driver.h"
#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/semaphore.h"
#include "hal/uri.h"
#include "hal/utils/buffer_ref_resolve.h"
#include "hal/utils/file_staging.h"
#include "hal/utils/queue_op.h"

namespace hal::metal {
namespace {

constexpr DeviceSize kDefaultAlignment = 256;
// Every MTLBuffer starts on a page: 4 KiB at least (16 KiB on Apple
// silicon). A larger alignment over-allocates and offsets the buffer.
constexpr DeviceSize kPageAlignment = 4096;
constexpr size_t kMaxStagingBytes = size_t{1} << 20;

// ---------------------------------------------------------------------------
// Buffers.

class MetalAllocator;

class MetalBuffer final : public Buffer {
 public:
  // A buffer without memory yet (Commit makes its MTLBuffer). `managed`:
  // host-visible memory is Managed storage (two copies) instead of Shared.
  MetalBuffer(const Params& params, id<MTLDevice> device, DeviceSize alignment, bool managed)
      : Buffer(params),
        device_([device retain]),
        alignment_(alignment),
        managed_(managed && AllOf(params.memory_type, MemoryType::kHostVisible)),
        coherent_(AllOf(params.memory_type, MemoryType::kHostCoherent)) {}

  // Makes the MTLBuffer: Shared (or Managed) storage for host-visible
  // memory, Private for device-only memory. Above a page (where every
  // MTLBuffer starts), the host address tells where the aligned start is; a
  // Private buffer has none (its GPU address is not declared here), so it
  // stays page aligned (docs/drivers/metal.md). Does nothing when committed
  // already.
  Status Commit() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (buffer_) return OkStatus();
    const bool host_visible = AllOf(memory_type(), MemoryType::kHostVisible);
    const MTLResourceOptions options =
        !host_visible ? MTLResourceStorageModePrivate
                      : (managed_ ? MTLResourceStorageModeManaged : MTLResourceStorageModeShared);
    const DeviceSize pad = host_visible && alignment_ > kPageAlignment ? alignment_ : 0;
    @autoreleasepool {
      buffer_ = [device_ newBufferWithLength:(NSUInteger)(byte_length() + pad) options:options];
    }
    if (!buffer_) {
      return ResourceExhaustedError("Metal: newBufferWithLength:%llu options:%lu returned nil",
                                    (unsigned long long)(byte_length() + pad),
                                    (unsigned long)options);
    }
    if (pad) {
      const auto base = reinterpret_cast<uintptr_t>([buffer_ contents]);
      offset_ = (alignment_ - base % alignment_) % alignment_;
    }
    allocator()->RecordAllocate(memory_type(), byte_length());
    return OkStatus();
  }
  // An imported MTLBuffer (+1, taken over): live, not counted as allocated.
  void AdoptImported(id<MTLBuffer> buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    buffer_ = buffer;
    imported_ = true;
  }
  // The MTLBuffer (autoreleased: call inside @autoreleasepool), or nil
  // before the commit and after a queue_dealloca released it.
  id<MTLBuffer> mtl() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return [[buffer_ retain] autorelease];
  }
  DeviceSize offset() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return offset_;
  }
  bool managed() const { return managed_; }
  // An empty import's release callback, run when the buffer goes.
  void set_release(Allocator::ReleaseCallback release) { release_ = std::move(release); }
  // Before a command buffer that uses a Managed, HOST_COHERENT buffer is
  // committed: the bytes of write mappings still open may hold host writes
  // the GPU must see (coherent memory is never flushed), so they are
  // announced with didModifyRange:. Closed mappings were announced when
  // they were unmapped.
  void AnnounceOpenWrites() {
    if (!managed_ || !coherent_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!buffer_) return;
    for (const auto& [offset, length] : open_writes_) {
      if (length) [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
    }
  }
  // queue_dealloca: releases the MTLBuffer (command buffers that use it
  // keep it until they complete, as Metal does).
  void Decommit() {
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

 protected:
  ~MetalBuffer() override {
    Decommit();
    [device_ release];
    if (release_) release_();
  }
  StatusOr<uint8_t*> MapImpl(DeviceSize offset, DeviceSize length, MemoryAccess access) override {
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
    if (managed_ && Any(access & MemoryAccess::kWrite)) open_writes_.emplace(offset, length);
    return static_cast<uint8_t*>(p) + offset_ + offset;
  }
  // Managed and coherent: the host's writes are announced when the mapping
  // ends (non-coherent memory was flushed by Buffer::Unmap already).
  Status UnmapImpl(DeviceSize offset, DeviceSize length, MemoryAccess access) override {
    if (!managed_ || !Any(access & MemoryAccess::kWrite)) return OkStatus();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_writes_.find({offset, length});
    if (it != open_writes_.end()) open_writes_.erase(it);
    if (coherent_ && buffer_ && length) {
      [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
    }
    return OkStatus();
  }
  // Shared storage is coherent: nothing to flush or invalidate. Managed
  // storage: a flush announces the host's writes; nothing to invalidate,
  // because every command buffer that writes a Managed buffer ends with a
  // synchronizeResource: of it (Encoder::SynchronizeManaged), so the host
  // copy is current once the work completed.
  Status FlushImpl(DeviceSize offset, DeviceSize length) override {
    if (!managed_ || !length) return OkStatus();
    std::lock_guard<std::mutex> lock(mutex_);
    if (buffer_) [buffer_ didModifyRange:NSMakeRange(offset_ + offset, length)];
    return OkStatus();
  }
  Status InvalidateImpl(DeviceSize, DeviceSize) override { return OkStatus(); }

 private:
  id<MTLDevice> device_;  // retained
  const DeviceSize alignment_;
  const bool managed_, coherent_;
  mutable std::mutex mutex_;
  id<MTLBuffer> buffer_ = nil;  // retained; nil before Commit, after Decommit
  DeviceSize offset_ = 0;
  bool imported_ = false;
  // Managed: the (offset, length) of the write mappings open now.
  std::multiset<std::pair<DeviceSize, DeviceSize>> open_writes_;
  Allocator::ReleaseCallback release_;
};

// What an import's deallocator block holds: the HAL release callback, run
// once when Metal deallocates the MTLBuffer (after the last command buffer
// that used it completed), on whichever thread releases it last.
struct ImportRelease {
  Allocator::ReleaseCallback release;
};

DeviceSize HostPageSize() {
  static const DeviceSize page = static_cast<DeviceSize>(sysconf(_SC_PAGESIZE));
  return page;
}

class MetalAllocator final : public Allocator {
 public:
  MetalAllocator(id<MTLDevice> device, bool managed)
      : device_([device retain]), managed_(managed) {}
  ~MetalAllocator() override { [device_ release]; }

  // A buffer in the kReserved state, without memory (queue_alloca).
  StatusOr<Ref<Buffer>> Reserve(const BufferParams& params, DeviceSize size) {
    HAL_RETURN_IF_ERROR(CheckAllocationSize(params, size, [device_ recommendedMaxWorkingSetSize],
                                            /*host_backed=*/false));
    Buffer::Params p = MakeBufferParams(params, size, BufferState::kReserved);
    return Ref<Buffer>::Adopt(new MetalBuffer(p, device_, params.min_alignment, managed_));
  }

 protected:
  BufferCompatibility QueryCompatibilityImpl(const BufferParams& params, DeviceSize size,
                                             BufferParams* out_resolved) override {
    BufferParams r = params;
    if (AllOf(r.type, MemoryType::kOptimal)) {
      r.type = r.type & ~MemoryType::kOptimal;
      if (!Any(r.type)) r.type = MemoryType::kDeviceLocal;
      if (Any(r.usage & BufferUsage::kMapping)) {
        r.type |= MemoryType::kHostVisible | MemoryType::kHostCoherent;
      }
    }
    // Shared storage is what the host sees: coherent on Apple silicon. On a
    // managed device, host-visible memory is Managed storage, coherent only
    // when asked for (the driver announces and synchronizes for it).
    const bool host_visible = AllOf(r.type, MemoryType::kHostVisible);
    if (host_visible && !managed_) r.type |= MemoryType::kHostCoherent;
    r.type |= MemoryType::kDeviceVisible;
    if (r.min_alignment < kDefaultAlignment) r.min_alignment = kDefaultAlignment;
    *out_resolved = r;
    // Host memory imports as Shared storage (newBufferWithBytesNoCopy:).
    return host_visible ? BufferCompatibility::kAllocatable | BufferCompatibility::kImportable
                        : BufferCompatibility::kAllocatable;
  }
  StatusOr<Ref<Buffer>> AllocateBufferImpl(const BufferParams& params, DeviceSize size) override {
    HAL_ASSIGN_OR_RETURN(Ref<Buffer> buffer, Reserve(params, size));
    HAL_RETURN_IF_ERROR(static_cast<MetalBuffer*>(buffer.get())->Commit());
    buffer->TransitionState(BufferState::kReserved, BufferState::kLive);
    return buffer;
  }
  // newBufferWithBytesNoCopy: wraps whole pages, so the pointer and the
  // length must be page aligned; the release callback becomes the
  // deallocator, which Metal runs when the MTLBuffer is deallocated (not
  // when the HAL buffer goes: command buffers in flight keep it).
  StatusOr<Ref<Buffer>> ImportHostAllocationImpl(const BufferParams& params, void* ptr,
                                                 DeviceSize size,
                                                 ReleaseCallback release) override {
    BufferParams p = params;
    p.type |= MemoryType::kHostCoherent;  // Shared storage
    p.min_alignment = std::max<DeviceSize>(p.min_alignment, kDefaultAlignment);
    Buffer::Params bp = MakeBufferParams(p, size, BufferState::kLive);
    const DeviceSize page = HostPageSize();
    if (size == 0) {
      // Metal has no empty no-copy buffer: an empty Shared one, as an empty
      // allocation gets; the memory (none) is released with the buffer.
      auto* buffer = new MetalBuffer(bp, device_, p.min_alignment, /*managed=*/false);
      Ref<Buffer> ref = Ref<Buffer>::Adopt(buffer);
      id<MTLBuffer> empty;
      @autoreleasepool {
        empty = [device_ newBufferWithLength:0 options:MTLResourceStorageModeShared];
      }
      if (!empty) return ResourceExhaustedError("Metal: newBufferWithLength:0 returned nil");
      buffer->AdoptImported(empty);
      buffer->set_release(std::move(release));
      RecordImport();
      return ref;
    }
    if (reinterpret_cast<uintptr_t>(ptr) % page != 0 || size % page != 0) {
      return InvalidArgumentError(
          "Metal: host import wraps whole pages (newBufferWithBytesNoCopy:): the pointer and "
          "the length must be multiples of the %llu-byte page; got %p + %llu bytes",
          (unsigned long long)page, ptr, (unsigned long long)size);
    }
    auto* state = new ImportRelease{std::move(release)};
    id<MTLBuffer> wrapped;
    @autoreleasepool {
      wrapped = [device_ newBufferWithBytesNoCopy:ptr
                                           length:(NSUInteger)size
                                          options:MTLResourceStorageModeShared
                                      deallocator:^(void*, NSUInteger) {
                                        if (state->release) state->release();
                                        delete state;
                                      }];
    }
    if (!wrapped) {
      // No buffer, no deallocator call: the caller keeps the memory.
      delete state;
      return InvalidArgumentError("Metal: newBufferWithBytesNoCopy:%p length:%llu returned nil",
                                  ptr, (unsigned long long)size);
    }
    auto* buffer = new MetalBuffer(bp, device_, p.min_alignment, /*managed=*/false);
    buffer->AdoptImported(wrapped);
    RecordImport();
    return Ref<Buffer>::Adopt(buffer);
  }

 private:
  id<MTLDevice> device_;  // retained
  const bool managed_;
};

// ---------------------------------------------------------------------------
// Semaphores.

// What a listener block holds of its semaphore: a block that never fires
// (its command buffer failed) stays with the event, which the semaphore
// holds, so a reference would be a cycle. The semaphore clears it when it
// goes; a block that fires holds the lock while it signals.
struct SemaphoreToken {
  std::recursive_mutex mutex;
  Semaphore* semaphore;
};

class MetalSemaphore final : public Semaphore {
 public:
  MetalSemaphore(id<MTLSharedEvent> event, uint64_t initial)
      : Semaphore(initial), event_([event retain]), token_(std::make_shared<SemaphoreToken>()) {
    token_->semaphore = this;
    if (initial) [event_ setSignaledValue:initial];
  }
  id<MTLSharedEvent> event() const { return event_; }
  const std::shared_ptr<SemaphoreToken>& token() const { return token_; }
  // The highest value that work committed already will signal.
  uint64_t pending_signal() const { return pending_signal_.load(); }
  void NoteCommittedSignal(uint64_t value) {
    uint64_t v = pending_signal_.load();
    while (v < value && !pending_signal_.compare_exchange_weak(v, value)) {
    }
  }

 protected:
  ~MetalSemaphore() override {
    {
      std::lock_guard<std::recursive_mutex> lock(token_->mutex);
      token_->semaphore = nullptr;
    }
    [event_ release];
  }
  void OnSignaled(uint64_t value) override {
    if ([event_ signaledValue] < value) [event_ setSignaledValue:value];
  }
  // Releases every encoded wait on the event: the operations behind them
  // find the failed wait in their completion handler and fail their
  // signals with its status.
  void OnFailed(const Status&) override { [event_ setSignaledValue:UINT64_MAX]; }

 private:
  id<MTLSharedEvent> event_;  // retained
  std::shared_ptr<SemaphoreToken> token_;
  std::atomic<uint64_t> pending_signal_{0};
};

MetalSemaphore* AsMetal(Semaphore* s) { return dynamic_cast<MetalSemaphore*>(s); }

// ---------------------------------------------------------------------------
// Executables: MSL source (the metal-msl format), a MTLLibrary per module
// and a MTLComputePipelineState per export.

class MetalExecutable final : public Executable {
 public:
  MetalExecutable(ExecutableData& data, std::vector<uint32_t> constants)
      : Executable(data.format, std::move(data.functions), std::move(constants)) {}
  // One per export, in export order.
  std::vector<id<MTLComputePipelineState>> pipelines;  // retained

 protected:
  ~MetalExecutable() override {
    @autoreleasepool {
      for (id p : pipelines) [p release];
    }
  }
};

class MetalExecutableCache final : public ExecutableCache {
 public:
  explicit MetalExecutableCache(id<MTLDevice> device) : device_([device retain]) {}

 protected:
  ~MetalExecutableCache() override { [device_ release]; }
  bool CanPrepareFormatImpl(ExecutableFormat format) const override {
    return format == ExecutableFormat::kMetalMsl;
  }
  StatusOr<Ref<Executable>> PrepareImpl(ExecutableData data,
                                        std::vector<uint32_t> constants) override {
    if (!constants.empty()) {
      // MTLFunctionConstantValues would carry them; nothing here can check
      // that they reach a kernel (docs/drivers/metal.md).
      return UnimplementedError(
          "Metal: specialization constants (MSL function constants) are not implemented "
          "(docs/drivers/metal.md, 'What is not done')");
    }
    @autoreleasepool {
      std::vector<id<MTLLibrary>> libraries;
      auto release_all = [&] {
        for (id l : libraries) [l release];
      };
      for (size_t i = 0; i < data.modules.size(); ++i) {
        const std::vector<uint8_t>& code = data.modules[i].code;
        NSString* source = [[[NSString alloc] initWithBytes:code.data()
                                                     length:code.size()
                                                   encoding:NSUTF8StringEncoding] autorelease];
        NSError* error = nil;
        id<MTLLibrary> library =
            source ? [device_ newLibraryWithSource:source options:nil error:&error] : nil;
        if (!library) {
          release_all();
          return InvalidArgumentError(
              "Metal: newLibraryWithSource: rejected module %zu: %s", i,
              error ? [[error localizedDescription] UTF8String] : "not UTF-8 text");
        }
        libraries.push_back(library);
      }
      Ref<MetalExecutable> executable =
          Ref<MetalExecutable>::Adopt(new MetalExecutable(data, std::move(constants)));
      for (const FunctionInfo& f : executable->functions()) {
        id<MTLFunction> function = [libraries[f.module_ordinal]
            newFunctionWithName:[NSString stringWithUTF8String:f.name.c_str()]];
        if (!function) {
          release_all();
          return InvalidArgumentError("Metal: module %u has no kernel '%s'", f.module_ordinal,
                                      f.name.c_str());
        }
        NSError* error = nil;
        id<MTLComputePipelineState> pipeline = [device_ newComputePipelineStateWithFunction:function
                                                                                      error:&error];
        [function release];
        if (!pipeline) {
          release_all();
          return InvalidArgumentError(
              "Metal: newComputePipelineStateWithFunction: failed for '%s': %s", f.name.c_str(),
              error ? [[error localizedDescription] UTF8String] : "");
        }
        executable->pipelines.push_back(pipeline);
      }
      release_all();
      return Ref<Executable>(std::move(executable));
    }
  }

 private:
  id<MTLDevice> device_;  // retained
};

// ---------------------------------------------------------------------------
// Encoding the work of one queue operation.

class Encoder {
 public:
  Encoder(id<MTLDevice> device, id<MTLCommandBuffer> cb) : device_(device), cb_(cb) {}
  ~Encoder() { End(); }

  void End() {
    if (blit_) [blit_ endEncoding];
    if (compute_) [compute_ endEncoding];
    blit_ = nil;
    compute_ = nil;
  }
  // One encoder is active at a time: switching kinds ends the other.
  id<MTLBlitCommandEncoder> Blit() {
    if (compute_) End();
    if (!blit_) blit_ = [cb_ blitCommandEncoder];
    return blit_;
  }
  id<MTLComputeCommandEncoder> Compute() {
    if (blit_) End();
    if (!compute_) compute_ = [cb_ computeCommandEncoder];
    return compute_;
  }

  Status Fill(Buffer* target, DeviceSize offset, DeviceSize length, uint32_t pattern,
              size_t pattern_length) {
    if (length == 0) return OkStatus();
    HAL_ASSIGN_OR_RETURN(MetalBuffer * tb, Mtl(target));
    Wrote(tb);
    id<MTLBuffer> t = tb->mtl();
    offset += tb->offset();
    uint8_t bytes[4];
    std::memcpy(bytes, &pattern, 4);
    bool uniform = true;
    for (size_t i = 1; i < pattern_length; ++i) uniform &= bytes[i] == bytes[0];
    if (uniform && offset % 4 == 0 && length % 4 == 0) {
      [Blit() fillBuffer:t range:NSMakeRange(offset, length) value:bytes[0]];
      return OkStatus();
    }
    // Blit fill takes one byte and 4-byte aligned ranges on macOS: stage
    // the pattern and copy it.
    const size_t chunk =
        std::min<DeviceSize>(length, kMaxStagingBytes - kMaxStagingBytes % pattern_length);
    HAL_ASSIGN_OR_RETURN(id<MTLBuffer> staging, Staging(chunk));
    auto* p = static_cast<uint8_t*>([staging contents]);
    for (size_t i = 0; i < chunk; ++i) p[i] = bytes[i % pattern_length];
    for (DeviceSize done = 0; done < length;) {
      const DeviceSize n = std::min<DeviceSize>(chunk, length - done);
      [Blit() copyFromBuffer:staging
                sourceOffset:0
                    toBuffer:t
           destinationOffset:offset + done
                        size:n];
      done += n;
    }
    [staging release];
    return OkStatus();
  }

  Status Update(const uint8_t* data, Buffer* target, DeviceSize offset, DeviceSize length) {
    if (length == 0) return OkStatus();
    HAL_ASSIGN_OR_RETURN(MetalBuffer * tb, Mtl(target));
    Wrote(tb);
    id<MTLBuffer> t = tb->mtl();
    offset += tb->offset();
    HAL_ASSIGN_OR_RETURN(id<MTLBuffer> staging, Staging(length));
    std::memcpy([staging contents], data, length);
    [Blit() copyFromBuffer:staging sourceOffset:0 toBuffer:t destinationOffset:offset size:length];
    [staging release];
    return OkStatus();
  }

  Status Copy(Buffer* source, DeviceSize source_offset, Buffer* target, DeviceSize target_offset,
              DeviceSize length) {
    if (length == 0) return OkStatus();
    HAL_ASSIGN_OR_RETURN(MetalBuffer * s, Mtl(source));
    HAL_ASSIGN_OR_RETURN(MetalBuffer * t, Mtl(target));
    Wrote(t);
    [Blit() copyFromBuffer:s->mtl()
              sourceOffset:s->offset() + source_offset
                  toBuffer:t->mtl()
         destinationOffset:t->offset() + target_offset
                      size:length];
    return OkStatus();
  }

  // A file transfer's device half: staging <-> buffer.
  Status CopyFrom(id<MTLBuffer> staging, Buffer* target, DeviceSize offset, DeviceSize length) {
    if (length == 0) return OkStatus();
    HAL_ASSIGN_OR_RETURN(MetalBuffer * t, Mtl(target));
    Wrote(t);
    [Blit() copyFromBuffer:staging
              sourceOffset:0
                  toBuffer:t->mtl()
         destinationOffset:t->offset() + offset
                      size:length];
    return OkStatus();
  }
  Status CopyTo(Buffer* source, DeviceSize offset, id<MTLBuffer> staging, DeviceSize length) {
    if (length == 0) return OkStatus();
    HAL_ASSIGN_OR_RETURN(MetalBuffer * s, Mtl(source));
    [Blit() copyFromBuffer:s->mtl()
              sourceOffset:s->offset() + offset
                  toBuffer:staging
         destinationOffset:0
                      size:length];
    return OkStatus();
  }

  // After the work: a synchronizeResource: of every Managed buffer it
  // wrote, so that the host's copy is current when the operation's signals
  // are reached (Metal copies the GPU's copy back only when asked).
  void SynchronizeManaged() {
    for (id<MTLBuffer> b : written_managed_) [Blit() synchronizeResource:b];
    written_managed_.clear();
  }

  Status Commands(CommandBuffer* command_buffer, BindingTable table) {
    for (const Command& command : command_buffer->commands()) {
      HAL_RETURN_IF_ERROR(std::visit([&](const auto& c) { return Encode(c, table); }, command));
    }
    return OkStatus();
  }

 private:
  // The Metal buffer behind `buffer`, with the host writes of its open
  // coherent mappings announced (MetalBuffer::AnnounceOpenWrites).
  static StatusOr<MetalBuffer*> Mtl(Buffer* buffer) {
    auto* b = dynamic_cast<MetalBuffer*>(buffer->allocated_buffer());
    if (!b) return InvalidArgumentError("Metal: a buffer of another driver");
    if (!b->mtl()) {
      return FailedPreconditionError(
          "Metal: the buffer has no memory: not committed (order the use "
          "after its queue_alloca) or released by a queue_dealloca");
    }
    b->AnnounceOpenWrites();
    return b;
  }
  void Wrote(MetalBuffer* b) {
    if (!b->managed()) return;
    id<MTLBuffer> m = b->mtl();
    for (id<MTLBuffer> w : written_managed_) {
      if (w == m) return;
    }
    written_managed_.push_back(m);
  }
  // A Shared buffer (+1) of `n` bytes; the command buffer keeps it alive.
  StatusOr<id<MTLBuffer>> Staging(DeviceSize n) {
    id<MTLBuffer> b = [device_ newBufferWithLength:(NSUInteger)n
                                           options:MTLResourceStorageModeShared];
    if (!b) {
      return ResourceExhaustedError("Metal: a %llu-byte staging buffer", (unsigned long long)n);
    }
    return b;
  }

  // Barriers, events and debug groups: commands after it go into a new
  // encoder, which Metal orders after the previous one's writes.
  Status Encode(const cmd::Barrier&, BindingTable) { return Split(); }
  Status Encode(const cmd::SignalEvent&, BindingTable) { return Split(); }
  Status Encode(const cmd::ResetEvent&, BindingTable) { return Split(); }
  Status Encode(const cmd::WaitEvents&, BindingTable) { return Split(); }
  Status Encode(const cmd::BeginDebugGroup&, BindingTable) { return OkStatus(); }
  Status Encode(const cmd::EndDebugGroup&, BindingTable) { return OkStatus(); }
  Status Split() {
    End();
    return OkStatus();
  }
  Status Encode(const cmd::Fill& c, BindingTable table) {
    HAL_ASSIGN_OR_RETURN(ResolvedRef r,
                         utils::ResolveBufferRef(c.target, table, c.target.length, "fill target"));
    return Fill(r.buffer, r.offset, r.length, c.pattern, c.pattern_length);
  }
  Status Encode(const cmd::Update& c, BindingTable table) {
    HAL_ASSIGN_OR_RETURN(ResolvedRef r,
                         utils::ResolveBufferRef(c.target, table, c.data.size(), "update target"));
    return Update(c.data.data(), r.buffer, r.offset, r.length);
  }
  Status Encode(const cmd::Copy& c, BindingTable table) {
    HAL_ASSIGN_OR_RETURN(ResolvedRef s,
                         utils::ResolveBufferRef(c.source, table, c.length, "copy source"));
    HAL_ASSIGN_OR_RETURN(ResolvedRef t,
                         utils::ResolveBufferRef(c.target, table, c.length, "copy target"));
    return Copy(s.buffer, s.offset, t.buffer, t.offset, c.length);
  }
  // Binding i is buffer index i, the constants are bytes at index 30 (the
  // MSL macro layer of hal/cts/kernels/hal_kernel.h); the threadgroup size
  // is the export's workgroup size.
  Status Encode(const cmd::Dispatch& c, BindingTable table) {
    auto* executable = dynamic_cast<MetalExecutable*>(c.executable);
    if (!executable) {
      return InvalidArgumentError("Metal: an executable of another driver");
    }
    const FunctionInfo& f = executable->functions()[c.entry_point];
    if (!c.indirect &&
        (c.workgroup_count[0] == 0 || c.workgroup_count[1] == 0 || c.workgroup_count[2] == 0)) {
      return OkStatus();
    }
    id<MTLComputeCommandEncoder> e = Compute();
    [e setComputePipelineState:executable->pipelines[c.entry_point]];
    for (size_t i = 0; i < c.bindings.size(); ++i) {
      HAL_ASSIGN_OR_RETURN(
          ResolvedRef r,
          utils::ResolveBufferRef(c.bindings[i], table, c.bindings[i].length, "dispatch binding"));
      HAL_ASSIGN_OR_RETURN(MetalBuffer * b, Mtl(r.buffer));
      if (!f.binding_read_only(static_cast<uint32_t>(i))) Wrote(b);
      [e setBuffer:b->mtl() offset:b->offset() + r.offset atIndex:i];
    }
    if (!c.constants.empty()) {
      [e setBytes:c.constants.data() length:c.constants.size() * sizeof(uint32_t) atIndex:30];
    }
    const MTLSize threads =
        MTLSizeMake(f.workgroup_size[0], f.workgroup_size[1], f.workgroup_size[2]);
    if (c.indirect) {
      HAL_ASSIGN_OR_RETURN(
          ResolvedRef r,
          utils::ResolveBufferRef(*c.indirect_workgroup_count, table, kIndirectWorkgroupCountSize,
                                  "indirect workgroup count"));
      HAL_ASSIGN_OR_RETURN(MetalBuffer * b, Mtl(r.buffer));
      [e dispatchThreadgroupsWithIndirectBuffer:b->mtl()
                           indirectBufferOffset:b->offset() + r.offset
                          threadsPerThreadgroup:threads];
    } else {
      [e dispatchThreadgroups:MTLSizeMake(c.workgroup_count[0], c.workgroup_count[1],
                                          c.workgroup_count[2])
          threadsPerThreadgroup:threads];
    }
    return OkStatus();
  }

  id<MTLDevice> device_;
  id<MTLCommandBuffer> cb_;
  id<MTLBlitCommandEncoder> blit_ = nil;        // autoreleased
  id<MTLComputeCommandEncoder> compute_ = nil;  // autoreleased
  std::vector<id<MTLBuffer>> written_managed_;  // autoreleased
};

// ---------------------------------------------------------------------------
// The device.

class MetalDevice;

// One queue operation from submission to its signals.
struct MetalOp {
  MetalDevice* device;
  int queue = 0;
  // Signals ended on the host after `on_done` (queue_alloca, dealloca and
  // host calls), not encoded into the command buffer.
  bool host_signals = false;
  // Runs when the operation ends (OK, or the failure it ended with),
  // before its host signals.
  // Its error fails the host signals.
  std::function<Status(const Status&)> on_done;
  // A host call: runs on the queue's host-call thread after the waits.
  HostCallFn host_fn;
  // The work, encoded when the operation is committed: at submission when
  // no wait is held on the host, else once the last one is reached (a
  // buffer of a queue_alloca the operation waits for exists only then).
  std::function<Status(Encoder&)> encode;
  id<MTLCommandBuffer> cb = nil;  // retained until committed
  std::vector<utils::RetainedPoint> device_waits, signals;
  std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> timepoints;
  std::atomic<int> open{1};  // host waits + 1 for the submission itself
  std::mutex mutex;
  Status failure;  // the first failed host wait
};

class MetalDevice final : public Device {
 public:
  static StatusOr<Ref<Device>> Create(const DeviceUri& uri) {
    HAL_RETURN_IF_ERROR(uri.CheckKnownParams({"queues", "managed"}));
    HAL_ASSIGN_OR_RETURN(uint64_t queues, uri.GetUint("queues", 1, 1, 64));
    @autoreleasepool {
      id<MTLDevice> device = MTLCreateSystemDefaultDevice();
      if (!device) {
        return UnavailableError("Metal: MTLCreateSystemDefaultDevice returned nil (no Metal "
                                "device)");
      }
      // Managed storage where the GPU has its own memory (an Intel Mac with
      // a discrete GPU); `managed=1` selects it anywhere (the simulated
      // framework gives Managed buffers two copies either way).
      StatusOr<bool> managed = uri.GetBool("managed", ![device hasUnifiedMemory]);
      if (!managed.ok()) {
        [device release];
        return managed.status();
      }
      DeviceInfo info;
      info.driver = "metal";
      info.name = [[device name] UTF8String];
      info.uri = "metal:0";
      info.memory_bytes = [device recommendedMaxWorkingSetSize];
      info.queue_count = static_cast<int>(queues);
      Ref<Allocator> allocator = Ref<Allocator>::Adopt(new MetalAllocator(device, *managed));
      auto* d = new MetalDevice(std::move(info), std::move(allocator), device);
      [device release];
      return Ref<Device>::Adopt(d);
    }
  }

  ~MetalDevice() override {
    // Operations held for a host wait end with CANCELLED; then every
    // committed command buffer completes before the queues go.
    std::vector<MetalOp*> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (MetalOp* op : held_) {
        // Pins the operation (it cannot end while the count is above 0).
        int n = op->open.load();
        while (n > 0 && !op->open.compare_exchange_weak(n, n + 1)) {
        }
        if (n > 0) held.push_back(op);
      }
    }
    for (MetalOp* op : held) {
      std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> points;
      {
        std::lock_guard<std::mutex> lock(op->mutex);
        points = op->timepoints;
      }
      for (auto& [semaphore, id] : points) {
        if (semaphore->CancelTimepoint(id)) {
          HostWaitDone(op, CancelledError("Metal: the device was destroyed"));
        }
      }
      HostWaitDone(op, OkStatus());  // unpins
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    }
    workers_.clear();
    @autoreleasepool {
      for (id<MTLCommandQueue> q : queues_) [q release];
      [listener_ release];
      [device_ release];
    }
  }

  // Called when a host wait of `op` is reached (OK) or failed.
  MetalWaitCounts wait_counts() const { return {encoded_waits_.load(), host_waits_.load()}; }

  // The first failure decides: the other host waits are cancelled.
  void HostWaitDone(MetalOp* op, const Status& status) {
    bool first_failure = false;
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(op->mutex);
      if (op->failure.ok()) {
        op->failure = status;
        first_failure = true;
      }
    }
    if (first_failure) CancelHostWaits(op);
    if (op->open.fetch_sub(1) == 1) Release(op);
  }
  // The caller holds a count of `op`, so it cannot end here.
  static void CancelHostWaits(MetalOp* op) {
    std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> points;
    {
      std::lock_guard<std::mutex> lock(op->mutex);
      points = op->timepoints;
    }
    for (auto& [semaphore, id] : points) {
      if (semaphore->CancelTimepoint(id)) op->open.fetch_sub(1);
    }
  }

 protected:
  StatusOr<Ref<Semaphore>> CreateSemaphoreImpl(uint64_t initial) override {
    @autoreleasepool {
      id<MTLSharedEvent> event = [device_ newSharedEvent];
      if (!event) return InternalError("Metal: newSharedEvent returned nil");
      Ref<Semaphore> s = Ref<Semaphore>::Adopt(new MetalSemaphore(event, initial));
      [event release];
      return s;
    }
  }

  StatusOr<Ref<ExecutableCache>> CreateExecutableCacheImpl() override {
    return Ref<ExecutableCache>::Adopt(new MetalExecutableCache(device_));
  }

  Status QueueFillImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                       Buffer* target, DeviceSize offset, DeviceSize length, const void* pattern,
                       size_t pattern_length) override {
    uint32_t p = 0;
    std::memcpy(&p, pattern, pattern_length);
    const DeviceSize off = target->byte_offset() + offset;
    return Submit(affinity, wait, signal,
                  [t = Ref<Buffer>(target), off, length, p, pattern_length](Encoder& e) {
                    return e.Fill(t.get(), off, length, p, pattern_length);
                  });
  }
  Status QueueUpdateImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                         const void* source, Buffer* target, DeviceSize offset,
                         DeviceSize length) override {
    const DeviceSize off = target->byte_offset() + offset;
    const auto* bytes = static_cast<const uint8_t*>(source);
    return Submit(affinity, wait, signal,
                  [data = std::vector<uint8_t>(bytes, bytes + length), t = Ref<Buffer>(target), off,
                   length](Encoder& e) { return e.Update(data.data(), t.get(), off, length); });
  }
  Status QueueCopyImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                       Buffer* source, DeviceSize source_offset, Buffer* target,
                       DeviceSize target_offset, DeviceSize length) override {
    const DeviceSize so = source->byte_offset() + source_offset;
    const DeviceSize to = target->byte_offset() + target_offset;
    return Submit(affinity, wait, signal,
                  [s = Ref<Buffer>(source), t = Ref<Buffer>(target), so, to, length](Encoder& e) {
                    return e.Copy(s.get(), so, t.get(), to, length);
                  });
  }
  Status QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                          CommandBuffer* command_buffer, BindingTable bindings) override {
    std::vector<Binding> table(bindings.begin(), bindings.end());
    std::vector<Ref<Buffer>> keep;
    for (const Binding& b : table) keep.emplace_back(b.buffer);
    return Submit(
        affinity, wait, signal,
        [cb = Ref<CommandBuffer>(command_buffer), table = std::move(table), keep = std::move(keep)](
            Encoder& e) { return cb ? e.Commands(cb.get(), table) : OkStatus(); });
  }

  // The MTLBuffer is made at once (Metal has no deferred allocation); the
  // buffer is committed (usable) once the waits are reached.
  StatusOr<Ref<Buffer>> QueueAllocaImpl(QueueAffinity affinity, SemaphoreList wait,
                                        SemaphoreList signal, const BufferParams& params,
                                        DeviceSize size) override {
    HAL_ASSIGN_OR_RETURN(Ref<Buffer> buffer,
                         static_cast<MetalAllocator*>(allocator())->Reserve(params, size));
    auto op = std::make_unique<MetalOp>();
    op->host_signals = true;
    op->on_done = [buffer](const Status& status) -> Status {
      if (!status.ok()) return status;
      HAL_RETURN_IF_ERROR(static_cast<MetalBuffer*>(buffer.get())->Commit());
      // A dealloca may already be queued behind it; it keeps its state.
      buffer->MarkCommitted();
      return OkStatus();
    };
    HAL_RETURN_IF_ERROR(Submit(
        affinity, wait, signal, [](Encoder&) { return OkStatus(); }, std::move(op)));
    return buffer;
  }
  Status QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                           Buffer* buffer) override {
    Ref<MetalBuffer> metal(dynamic_cast<MetalBuffer*>(buffer->allocated_buffer()));
    if (!metal) return InvalidArgumentError("Metal: a buffer of another driver");
    auto op = std::make_unique<MetalOp>();
    op->host_signals = true;
    op->on_done = [metal](const Status& status) {
      if (status.ok()) {
        metal->Decommit();
        metal->MarkFreed();
      } else {
        // The dealloca did not happen: the buffer is usable again.
        metal->CancelDealloca();
      }
      return OkStatus();
    };
    return Submit(
        affinity, wait, signal, [](Encoder&) { return OkStatus(); }, std::move(op));
  }
  // Files go through a Shared staging MTLBuffer in two halves
  // (hal/utils/file_staging.h): a host call for the file's side, a blit copy
  // for the buffer's.
  Status QueueReadImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                       File* source, uint64_t source_offset, Buffer* target,
                       DeviceSize target_offset, DeviceSize length) override {
    HAL_ASSIGN_OR_RETURN(std::shared_ptr<FileStage> stage, NewStage(length));
    utils::StagedHalves halves;
    HAL_RETURN_IF_ERROR(
        QueueHostCallImpl(affinity, wait, halves.list(),
                          [file = Ref<File>(source), stage, source_offset]() -> Status {
                            return stage->memory->ReadFrom(*file, source_offset);
                          }));
    const DeviceSize offset = target->byte_offset() + target_offset;
    return Submit(affinity, halves.list(), signal,
                  [stage, t = Ref<Buffer>(target), offset, length](Encoder& e) {
                    return e.CopyFrom(stage->buffer, t.get(), offset, length);
                  });
  }
  Status QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                        Buffer* source, DeviceSize source_offset, File* target,
                        uint64_t target_offset, DeviceSize length) override {
    HAL_ASSIGN_OR_RETURN(std::shared_ptr<FileStage> stage, NewStage(length));
    utils::StagedHalves halves;
    const DeviceSize offset = source->byte_offset() + source_offset;
    HAL_RETURN_IF_ERROR(Submit(affinity, wait, halves.list(),
                               [stage, s = Ref<Buffer>(source), offset, length](Encoder& e) {
                                 return e.CopyTo(s.get(), offset, stage->buffer, length);
                               }));
    return QueueHostCallImpl(affinity, halves.list(), signal,
                             [file = Ref<File>(target), stage, target_offset]() -> Status {
                               return stage->memory->WriteTo(*file, target_offset);
                             });
  }
  Status QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                           HostCallFn fn) override {
    auto op = std::make_unique<MetalOp>();
    op->host_signals = true;
    op->host_fn = std::move(fn);
    return Submit(
        affinity, wait, signal, [](Encoder&) { return OkStatus(); }, std::move(op));
  }

  Status WaitIdleImpl(Timeout timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto idle = [&] { return in_flight_ == 0; };
    if (timeout.is_infinite()) {
      idle_cv_.wait(lock, idle);
    } else if (!idle_cv_.wait_until(lock, timeout.deadline(), idle)) {
      return DeadlineExceededError("Metal: the device is still busy");
    }
    return OkStatus();
  }

 private:
  MetalDevice(DeviceInfo info, Ref<Allocator> allocator, id<MTLDevice> device)
      : Device(std::move(info), std::move(allocator)),
        device_([device retain]),
        listener_([[MTLSharedEventListener alloc] init]) {
    for (int i = 0; i < queue_count(); ++i) {
      queues_.push_back([device_ newCommandQueue]);
      workers_.push_back(std::make_unique<HostCallWorker>(this));
    }
  }

  // A file transfer's staging: a Shared MTLBuffer (nil for 0 bytes).
  struct FileStage {
    id<MTLBuffer> buffer = nil;  // owned by `memory` (released before this)
    std::shared_ptr<utils::FileStaging> memory;
  };
  StatusOr<std::shared_ptr<FileStage>> NewStage(DeviceSize length) {
    auto stage = std::make_shared<FileStage>();
    id<MTLDevice> device = device_;
    FileStage* raw = stage.get();
    HAL_ASSIGN_OR_RETURN(
        stage->memory, utils::FileStaging::Create(
                           length,
                           [device, raw](DeviceSize n, void** host) -> Status {
                             raw->buffer =
                                 [device newBufferWithLength:(NSUInteger)n
                                                     options:MTLResourceStorageModeShared];
                             if (!raw->buffer) {
                               return ResourceExhaustedError(
                                   "Metal: a %llu-byte file staging buffer", (unsigned long long)n);
                             }
                             *host = [raw->buffer contents];
                             return OkStatus();
                           },
                           [buffer_of = raw](void*) {
                             @autoreleasepool {
                               [buffer_of->buffer release];
                             }
                           }));
    return stage;
  }

  // Builds the operation's command buffer now (errors: nothing enqueued),
  // and commits it once every wait that cannot be encoded is reached.
  // `encode` owns what it needs (it may run after the call returns).
  Status Submit(QueueAffinity affinity, SemaphoreList wait, SemaphoreList signal,
                std::function<Status(Encoder&)> encode, std::unique_ptr<MetalOp> op = nullptr) {
    if (!op) op = std::make_unique<MetalOp>();
    op->encode = std::move(encode);
    op->device = this;
    op->queue = FirstQueue(affinity);
    std::vector<SemaphorePoint> host_waits;
    @autoreleasepool {
      id<MTLCommandBuffer> cb = [queues_[op->queue] commandBuffer];
      for (const SemaphorePoint& w : wait) {
        MetalSemaphore* m = AsMetal(w.semaphore);
        if (w.semaphore->Reached(w.value)) continue;
        if (m && m->pending_signal() >= w.value) {
          [cb encodeWaitForEvent:m->event() value:w.value];
          op->device_waits.emplace_back(Ref<Semaphore>(w.semaphore), w.value);
          encoded_waits_.fetch_add(1, std::memory_order_relaxed);
        } else {
          host_waits.push_back(w);
          host_waits_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      utils::RetainPoints(signal, &op->signals);
      op->cb = [cb retain];
      // Nothing held: encode now, so that an error is returned with
      // nothing enqueued.
      if (host_waits.empty()) {
        Status status = EncodeWork(op.get());
        if (!status.ok()) {
          [op->cb release];
          return status;
        }
      }
    }
    MetalOp* raw = op.release();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++in_flight_;
      if (!host_waits.empty()) held_.insert(raw);
    }
    raw->open.fetch_add(static_cast<int>(host_waits.size()));
    for (const SemaphorePoint& w : host_waits) {
      Semaphore::TimepointId id = w.semaphore->NotifyAt(
          w.value, [raw](const Status& s) { raw->device->HostWaitDone(raw, s); });
      if (id != 0) {
        std::lock_guard<std::mutex> lock(raw->mutex);
        raw->timepoints.emplace_back(Ref<Semaphore>(w.semaphore), id);
      }
    }
    bool failed;
    {
      std::lock_guard<std::mutex> lock(raw->mutex);
      failed = !raw->failure.ok();
    }
    // A wait failed while the others were being registered.
    if (failed) CancelHostWaits(raw);
    HostWaitDone(raw, OkStatus());  // the submission's own count
    return OkStatus();
  }

  // The work and the encoded signals, into op->cb.
  Status EncodeWork(MetalOp* op) {
    {
      Encoder encoder(device_, op->cb);
      HAL_RETURN_IF_ERROR(op->encode(encoder));
      encoder.SynchronizeManaged();
    }
    op->encode = nullptr;
    if (!op->host_signals) {
      for (auto& [semaphore, value] : op->signals) {
        if (MetalSemaphore* m = AsMetal(semaphore.get())) {
          [op->cb encodeSignalEvent:m->event() value:value];
        }
      }
    }
    return OkStatus();
  }

  // Every host wait is decided: commit, or end without running.
  void Release(MetalOp* op) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_.erase(op);
    }
    Status failure;
    {
      std::lock_guard<std::mutex> lock(op->mutex);
      failure = op->failure;
    }
    @autoreleasepool {
      if (failure.ok() && op->encode) failure = EncodeWork(op);
      if (!failure.ok()) {
        [op->cb release];  // never committed
        if (op->on_done) op->on_done(failure).IgnoreError();
        utils::CompleteSignals(op->signals, failure);
        Finish(op);
        return;
      }
      // Noted once committed: an operation encodes a wait only for a
      // value that committed work will signal (never one behind it on an
      // in-order Metal queue). `op` may be gone once committed.
      std::vector<utils::RetainedPoint> signals = op->signals;
      const bool host_signals = op->host_signals;
      id<MTLCommandBuffer> cb = op->cb;
      // The payload of a semaphore follows its event: a listener signals
      // it when the command buffer's encoded signal raised the event (the
      // listener blocks and completion handlers run in order on one
      // thread, so a chain across queues signals in order), unless a wait
      // the command buffer encoded had failed.
      auto waits = std::make_shared<std::vector<utils::RetainedPoint>>(op->device_waits);
      for (auto& [semaphore, value] : signals) {
        MetalSemaphore* m = AsMetal(semaphore.get());
        if (!m || op->host_signals) continue;
        std::shared_ptr<SemaphoreToken> token = m->token();
        const uint64_t v = value;
        [m->event() notifyListener:listener_
                           atValue:v
                             block:^(id<MTLSharedEvent>, uint64_t) {
                               Status status;
                               for (auto& [w, wv] : *waits) {
                                 Status f;
                                 if (utils::CheckWait(*w, wv, &f) == utils::WaitState::kFailed) {
                                   status = f;
                                   break;
                                 }
                               }
                               std::lock_guard<std::recursive_mutex> lock(token->mutex);
                               if (token->semaphore) {
                                 utils::CompleteSignal(*token->semaphore, v, status);
                               }
                             }];
      }
      [cb addCompletedHandler:^(id<MTLCommandBuffer> done) {
        Completed(op, done);
      }];
      [cb commit];
      [cb release];
      // Host signals come later, from the host, and may fail: waits for
      // them stay on the host, so that a failure stops the work behind.
      for (auto& [semaphore, value] : signals) {
        MetalSemaphore* m = AsMetal(semaphore.get());
        if (m && !host_signals) m->NoteCommittedSignal(value);
      }
    }
  }

  // The signals of Metal semaphores were ended by their listeners when the
  // command buffer succeeded (they ran before this handler); a failed
  // command buffer raised no event, so its signals fail here.
  void Completed(MetalOp* op, id<MTLCommandBuffer> cb) {
    const bool failed = [cb status] == MTLCommandBufferStatusError;
    Status status =
        failed ? DataLossError("Metal: the command buffer failed on the device") : OkStatus();
    // A wait released by its semaphore's failure (OnFailed).
    for (auto& [semaphore, value] : op->device_waits) {
      Status f;
      if (status.ok() && utils::CheckWait(*semaphore, value, &f) == utils::WaitState::kFailed) {
        status = f;
      }
    }
    if (op->host_fn && status.ok()) {
      workers_[op->queue]->Post(op);
      return;
    }
    if (op->on_done) {
      Status done = op->on_done(status);
      if (status.ok()) status = done;
    }
    for (auto& [semaphore, value] : op->signals) {
      if (op->host_signals || failed || !AsMetal(semaphore.get())) {
        utils::CompleteSignal(*semaphore, value, status);
      }
    }
    Finish(op);
  }

  // Runs the host calls of one queue, in order, on their own thread: a host
  // call may block on other queues' work, whose completion handlers run on
  // Metal's thread.
  class HostCallWorker {
   public:
    explicit HostCallWorker(MetalDevice* device) : device_(device), thread_([this] { Main(); }) {}
    ~HostCallWorker() {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    void Post(MetalOp* op) {
      std::lock_guard<std::mutex> lock(mutex_);
      ops_.push_back(op);
      cv_.notify_all();
    }

   private:
    void Main() {
      for (;;) {
        MetalOp* op;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          cv_.wait(lock, [&] { return stop_ || !ops_.empty(); });
          if (ops_.empty()) return;
          op = ops_.front();
          ops_.pop_front();
        }
        Status status = op->host_fn();
        utils::CompleteSignals(op->signals, status);
        device_->Finish(op);
      }
    }
    MetalDevice* device_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<MetalOp*> ops_;
    bool stop_ = false;
    std::thread thread_;
  };

  void Finish(MetalOp* op) {
    delete op;
    std::lock_guard<std::mutex> lock(mutex_);
    if (--in_flight_ == 0) idle_cv_.notify_all();
  }

  id<MTLDevice> device_;                     // retained
  MTLSharedEventListener* listener_;         // retained
  std::vector<id<MTLCommandQueue>> queues_;  // retained
  std::mutex mutex_;
  std::condition_variable idle_cv_;
  int64_t in_flight_ = 0;
  std::atomic<uint64_t> encoded_waits_{0}, host_waits_{0};
  std::set<MetalOp*> held_;                               // waiting for a host wait
  std::vector<std::unique_ptr<HostCallWorker>> workers_;  // per queue
};

}  // namespace

StatusOr<MetalWaitCounts> GetMetalWaitCounts(Device* device) {
  auto* metal = dynamic_cast<MetalDevice*>(device);
  if (!metal) return InvalidArgumentError("not a Metal device");
  return metal->wait_counts();
}

Status RegisterMetalDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "metal";
  factory.description = "Apple Metal (MTLDevice; on Linux the simulated Metal framework)";
  factory.enumerate = []() -> StatusOr<std::vector<DeviceInfo>> {
    @autoreleasepool {
      id<MTLDevice> device = MTLCreateSystemDefaultDevice();
      if (!device) return std::vector<DeviceInfo>{};
      DeviceInfo info;
      info.driver = "metal";
      info.name = [[device name] UTF8String];
      info.uri = "metal:0";
      info.memory_bytes = [device recommendedMaxWorkingSetSize];
      [device release];
      return std::vector<DeviceInfo>{info};
    }
  };
  factory.try_create = [](const DeviceUri& uri) { return MetalDevice::Create(uri); };
  return registry->Register(std::move(factory));
}

}  // namespace hal::metal
