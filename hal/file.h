// Files: byte sources and sinks for queue_read and queue_write.
//
// A file is either a POSIX file descriptor (read/written with pread/pwrite)
// or a caller-owned host memory range. Thread safety: Read and Write may be
// called from any thread; concurrent writes to overlapping ranges race.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "hal/ref.h"
#include "hal/status.h"

namespace hal {

enum class FileAccess : uint32_t { kRead = 1, kWrite = 2, kReadWrite = 3 };

class File : public RefCounted {
 public:
  // Opens `path`. With `create`, the file is created (and truncated) first.
  // NOT_FOUND / PERMISSION_DENIED / UNAVAILABLE from the OS, with its error.
  static StatusOr<Ref<File>> Open(const std::string& path, FileAccess access,
                                  bool create = false);
  // Wraps host memory; `release` runs once when the file is destroyed.
  static StatusOr<Ref<File>> WrapMemory(
      std::span<uint8_t> memory, FileAccess access,
      std::function<void()> release = nullptr);

  FileAccess access() const { return access_; }
  bool can_read() const { return static_cast<uint32_t>(access_) & 1u; }
  bool can_write() const { return static_cast<uint32_t>(access_) & 2u; }
  // Whether writes past the end extend the file (descriptor files) or fail
  // (memory files).
  bool grows() const { return fd_ >= 0; }
  // Current length in bytes.
  StatusOr<uint64_t> Length() const;

  // OUT_OF_RANGE when [offset, offset+length) runs past the end;
  // PERMISSION_DENIED without read access.
  Status Read(uint64_t offset, void* target, uint64_t length);
  // Memory files: OUT_OF_RANGE past the end. Descriptor files grow.
  Status Write(uint64_t offset, const void* source, uint64_t length);

 private:
  File(FileAccess access, int fd, std::span<uint8_t> memory,
       std::function<void()> release)
      : access_(access),
        fd_(fd),
        memory_(memory),
        release_(std::move(release)) {}
  ~File() override;

  FileAccess access_;
  int fd_ = -1;
  std::span<uint8_t> memory_;
  std::function<void()> release_;
};

}  // namespace hal
