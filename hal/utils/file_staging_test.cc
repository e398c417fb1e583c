// The staging memory of file transfers (hal/utils/file_staging.h).
#include "hal/utils/file_staging.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace hal::utils {
namespace {

struct Counts {
  int allocated = 0;
  int released = 0;
};

FileStaging::AllocateFn Allocator(Counts* counts) {
  return [counts](DeviceSize n, void** host) {
    *host = std::malloc(n);
    ++counts->allocated;
    return OkStatus();
  };
}
FileStaging::ReleaseFn Release(Counts* counts) {
  return [counts](void* host) {
    std::free(host);
    ++counts->released;
  };
}

TEST(FileStaging, ReadsAndWritesThroughTheStagingAndReleasesOnce) {
  Counts counts;
  std::vector<uint8_t> source(64), sink(64, 0);
  for (size_t i = 0; i < source.size(); ++i) source[i] = uint8_t(i * 7);
  Ref<File> in = File::WrapMemory(source, FileAccess::kRead).value();
  Ref<File> out = File::WrapMemory(sink, FileAccess::kWrite).value();
  {
    auto staging =
        FileStaging::Create(16, Allocator(&counts), Release(&counts));
    ASSERT_TRUE(staging.ok()) << staging.status().ToString();
    std::shared_ptr<FileStaging> second_half = *staging;
    EXPECT_EQ((*staging)->length(), 16u);
    ASSERT_TRUE((*staging)->ReadFrom(*in, 8).ok());
    EXPECT_EQ(std::memcmp((*staging)->host(), source.data() + 8, 16), 0);
    ASSERT_TRUE(second_half->WriteTo(*out, 40).ok());
    EXPECT_EQ(std::memcmp(sink.data() + 40, source.data() + 8, 16), 0);
    EXPECT_EQ(sink[39], 0);
    EXPECT_EQ(sink[56], 0);
    // A range past the end of the file is the file's error.
    EXPECT_EQ((*staging)->ReadFrom(*in, 56).code(), StatusCode::kOutOfRange);
  }
  EXPECT_EQ(counts.allocated, 1);
  EXPECT_EQ(counts.released, 1);
}

TEST(FileStaging, EmptyAllocatesNothing) {
  Counts counts;
  std::vector<uint8_t> bytes(4);
  Ref<File> file = File::WrapMemory(bytes, FileAccess::kReadWrite).value();
  {
    auto staging = FileStaging::Create(0, Allocator(&counts), Release(&counts));
    ASSERT_TRUE(staging.ok());
    EXPECT_EQ((*staging)->host(), nullptr);
    EXPECT_TRUE((*staging)->ReadFrom(*file, 4).ok());
    EXPECT_TRUE((*staging)->WriteTo(*file, 0).ok());
  }
  EXPECT_EQ(counts.allocated, 0);
  EXPECT_EQ(counts.released, 0);
}

TEST(FileStaging, AllocationErrorIsReturnedAndNothingReleased) {
  int released = 0;
  auto staging = FileStaging::Create(
      1 << 20,
      [](DeviceSize, void**) {
        return ResourceExhaustedError("no pinned memory");
      },
      [&released](void*) { ++released; });
  EXPECT_EQ(staging.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(released, 0);
}

TEST(StagedHalves, FirstHalfSignalsWhatTheSecondWaitsOn) {
  StagedHalves halves;
  ASSERT_EQ(halves.list().size(), 1u);
  EXPECT_EQ(halves.list()[0].semaphore, halves.staged.get());
  EXPECT_EQ(halves.list()[0].value, 1u);
  EXPECT_FALSE(halves.staged->Reached(1));
}

}  // namespace
}  // namespace hal::utils
