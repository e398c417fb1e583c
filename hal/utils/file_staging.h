// queue_read / queue_write of a File through host staging memory, for
// drivers whose device cannot reach a file's bytes (every GPU-stream
// driver; the simulator reads files straight into its host memory).
//
// A staged transfer is two halves on the operation's queue, ordered by a
// private semaphore (StagedHalves):
//   queue_read:  host half   file -> staging   waits `wait`, signals staged
//                device half staging -> buffer waits staged, signals `signal`
//   queue_write: device half buffer -> staging waits `wait`, signals staged
//                host half   staging -> file   waits staged, signals `signal`
// A failure in the first half fails `staged`, and with it the second half's
// signals (hal/utils/queue_op.h), so nobody hangs. Both halves hold the
// staging memory (shared_ptr); it is released when the last one is gone.
//
// Thread safety: a FileStaging is used by one half at a time (the halves
// are ordered); Create may be called from any thread.
#pragma once

#include <functional>
#include <memory>

#include "hal/file.h"
#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal::utils {

class FileStaging {
 public:
  // Driver memory for `length` bytes (pinned host memory the device can
  // copy from and to), and its release.
  using AllocateFn = std::function<Status(DeviceSize length, void** host)>;
  using ReleaseFn = std::function<void(void* host)>;

  // Allocates `length` bytes with `allocate` (nothing for 0);
  // `release` frees them when the staging is destroyed. The allocation's
  // error (e.g. RESOURCE_EXHAUSTED) is returned as is.
  static StatusOr<std::shared_ptr<FileStaging>> Create(
      DeviceSize length, const AllocateFn& allocate, ReleaseFn release);
  ~FileStaging();
  FileStaging(const FileStaging&) = delete;
  FileStaging& operator=(const FileStaging&) = delete;

  // Null when the length is 0.
  void* host() const { return host_; }
  DeviceSize length() const { return length_; }

  // queue_read's host half: the staging's bytes from `file` at `offset`.
  Status ReadFrom(File& file, uint64_t offset);
  // queue_write's host half: the staging's bytes to `file` at `offset`.
  Status WriteTo(File& file, uint64_t offset) const;

 private:
  FileStaging(DeviceSize length, ReleaseFn release)
      : length_(length), release_(std::move(release)) {}
  DeviceSize length_;
  void* host_ = nullptr;
  ReleaseFn release_;
};

// The private semaphore that orders the two halves: the first half signals
// `point`, the second waits on it.
struct StagedHalves {
  Ref<Semaphore> staged = Semaphore::Create(0);
  SemaphorePoint point{staged.get(), 1};
  SemaphoreList list() const { return {&point, 1}; }
};

}  // namespace hal::utils
