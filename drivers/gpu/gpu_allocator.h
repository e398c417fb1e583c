// Allocator and buffers of GPU-stream devices.
//
//   HOST_LOCAL (not DEVICE_LOCAL)         -> pinned host memory (MemAllocHost)
//   DEVICE_LOCAL only                     -> device memory (MemAllocDevice)
//   DEVICE_LOCAL | HOST_VISIBLE           -> managed memory (MemAllocManaged)
//   imported host memory                  -> registered (MemHostRegister)
//   queue_alloca with async allocations   -> the device pool (MemAllocAsync)
//
// Every host-visible type is coherent (pinned and managed memory are), so
// flush and invalidate do nothing. Buffers keep the API alive (shared_ptr):
// they may outlive their device.
#pragma once

#include <atomic>
#include <memory>

#include "drivers/gpu/gpu_api.h"
#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"

namespace hal::gpu {

enum class GpuMemoryKind { kDevice, kManaged, kHost, kImported };

class GpuBuffer final : public Buffer {
 public:
  GpuMemoryKind kind() const { return kind_; }
  // Device address of byte 0 of this allocated buffer (0 while reserved or
  // freed, or when empty).
  GpuDevicePtr device_ptr() const {
    return device_ptr_.load(std::memory_order_acquire);
  }
  bool committed() const { return committed_.load(std::memory_order_acquire); }

  // Allocates the memory now (synchronous allocations, queue_alloca without
  // pools). RESOURCE_EXHAUSTED etc. from the API.
  Status Commit();
  // queue_alloca with pools: enqueues the allocation on `stream`.
  Status CommitAsync(GpuStream stream);
  // Frees the memory now (synchronous; the API waits for the device).
  void Decommit();
  // queue_dealloca with pools: enqueues the free on `stream`.
  Status DecommitAsync(GpuStream stream);

 protected:
  StatusOr<uint8_t*> MapImpl(DeviceSize offset, DeviceSize length,
                             MemoryAccess access) override;
  Status UnmapImpl(DeviceSize, DeviceSize, MemoryAccess) override {
    return OkStatus();
  }
  Status FlushImpl(DeviceSize, DeviceSize) override { return OkStatus(); }
  Status InvalidateImpl(DeviceSize, DeviceSize) override { return OkStatus(); }

 private:
  friend class GpuAllocator;
  GpuBuffer(const Params& params, std::shared_ptr<GpuApi> api,
            GpuMemoryKind kind, DeviceSize alignment);
  ~GpuBuffer() override;
  void ReleaseMemory();
  // Rounds an allocation base up to the alignment.
  uint64_t Align(uint64_t base) const {
    return (base + alignment_ - 1) / alignment_ * alignment_;
  }
  // What the API is asked for: the size plus the alignment when it is above
  // what the API guarantees. RESOURCE_EXHAUSTED when it does not fit a
  // size_t.
  StatusOr<size_t> PaddedSize() const;

  std::shared_ptr<GpuApi> api_;
  GpuMemoryKind kind_;
  DeviceSize alignment_;
  std::atomic<GpuDevicePtr> device_ptr_{0};
  std::atomic<bool> committed_{false};
  bool async_ = false;           // allocated from the pool
  uint64_t base_ = 0;            // what the API returned (before alignment)
  uint8_t* host_ptr_ = nullptr;  // host address of byte 0 (host-visible)
  Allocator::ReleaseCallback release_;  // imports
};

// A buffer reference's device range when its work is enqueued, for a
// command that touches `length` bytes of it (kWholeBuffer: all of it):
// resolved and checked by utils::ResolveBufferRef
// (hal/utils/buffer_ref_resolve.h: slot, ranges, freed), then
// INVALID_ARGUMENT for a buffer of another driver and FAILED_PRECONDITION
// when its memory is not committed, whatever the length. `what` names the
// command in the message.
struct GpuRange {
  GpuDevicePtr address = 0;
  DeviceSize length = 0;
};
StatusOr<GpuRange> ResolveGpuRange(const BufferRef& ref, BindingTable table,
                                   DeviceSize length, const char* what);

class GpuAllocator final : public Allocator {
 public:
  static Ref<GpuAllocator> Create(std::shared_ptr<GpuApi> api,
                                  DeviceSize device_memory_bytes);
  // A buffer without memory (queue_alloca); `params` from QueryCompatibility.
  // RESOURCE_EXHAUSTED when the size can never be allocated
  // (Allocator::CheckAllocationSize) or its padding overflows.
  StatusOr<Ref<GpuBuffer>> CreateReserved(const BufferParams& params,
                                          DeviceSize size);

 protected:
  BufferCompatibility QueryCompatibilityImpl(
      const BufferParams& params, DeviceSize size,
      BufferParams* out_resolved) override;
  StatusOr<Ref<Buffer>> AllocateBufferImpl(const BufferParams& params,
                                           DeviceSize size) override;
  StatusOr<Ref<Buffer>> ImportHostAllocationImpl(
      const BufferParams& params, void* ptr, DeviceSize size,
      ReleaseCallback release) override;

 private:
  GpuAllocator(std::shared_ptr<GpuApi> api, DeviceSize device_memory_bytes)
      : api_(std::move(api)), device_memory_bytes_(device_memory_bytes) {}
  std::shared_ptr<GpuApi> api_;
  DeviceSize device_memory_bytes_;
};

}  // namespace hal::gpu
