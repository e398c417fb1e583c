// The simulator's allocator and buffers: real host memory behind every
// memory type. DEVICE_LOCAL memory without HOST_VISIBLE is host memory too,
// but the HAL refuses to map it, as a GPU would.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "drivers/sim/sim_context.h"
#include "hal/allocator.h"
#include "hal/buffer.h"

namespace hal::sim {

class SimBuffer final : public Buffer {
 public:
  // The memory, or nullptr while reserved, after a dealloca, or when empty.
  uint8_t* host_storage() const {
    return storage_.load(std::memory_order_acquire);
  }
  // Allocates the memory of a reserved buffer (queue_alloca's commit).
  Status Commit();
  // Frees the memory (queue_dealloca). The buffer object stays.
  void Decommit();
  bool committed() const {
    return storage_.load() != nullptr || committed_empty_;
  }
  // Per-device id, in creation order (traces and checker reports use it).
  uint64_t id() const { return id_; }

 protected:
  StatusOr<uint8_t*> MapImpl(DeviceSize offset, DeviceSize length,
                             MemoryAccess access) override;
  Status UnmapImpl(DeviceSize offset, DeviceSize length,
                   MemoryAccess access) override;
  Status FlushImpl(DeviceSize, DeviceSize) override { return OkStatus(); }
  Status InvalidateImpl(DeviceSize, DeviceSize) override { return OkStatus(); }

 private:
  friend class SimAllocator;
  // hal/utils/buffer_internal.h: the memory, for tests that look at it.
  uint8_t* HostStorageImpl() override { return host_storage(); }
  SimBuffer(const Params& params, uint64_t id, DeviceSize alignment,
            void* imported, Allocator::ReleaseCallback release);
  ~SimBuffer() override;

  uint64_t id_;
  DeviceSize alignment_;
  std::atomic<uint8_t*> storage_{nullptr};
  std::atomic<bool> committed_empty_{false};  // committed with no bytes
  bool imported_ = false;
  Allocator::ReleaseCallback release_;
};

class SimAllocator final : public Allocator {
 public:
  // `device_memory_limit` bounds live DEVICE_LOCAL bytes (RESOURCE_EXHAUSTED).
  static Ref<SimAllocator> Create(DeviceSize device_memory_limit,
                                  std::shared_ptr<SimContext> context);
  SimContext& context() const { return *context_; }

  // A buffer in the kReserved state, without memory (queue_alloca).
  // `params` must come from QueryCompatibility. RESOURCE_EXHAUSTED when the
  // size can never be allocated (Allocator::CheckAllocationSize).
  StatusOr<Ref<SimBuffer>> CreateReserved(const BufferParams& params,
                                          DeviceSize size);

  // Reserves/returns budget; false when over the limit.
  bool Charge(MemoryType type, DeviceSize size);
  void Uncharge(MemoryType type, DeviceSize size);

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
  SimAllocator(DeviceSize limit, std::shared_ptr<SimContext> context)
      : device_limit_(limit), context_(std::move(context)) {}
  uint64_t NextBufferId();
  DeviceSize device_limit_;
  std::shared_ptr<SimContext> context_;
  std::atomic<DeviceSize> device_used_{0};
};

// The per-device id of a simulator buffer (0 for others).
uint64_t SimBufferId(Buffer* allocated);

}  // namespace hal::sim
