#include "hal/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hal {

namespace {
Status ErrnoStatus(int err, const char* what, const std::string& path) {
  StatusCode code = StatusCode::kUnavailable;
  if (err == ENOENT) code = StatusCode::kNotFound;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  return MakeStatus(code, "%s '%s': %s", what, path.c_str(),
                    std::strerror(err));
}
}  // namespace

StatusOr<Ref<File>> File::Open(const std::string& path, FileAccess access,
                               bool create) {
  int flags = access == FileAccess::kRead    ? O_RDONLY
              : access == FileAccess::kWrite ? O_WRONLY
                                             : O_RDWR;
  if (access != FileAccess::kRead && access != FileAccess::kWrite &&
      access != FileAccess::kReadWrite) {
    return InvalidArgumentError("unknown file access %u",
                                static_cast<unsigned>(access));
  }
  if (create) {
    if (access == FileAccess::kRead) {
      return InvalidArgumentError("creating a file needs write access");
    }
    flags |= O_CREAT | O_TRUNC;
  }
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "opening", path);
  return Ref<File>::Adopt(new File(access, fd, {}, nullptr));
}

StatusOr<Ref<File>> File::WrapMemory(std::span<uint8_t> memory,
                                     FileAccess access,
                                     std::function<void()> release) {
  if (!memory.data() && !memory.empty()) {
    return InvalidArgumentError("file memory is null");
  }
  return Ref<File>::Adopt(new File(access, -1, memory, std::move(release)));
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
  if (release_) release_();
}

StatusOr<uint64_t> File::Length() const {
  if (fd_ < 0) return static_cast<uint64_t>(memory_.size());
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoStatus(errno, "stat of", "<fd>");
  return static_cast<uint64_t>(st.st_size);
}

Status File::Read(uint64_t offset, void* target, uint64_t length) {
  if (!can_read())
    return PermissionDeniedError("file was not opened for reading");
  if (length == 0) return OkStatus();
  if (!target) return InvalidArgumentError("file read target is null");
  HAL_ASSIGN_OR_RETURN(uint64_t size, Length());
  if (offset > size || length > size - offset) {
    return OutOfRangeError("file read [%llu, +%llu) past the end (%llu bytes)",
                           (unsigned long long)offset,
                           (unsigned long long)length,
                           (unsigned long long)size);
  }
  if (fd_ < 0) {
    std::memcpy(target, memory_.data() + offset, length);
    return OkStatus();
  }
  uint8_t* p = static_cast<uint8_t*>(target);
  while (length) {
    ssize_t n = ::pread(fd_, p, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return n == 0 ? DataLossError("file shrank during read")
                    : ErrnoStatus(errno, "reading", "<fd>");
    }
    p += n;
    offset += n;
    length -= n;
  }
  return OkStatus();
}

Status File::Write(uint64_t offset, const void* source, uint64_t length) {
  if (!can_write())
    return PermissionDeniedError("file was not opened for writing");
  if (length == 0) return OkStatus();
  if (!source) return InvalidArgumentError("file write source is null");
  if (fd_ < 0) {
    if (offset > memory_.size() || length > memory_.size() - offset) {
      return OutOfRangeError(
          "file write [%llu, +%llu) past the end (%zu bytes)",
          (unsigned long long)offset, (unsigned long long)length,
          memory_.size());
    }
    std::memcpy(memory_.data() + offset, source, length);
    return OkStatus();
  }
  const uint8_t* p = static_cast<const uint8_t*>(source);
  while (length) {
    ssize_t n = ::pwrite(fd_, p, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus(errno, "writing", "<fd>");
    p += n;
    offset += n;
    length -= n;
  }
  return OkStatus();
}

}  // namespace hal
