#include "hal/cts/cts.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hal/uri.h"
#include "hal/wait_graph.h"

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
RunTraceHash& MutableRunTraceHash() {
  static RunTraceHash* hash = new RunTraceHash();
  return *hash;
}
void Fnv(uint64_t& h, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
}
void FnvU64(uint64_t& h, uint64_t v) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<unsigned char>(v >> (8 * i));
  Fnv(h, bytes, 8);
}
std::string CurrentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
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

uint64_t DeriveTestSeed(uint64_t run_seed, const std::string& test_name) {
  uint64_t h = 0xcbf29ce484222325ull;
  FnvU64(h, run_seed);
  Fnv(h, test_name.data(), test_name.size());
  return h;
}

std::string TestDeviceUri(const std::string& test_name) {
  const Context& ctx = GetContext();
  if (!ctx.backend || ctx.backend->seed_param.empty()) return ctx.uri;
  auto uri = DeviceUri::Parse(ctx.uri);
  if (!uri.ok()) return ctx.uri;  // CreateDevice reports it
  uri->params[ctx.backend->seed_param] =
      std::to_string(DeriveTestSeed(ctx.seed, test_name));
  const char* trace_dir = std::getenv("HAL_CHECK_TRACE_DIR");
  if (trace_dir && *trace_dir && !ctx.backend->trace_param.empty()) {
    static int tests = 0;
    char index[16];
    std::snprintf(index, sizeof(index), "%05d-", tests++);
    uri->params[ctx.backend->trace_param] =
        std::string(trace_dir) + "/" + index + test_name + ".trace";
  }
  return uri->ToString();
}

const RunTraceHash& GetRunTraceHash() { return MutableRunTraceHash(); }

void CtsTest::SetUp() {
  const Context& ctx = GetContext();
  ASSERT_NE(ctx.backend, nullptr) << "no CTS backend selected";
  std::string name = CurrentTestName();
  auto it = ctx.backend->unsupported.find(name);
  if (it != ctx.backend->unsupported.end()) {
    GTEST_SKIP() << "unsupported on " << ctx.backend->name << ": "
                 << it->second;
  }
  // Not a skip, even for UNAVAILABLE: a suite that skips every test on a
  // missing library passes without testing anything.
  oracles_before_ = OracleCounters();
  if (ctx.backend->faults_on) ctx.backend->faults_on(nullptr, true);
  std::string uri = TestDeviceUri(name);
  auto device = DefaultDriverRegistry().CreateDevice(uri);
  ASSERT_TRUE(device.ok()) << "cannot create device " << uri << ": "
                           << device.status().ToString();
  device_ = std::move(device).value();
}

void CtsTest::TearDown() {
  const Context& ctx = GetContext();
  if (device_ && ctx.backend && ctx.backend->trace_hash) {
    auto hash = ctx.backend->trace_hash(device_.get());
    if (hash.ok()) {
      RunTraceHash& run = MutableRunTraceHash();
      std::string name = CurrentTestName();
      Fnv(run.hash, name.data(), name.size());
      FnvU64(run.hash, *hash);
      ++run.tests;
      // Each test's hash, to name the first test whose schedule differs
      // between two runs of one seed.
      static const bool print = std::getenv("HAL_CHECK_TEST_HASHES") != nullptr;
      if (print) {
        std::fprintf(stderr, "trace hash of %s: 0x%016llx\n", name.c_str(),
                     static_cast<unsigned long long>(*hash));
      }
    }
  }
  // Liveness: every operation whose waits were reached (or failed) by now
  // must finish: the test is over and nothing more will be signalled, so a
  // runnable operation still pending is lost work (hal/wait_graph.h). The
  // faults stop first (the liveness phase of a swarm run).
  if (device_ && ctx.backend && ctx.backend->faults_on) {
    ctx.backend->faults_on(device_.get(), false);
  }
  if (device_) {
    Status live = CheckWaitGraphLiveness(device_.get(), kLivenessBound);
    if (!live.ok()) ADD_FAILURE() << live.ToString();
  }
  // Destroying the device finishes ready work and cancels operations whose
  // waits can no longer be met, so nothing runs into the next test.
  device_.reset();
  // After the device is gone: its release path is checked too.
  {
    auto after = OracleCounters();
    for (size_t i = 0; i < after.size() && i < oracles_before_.size(); ++i) {
      if (after[i].second != oracles_before_[i].second) {
        ADD_FAILURE() << "an oracle reported "
                      << after[i].second - oracles_before_[i].second << " new "
                      << after[i].first
                      << " during this test (its lines on stderr say what, "
                         "and replay with the seed they print)";
      }
    }
  }
}

std::vector<std::pair<std::string, uint64_t>> CtsTest::OracleCounters() {
  const Context& ctx = GetContext();
  std::vector<std::pair<std::string, uint64_t>> counters;
  if (ctx.backend && ctx.backend->oracle_counters) {
    counters = ctx.backend->oracle_counters();
  }
  // Every driver: the host-wait latency oracle (hal/semaphore.h) and the
  // wait-for graph's lifetime check (hal/wait_graph.h).
  counters.emplace_back("late semaphore wake-ups", SemaphoreLateWakeups());
  counters.emplace_back("semaphores released while an operation needed them",
                        WaitGraphLifetimeViolations());
  return counters;
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
    return "size " + std::to_string(got.size()) +
           " != " + std::to_string(want.size());
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
  // Callers index the result (got[i]); returning fewer bytes than asked
  // would be undefined behaviour there, so every failure throws.
  auto fail = [](const std::string& what) {
    throw CtsHelperError("ReadBack: " + what);
  };
  if (!buffer) fail("null buffer");
  DeviceSize n = 0;
  if (!ResolveRange(buffer->byte_length(), offset, length, &n)) {
    fail("range [" + std::to_string(offset) + ", +" + std::to_string(length) +
         ") is out of bounds of " + std::to_string(buffer->byte_length()) +
         " bytes");
  }
  std::vector<uint8_t> out(n);
  if (n == 0) return out;
  if (AllOf(buffer->memory_type(), MemoryType::kHostVisible) &&
      AllOf(buffer->allowed_usage(), BufferUsage::kMappingScoped)) {
    Status s = buffer->MapRead(offset, out.data(), n);
    if (!s.ok()) fail("MapRead: " + s.ToString());
    return out;
  }
  auto staging = allocator()->AllocateBuffer(HostParams(), n);
  if (!staging.ok()) fail("staging buffer: " + staging.status().ToString());
  auto done = device_->CreateSemaphore(0);
  if (!done.ok()) fail("semaphore: " + done.status().ToString());
  SemaphorePoint signal{done->get(), 1};
  Status s = device_->QueueCopy(1, {}, {&signal, 1}, buffer, offset,
                                staging->get(), 0, n);
  if (!s.ok()) fail("QueueCopy: " + s.ToString());
  s = WaitFor(done->get(), 1);
  if (!s.ok()) fail("waiting for the copy: " + s.ToString());
  s = (*staging)->MapRead(0, out.data(), n);
  if (!s.ok()) fail("MapRead of the staging buffer: " + s.ToString());
  return out;
}

Status CtsTest::WaitFor(Semaphore* semaphore, uint64_t value) {
  Status s = semaphore->Wait(value, Timeout::After(kCtsTimeout));
  if (s.code() == StatusCode::kDeadlineExceeded && WaitGraphEnabled()) {
    std::string graph = DescribeWaitGraph(device_.get());
    return DeadlineExceededError(
        "%s; the wait-for graph of the device:\n%s", s.ToString().c_str(),
        graph.empty() ? "  (no pending operation)\n" : graph.c_str());
  }
  return s;
}

}  // namespace hal::cts
