#include "hal/utils/file_staging.h"

namespace hal::utils {

StatusOr<std::shared_ptr<FileStaging>> FileStaging::Create(
    DeviceSize length, const AllocateFn& allocate, ReleaseFn release) {
  std::shared_ptr<FileStaging> staging(
      new FileStaging(length, std::move(release)));
  if (length == 0) return staging;
  HAL_RETURN_IF_ERROR(allocate(length, &staging->host_));
  return staging;
}

FileStaging::~FileStaging() {
  if (host_ && release_) release_(host_);
}

Status FileStaging::ReadFrom(File& file, uint64_t offset) {
  return file.Read(offset, host_, length_);
}

Status FileStaging::WriteTo(File& file, uint64_t offset) const {
  return file.Write(offset, host_, length_);
}

}  // namespace hal::utils
