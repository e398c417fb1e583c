// CTS: files and queue_read / queue_write.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

// Long enough for work that must not run yet to show up if it does.
constexpr std::chrono::milliseconds kShort{10};
using HalBuffer = ::hal::Buffer;
using HalFile = ::hal::File;

Bytes Pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 8));
  return b;
}

Bytes Slice(const Bytes& b, size_t offset, size_t length) {
  return Bytes(b.begin() + offset, b.begin() + offset + length);
}

// A file in /tmp made with mkstemp and unlinked when the test ends.
class TempFile {
 public:
  explicit TempFile(const Bytes& contents) {
    char path[] = "/tmp/hal_cts_file_XXXXXX";
    int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    if (fd < 0) return;
    path_ = path;
    size_t done = 0;
    while (done < contents.size()) {
      ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    EXPECT_EQ(done, contents.size());
    ::close(fd);
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  Bytes Contents() const {
    Bytes out;
    int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    if (fd < 0) return out;
    uint8_t chunk[4096];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof(chunk))) > 0)
      out.insert(out.end(), chunk, chunk + n);
    ::close(fd);
    return out;
  }

 private:
  std::string path_;
};

class File : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!HasTag(kTagFiles)) GTEST_SKIP() << "backend lacks tag 'files'";
  }
  Status ReadAndWait(HalFile* file, uint64_t file_offset, HalBuffer* buffer,
                     DeviceSize buffer_offset, DeviceSize length) {
    auto s = NewSemaphore(0);
    HAL_RETURN_IF_ERROR(device()->QueueRead(1, {}, Points{{s.get(), 1}}, file,
                                            file_offset, buffer, buffer_offset,
                                            length));
    return WaitFor(s.get(), 1);
  }
  Status WriteAndWait(HalBuffer* buffer, DeviceSize buffer_offset,
                      HalFile* file, uint64_t file_offset, DeviceSize length) {
    auto s = NewSemaphore(0);
    HAL_RETURN_IF_ERROR(device()->QueueWrite(1, {}, Points{{s.get(), 1}},
                                             buffer, buffer_offset, file,
                                             file_offset, length));
    return WaitFor(s.get(), 1);
  }
};

TEST_F(File, WrapMemoryReadIntoBuffers) {
  Bytes memory = Pattern(256, 3);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::WrapMemory(memory, FileAccess::kRead));
  auto length = file->Length();
  ASSERT_TRUE(length.ok());
  EXPECT_EQ(*length, 256u);
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "device buffer" : "host buffer");
    Ref<HalBuffer> buffer =
        on_device ? NewDeviceBuffer(256) : NewHostBuffer(256);
    ASSERT_TRUE(buffer);
    CTS_ASSERT_OK(ReadAndWait(file.get(), 0, buffer.get(), 0, 256));
    EXPECT_EQ(ReadBack(buffer.get()), memory);
  }
}

TEST_F(File, WrapMemoryReleaseRunsOnce) {
  Bytes memory(64);
  auto calls = std::make_shared<std::atomic<int>>(0);
  {
    CTS_ASSERT_OK_AND_ASSIGN(
        Ref<HalFile> file,
        HalFile::WrapMemory(memory, FileAccess::kReadWrite,
                            [calls] { calls->fetch_add(1); }));
    auto buffer = NewHostBuffer(64, 0x10);
    ASSERT_TRUE(buffer);
    // An in-flight operation holds the file.
    auto s = NewSemaphore(0);
    ASSERT_TRUE(s);
    CTS_ASSERT_OK(device()->QueueWrite(1, {}, Points{{s.get(), 1}},
                                       buffer.get(), 0, file.get(), 0, 64));
    file.reset();
    CTS_ASSERT_OK(WaitFor(s.get(), 1));
    CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
    EXPECT_EQ(memory, Bytes(64, 0x10));
  }
  EXPECT_EQ(calls->load(), 1);
}

TEST_F(File, ReadWholeFileAndSubRange) {
  const Bytes contents = Pattern(1000, 41);
  TempFile temp(contents);
  ASSERT_FALSE(temp.path().empty());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::Open(temp.path(), FileAccess::kRead));
  auto length = file->Length();
  ASSERT_TRUE(length.ok());
  EXPECT_EQ(*length, 1000u);

  auto whole = NewDeviceBuffer(1000);
  ASSERT_TRUE(whole);
  CTS_ASSERT_OK(ReadAndWait(file.get(), 0, whole.get(), 0, 1000));
  EXPECT_EQ(ReadBack(whole.get()), contents);

  auto part = NewHostBuffer(256, 0xEE);
  ASSERT_TRUE(part);
  CTS_ASSERT_OK(ReadAndWait(file.get(), 100, part.get(), 7, 200));
  Bytes want(256, 0xEE);
  std::copy(contents.begin() + 100, contents.begin() + 300, want.begin() + 7);
  EXPECT_EQ(ReadBack(part.get()), want);

  // The last byte and a zero-length read at the end.
  CTS_ASSERT_OK(ReadAndWait(file.get(), 999, part.get(), 0, 1));
  EXPECT_EQ(ReadBack(part.get(), 0, 1), Bytes{contents[999]});
  CTS_EXPECT_OK(ReadAndWait(file.get(), 1000, part.get(), 0, 0));
}

TEST_F(File, WriteWholeBufferAndSubRange) {
  const Bytes original = Pattern(256, 90);
  TempFile temp(original);
  ASSERT_FALSE(temp.path().empty());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::Open(temp.path(), FileAccess::kReadWrite));
  const Bytes data = Pattern(128, 7);
  auto buffer = NewHostBuffer(128);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK(buffer->MapWrite(0, data.data(), data.size()));

  CTS_ASSERT_OK(WriteAndWait(buffer.get(), 0, file.get(), 0, 128));
  Bytes want = original;
  std::copy(data.begin(), data.end(), want.begin());
  EXPECT_EQ(temp.Contents(), want);

  CTS_ASSERT_OK(WriteAndWait(buffer.get(), 16, file.get(), 200, 32));
  std::copy(data.begin() + 16, data.begin() + 48, want.begin() + 200);
  EXPECT_EQ(temp.Contents(), want);

  // Descriptor files grow.
  CTS_ASSERT_OK(WriteAndWait(buffer.get(), 100, file.get(), 250, 20));
  want.resize(270);
  std::copy(data.begin() + 100, data.begin() + 120, want.begin() + 250);
  EXPECT_EQ(temp.Contents(), want);
}

TEST_F(File, WriteFromDeviceBufferToMemoryFile) {
  Bytes memory(64, 0xEE);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::WrapMemory(memory, FileAccess::kWrite));
  auto buffer = NewDeviceBuffer(32);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  const Bytes data = Pattern(32, 200);
  CTS_ASSERT_OK(device()->QueueUpdate(1, {}, Points{{s.get(), 1}}, data.data(),
                                      buffer.get(), 0, 32));
  CTS_ASSERT_OK(device()->QueueWrite(1, Points{{s.get(), 1}},
                                     Points{{s.get(), 2}}, buffer.get(), 4,
                                     file.get(), 10, 20));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  Bytes want(64, 0xEE);
  std::copy(data.begin() + 4, data.begin() + 24, want.begin() + 10);
  EXPECT_EQ(memory, want);
}

TEST_F(File, ReadThenWriteChained) {
  const Bytes contents = Pattern(4096, 17);
  TempFile source(contents);
  TempFile target(Bytes{});
  ASSERT_FALSE(source.path().empty() || target.path().empty());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> in,
                           HalFile::Open(source.path(), FileAccess::kRead));
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalFile> out,
      HalFile::Open(target.path(), FileAccess::kWrite, /*create=*/true));
  auto buffer = NewDeviceBuffer(4096);
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && gate && s);
  FailOnExit guard{{gate}};
  // The write is submitted first and waits for the read.
  CTS_ASSERT_OK(device()->QueueWrite(1, Points{{s.get(), 1}},
                                     Points{{s.get(), 2}}, buffer.get(), 0,
                                     out.get(), 0, 4096));
  CTS_ASSERT_OK(device()->QueueRead(1, Points{{gate.get(), 1}},
                                    Points{{s.get(), 1}}, in.get(), 0,
                                    buffer.get(), 0, 4096));
  CTS_EXPECT_CODE(kDeadlineExceeded, s->Wait(1, Timeout::After(kShort)));
  EXPECT_TRUE(target.Contents().empty()) << "the write ran before its wait";
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  EXPECT_EQ(target.Contents(), contents);
}

TEST_F(File, ReadPastEndIsOutOfRange) {
  TempFile temp(Pattern(100, 1));
  ASSERT_FALSE(temp.path().empty());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::Open(temp.path(), FileAccess::kRead));
  Bytes memory(100);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> mem_file,
                           HalFile::WrapMemory(memory, FileAccess::kRead));
  auto buffer = NewHostBuffer(64, 0xEE);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  for (HalFile* f : {file.get(), mem_file.get()}) {
    Points signal{{s.get(), 1}};
    CTS_EXPECT_CODE(kOutOfRange, device()->QueueRead(1, {}, signal, f, 90,
                                                     buffer.get(), 0, 20));
    CTS_EXPECT_CODE(kOutOfRange, device()->QueueRead(1, {}, signal, f, 101,
                                                     buffer.get(), 0, 0));
    CTS_EXPECT_CODE(kOutOfRange,
                    device()->QueueRead(1, {}, signal, f, ~uint64_t{0} - 4,
                                        buffer.get(), 0, 8));
    // The buffer side is checked too.
    CTS_EXPECT_CODE(kOutOfRange, device()->QueueRead(1, {}, signal, f, 0,
                                                     buffer.get(), 60, 8));
  }
  auto v = s->Query();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 0u);
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(64, 0xEE));
}

TEST_F(File, WrongAccessIsPermissionDenied) {
  TempFile temp(Pattern(64, 5));
  ASSERT_FALSE(temp.path().empty());
  auto buffer = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> write_only,
                           HalFile::Open(temp.path(), FileAccess::kWrite));
  CTS_EXPECT_CODE(
      kPermissionDenied,
      device()->QueueRead(1, {}, {}, write_only.get(), 0, buffer.get(), 0, 16));
  Bytes memory(64);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> mem_write_only,
                           HalFile::WrapMemory(memory, FileAccess::kWrite));
  CTS_EXPECT_CODE(kPermissionDenied,
                  device()->QueueRead(1, {}, {}, mem_write_only.get(), 0,
                                      buffer.get(), 0, 16));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> read_only,
                           HalFile::Open(temp.path(), FileAccess::kRead));
  CTS_EXPECT_CODE(
      kPermissionDenied,
      device()->QueueWrite(1, {}, {}, buffer.get(), 0, read_only.get(), 0, 16));
  EXPECT_EQ(temp.Contents(), Pattern(64, 5));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(64, 0xEE));
}

TEST_F(File, OpenErrors) {
  CTS_EXPECT_CODE(kNotFound,
                  HalFile::Open("/tmp/hal_cts_no_such_dir/no_such_file",
                                FileAccess::kRead));
  TempFile temp(Bytes{});
  ASSERT_FALSE(temp.path().empty());
  // Creating needs write access.
  CTS_EXPECT_CODE(kInvalidArgument,
                  HalFile::Open(temp.path(), FileAccess::kRead, true));
  // Null memory with a size.
  CTS_EXPECT_CODE(
      kInvalidArgument,
      HalFile::WrapMemory(std::span<uint8_t>(static_cast<uint8_t*>(nullptr), 8),
                          FileAccess::kRead));
}

TEST_F(File, MemoryFileWritePastEndFails) {
  Bytes memory(32, 0x00);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalFile> file,
                           HalFile::WrapMemory(memory, FileAccess::kWrite));
  auto buffer = NewHostBuffer(64, 0x99);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  // Either refused at once or failed on the queue; never a silent overrun.
  Status submit = device()->QueueWrite(1, {}, Points{{s.get(), 1}},
                                       buffer.get(), 0, file.get(), 16, 32);
  if (submit.ok()) {
    CTS_EXPECT_CODE(kOutOfRange, WaitFor(s.get(), 1));
  } else {
    CTS_EXPECT_CODE(kOutOfRange, submit);
  }
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(Slice(memory, 0, 16), Bytes(16, 0x00));
}

TEST_F(File, FailedWaitSkipsRead) {
  const Bytes contents = Pattern(64, 77);
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalFile> file,
      HalFile::WrapMemory(
          std::span<uint8_t>(const_cast<uint8_t*>(contents.data()), 64),
          FileAccess::kRead));
  auto buffer = NewHostBuffer(64, 0xEE);
  auto w = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && w && s);
  CTS_ASSERT_OK(device()->QueueRead(1, Points{{w.get(), 1}},
                                    Points{{s.get(), 1}}, file.get(), 0,
                                    buffer.get(), 0, 64));
  w->Fail(DataLossError("lost"));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(s.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(64, 0xEE));
}

}  // namespace
}  // namespace hal::cts
