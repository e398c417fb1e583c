#include "hal/cts/cts.h"

#include <algorithm>
#include <cstring>

namespace hal::cts {

namespace {
std::vector<Backend>& MutableBackends() {
  static std::vector<Backend>* backends = new std::vector<Backend>();
  return *backends;
}
Context& MutableContext() {
  static Context* context = new Context();
  return *context;
}
}  // namespace

void RegisterBackend(Backend backend) {
  MutableBackends().push_back(std::move(backend));
}

const Backend* FindBackend(const std::string& driver_name) {
  for (const auto& b : MutableBackends()) {
    if (b.name == driver_name) return &b;
  }
  return nullptr;
}

const std::vector<Backend>& Backends() { return MutableBackends(); }

void SetContext(Context context) { MutableContext() = std::move(context); }
const Context& GetContext() { return MutableContext(); }

void CtsTest::SetUp() {
  const Context& ctx = GetContext();
  ASSERT_NE(ctx.backend, nullptr) << "no CTS backend selected";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  auto it = ctx.backend->unsupported.find(name);
  if (it != ctx.backend->unsupported.end()) {
    GTEST_SKIP() << "unsupported on " << ctx.backend->name << ": " << it->second;
  }
  auto device = DefaultDriverRegistry().CreateDevice(ctx.uri);
  if (!device.ok() && device.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << "device unavailable: " << device.status().ToString();
  }
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  device_ = std::move(device).value();
}

void CtsTest::TearDown() {
  // Destroying the device finishes ready work and cancels operations whose
  // waits can no longer be met, so nothing runs into the next test.
  device_.reset();
}

bool CtsTest::HasTag(const std::string& tag) const {
  const auto& tags = GetContext().backend->tags;
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

Ref<Semaphore> CtsTest::NewSemaphore(uint64_t initial_value) {
  auto s = device_->CreateSemaphore(initial_value);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s.value() : Ref<Semaphore>();
}

BufferParams HostParams() {
  BufferParams p;
  p.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  p.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  return p;
}

BufferParams DeviceParams() {
  BufferParams p;
  p.type = MemoryType::kDeviceLocal;
  p.usage = BufferUsage::kDefault;
  return p;
}

std::string Diff(const Bytes& got, const Bytes& want) {
  if (got.size() != want.size()) {
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return "byte " + std::to_string(i) + ": got " + std::to_string(got[i]) +
             ", want " + std::to_string(want[i]);
    }
  }
  return "";
}

uint64_t Payload(HalSemaphore* semaphore) {
  auto v = semaphore->Query();
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : ~uint64_t{0};
}

Ref<Buffer> CtsTest::NewHostBuffer(DeviceSize size, uint8_t fill) {
  auto b = allocator()->AllocateBuffer(HostParams(), size);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return nullptr;
  if (size) {
    EXPECT_TRUE(b.value()->MapFill(0, size, &fill, 1).ok());
  }
  return b.value();
}

Ref<Buffer> CtsTest::NewDeviceBuffer(DeviceSize size) {
  auto b = allocator()->AllocateBuffer(DeviceParams(), size);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? b.value() : Ref<Buffer>();
}

std::vector<uint8_t> CtsTest::ReadBack(Buffer* buffer, DeviceSize offset,
                                       DeviceSize length) {
  DeviceSize n = 0;
  if (!ResolveRange(buffer->byte_length(), offset, length, &n)) {
    ADD_FAILURE() << "ReadBack range out of bounds";
    return {};
  }
  std::vector<uint8_t> out(n);
  if (n == 0) return out;
  if (AllOf(buffer->memory_type(), MemoryType::kHostVisible) &&
      AllOf(buffer->allowed_usage(), BufferUsage::kMappingScoped)) {
    Status s = buffer->MapRead(offset, out.data(), n);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  Ref<Buffer> staging = NewHostBuffer(n);
  Ref<Semaphore> done = NewSemaphore(0);
  if (!staging || !done) return {};
  SemaphorePoint signal{done.get(), 1};
  Status s = device_->QueueCopy(1, {}, {&signal, 1}, buffer, offset,
                                staging.get(), 0, n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = WaitFor(done.get(), 1);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = staging->MapRead(0, out.data(), n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Status CtsTest::WaitFor(Semaphore* semaphore, uint64_t value) {
  return semaphore->Wait(value, Timeout::After(kCtsTimeout));
}

}  // namespace hal::cts
