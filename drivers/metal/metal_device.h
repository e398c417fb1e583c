// MetalDevice: a HAL device over one MTLDevice, a MTLCommandQueue per HAL
// queue; every queue operation is one MTLCommandBuffer (metal_driver.mm
// has the whole mapping). Objective-C++ only: included from
// drivers/metal/*.mm, never from plain C++; plain C++ sees metal_driver.h.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#import "Metal/Metal.h"
#include "drivers/metal/metal_driver.h"
#include "hal/device.h"
#include "hal/semaphore.h"
#include "hal/uri.h"

namespace hal::metal {

class Encoder;
// One queue operation from submission to its signals (metal_device.mm).
struct MetalOp;

class MetalDevice final : public Device {
 public:
  // URI parameters: `queues` (1-64, default 1) and `managed` (host-visible
  // memory as Managed storage; default: where the GPU has its own memory).
  // UNAVAILABLE when Metal has no device.
  static StatusOr<Ref<Device>> Create(const DeviceUri& uri);

  // Operations held for a host wait end with CANCELLED; then every
  // committed command buffer completes before the queues go.
  ~MetalDevice() override;

  MetalWaitCounts wait_counts() const {
    return {encoded_waits_.load(), host_waits_.load()};
  }

  // Called when a host wait of `op` is reached (OK) or failed. The first
  // failure decides: the other host waits are cancelled.
  void HostWaitDone(MetalOp* op, const Status& status);
  // The caller holds a count of `op`, so it cannot end here.
  static void CancelHostWaits(MetalOp* op);

 protected:
  // QueueAllocaImpl: the MTLBuffer is made at once (Metal has no deferred
  // allocation); the buffer is committed (usable) once the waits are
  // reached. QueueReadImpl/QueueWriteImpl: files go through a Shared staging
  // MTLBuffer in two halves (hal/utils/file_staging.h): a host call for the
  // file's side, a blit copy for the buffer's.
  HAL_DEVICE_IMPL_OVERRIDES
  HAL_DEVICE_TRANSFER_IMPL_OVERRIDES

 private:
  // A file transfer's staging (metal_device.mm).
  struct FileStage;
  // Runs the host calls of one queue, in order, on their own thread
  // (metal_device.mm).
  class HostCallWorker;

  MetalDevice(DeviceInfo info, Ref<Allocator> allocator, id<MTLDevice> device);

  // A Shared MTLBuffer of `length` bytes (nil for 0) with its host memory.
  StatusOr<std::shared_ptr<FileStage>> NewStage(DeviceSize length);
  // Builds the operation's command buffer now (errors: nothing enqueued),
  // and commits it once every wait that cannot be encoded is reached.
  // `encode` owns what it needs (it may run after the call returns).
  Status Submit(QueueAffinity affinity, SemaphoreList wait,
                SemaphoreList signal, std::function<Status(Encoder&)> encode,
                std::unique_ptr<MetalOp> op = nullptr);
  // The work and the encoded signals, into op->cb.
  Status EncodeWork(MetalOp* op);
  // Every host wait is decided: commit, or end without running.
  void Release(MetalOp* op);
  // The completion handler of `op`'s command buffer.
  void Completed(MetalOp* op, id<MTLCommandBuffer> cb);
  // Deletes `op`; the device is idle when none is left.
  void Finish(MetalOp* op);

  id<MTLDevice> device_;                     // retained
  MTLSharedEventListener* listener_;         // retained
  std::vector<id<MTLCommandQueue>> queues_;  // retained
  std::mutex mutex_;
  std::condition_variable idle_cv_;
  int64_t in_flight_ = 0;
  std::atomic<uint64_t> encoded_waits_{0}, host_waits_{0};
  std::set<MetalOp*> held_;  // waiting for a host wait
  std::vector<std::unique_ptr<HostCallWorker>> workers_;  // per queue
};

}  // namespace hal::metal
