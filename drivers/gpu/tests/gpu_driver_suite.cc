// The GPU-stream drivers' shared test suite (gpu_driver_suite.h): what every
// such driver must do over its simulated vendor library, written once.
#include "drivers/gpu/tests/gpu_driver_suite.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "drivers/gpu/gpu_executable.h"
#include "hal/executable.h"

namespace hal::gpu::testing {

void GpuDriverSuite::SetUp() {
  std::string test =
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  test = test.substr(0, test.find('/'));
  if (auto it = backend().unsupported.find(test);
      it != backend().unsupported.end()) {
    GTEST_SKIP() << backend().name << ": " << it->second;
  }
  if (auto it = backend().own_process.find(test);
      it != backend().own_process.end() &&
      !std::getenv("HAL_GPU_SUITE_OWN_PROCESS")) {
    GTEST_SKIP() << backend().name << ": runs in a process of its own ("
                 << it->second << ")";
  }
  const char* path = backend().sim_library.c_str();
  controls_ = SimControls(path);
  controls_.violations = SimSymbol<SimControls::Counter>(
      path, backend().violations_control.c_str());
  if (!backend().counts_host_functions) {
    controls_.launched = nullptr;
    controls_.run = nullptr;
  }
  ASSERT_NE(controls_.set_faults, nullptr) << "simulator not found at " << path;
  ASSERT_NE(controls_.pause, nullptr);
  ASSERT_NE(controls_.violations, nullptr) << backend().violations_control;
  ASSERT_EQ(controls_.set_faults(""), 0);
}

void GpuDriverSuite::TearDown() {
  if (controls_.set_faults) controls_.set_faults("");
  if (controls_.pause) controls_.pause(0);
  if (backend().set_fault_hook) backend().set_fault_hook(nullptr);
}

Ref<Device> GpuDriverSuite::OpenSimDevice(const std::string& params) {
  return OpenDevice(backend().create, backend().sim_uri(params));
}

std::string GpuDriverSuiteName(
    const ::testing::TestParamInfo<const GpuDriverBackend*>& info) {
  return info.param->name;
}

namespace {

// Each of `needles` is in `status`'s message.
void ExpectMessageNames(const Status& status,
                        const std::vector<std::string>& needles) {
  for (const std::string& needle : needles) {
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << "'" << needle << "' not in " << status.ToString();
  }
}

// Whether the fault hook's `call` (a name, or the unexpanded call
// expression "zeMemAllocHost(...)") is a call of `name`.
bool IsCall(std::string_view call, std::string_view name) {
  return call.substr(0, name.size()) == name &&
         (call.size() == name.size() || call[name.size()] == '(');
}

// `uuid` with every hex digit after "GPU-" zeroed: a UUID of the same shape
// that no simulated device has.
std::string ZeroUuid(std::string uuid) {
  for (size_t i = 4; i < uuid.size(); ++i) {
    if (uuid[i] != '-') uuid[i] = '0';
  }
  return uuid;
}

}  // namespace

TEST_P(GpuDriverSuite, MissingLibraryIsUnavailableWithHint) {
  DeviceUri uri = backend().sim_uri("");
  uri.params["library"] = backend().missing_library;
  auto device = backend().create(uri);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable)
      << device.status().ToString();
  ExpectMessageNames(device.status(), {backend().missing_library});
  ExpectMessageNames(device.status(), backend().missing_library_hints);
}

// Enumeration and URIs over the simulator: one device, `<driver>:0`, with
// a GPU-<uuid> that opens by ordinal and by UUID; a missing ordinal or UUID
// is NOT_FOUND; command_buffer_mode=graph opens and says so (or is
// UNIMPLEMENTED where the vendor has no graphs), =tape and an unknown
// parameter are INVALID_ARGUMENT.
TEST_P(GpuDriverSuite, EnumerationAndUris) {
  auto devices = backend().enumerate();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 1u);
  const DeviceInfo info = (*devices)[0];
  EXPECT_EQ(info.uri, backend().name + ":0");
  EXPECT_EQ(info.uuid.rfind("GPU-", 0), 0u) << info.uuid;
  EXPECT_EQ(info.uuid.size(), backend().uuid_size) << info.uuid;
  EXPECT_GT(info.memory_bytes, 0u);
  for (std::string id : {std::string("0"), info.uuid}) {
    DeviceUri uri = backend().sim_uri("");
    uri.devices = {id};
    auto device = backend().create(uri);
    ASSERT_TRUE(device.ok()) << id << ": " << device.status().ToString();
    EXPECT_EQ((*device)->info().uuid, info.uuid);
  }
  DeviceUri missing = backend().sim_uri("");
  for (std::string id : {std::string("3"), ZeroUuid(info.uuid)}) {
    missing.devices = {id};
    EXPECT_EQ(backend().create(missing).status().code(), StatusCode::kNotFound)
        << id;
  }
  auto graph = backend().create(backend().sim_uri("command_buffer_mode=graph"));
  if (backend().graphs) {
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    EXPECT_EQ((*graph)->info().properties.at("command_buffer_mode"), "graph");
  } else {
    EXPECT_EQ(graph.status().code(), StatusCode::kUnimplemented)
        << graph.status().ToString();
  }
  EXPECT_EQ(backend()
                .create(backend().sim_uri("command_buffer_mode=tape"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(backend().create(backend().sim_uri("colour=red")).status().code(),
            StatusCode::kInvalidArgument);
  if (backend().check_info) backend().check_info(info);
}

// Two queues, a device->device edge: no host round trip (the check in
// gpu_driver_checks.h, with host functions held back).
TEST_P(GpuDriverSuite, DeviceToDeviceChainMakesNoHostRoundTrip) {
  CheckDeviceToDeviceChainMakesNoHostRoundTrip(OpenSimDevice("queues=2"),
                                               controls_);
}

// The same chain through the host: a plain (non-device) semaphore must be
// signalled by the host before queue 1 may start.
TEST_P(GpuDriverSuite, HostSignalReleasesHeldWork) {
  Ref<Device> device = OpenSimDevice("queues=2");
  ASSERT_TRUE(device);
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 64);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*buffer)->MapZero(0, 64).ok());
  Ref<Semaphore> gate = Semaphore::Create(0);
  auto done = device->CreateSemaphore(0);
  SemaphorePoint g{gate.get(), 1}, d{done->get(), 1};
  const uint8_t pattern = 7;
  ASSERT_TRUE(
      device->QueueFill(2, {&g, 1}, {&d, 1}, buffer->get(), 0, 64, &pattern, 1)
          .ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint8_t first = 0;
  ASSERT_TRUE((*buffer)->MapRead(0, &first, 1).ok());
  EXPECT_EQ(first, 0) << "work ran before its wait was signalled";
  ASSERT_TRUE(gate->Signal(1).ok());
  ASSERT_TRUE((*done)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  ASSERT_TRUE((*buffer)->MapRead(63, &first, 1).ok());
  EXPECT_EQ(first, 7);
}

// The driver's fault hook fails any vendor call without reaching the
// library: a failed host allocation is RESOURCE_EXHAUSTED naming the
// vendor's result and the call.
TEST_P(GpuDriverSuite, FaultHookInjectsAnyCall) {
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  const std::string call = backend().host_alloc_call;
  backend().set_fault_hook(
      [call](std::string_view c) { return IsCall(c, call); });
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 64);
  backend().set_fault_hook(nullptr);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted)
      << buffer.status().ToString();
  ExpectMessageNames(buffer.status(), backend().host_alloc_fault_messages);
}

// An allocation the simulator fails is RESOURCE_EXHAUSTED with the vendor's
// names; the next allocation works.
TEST_P(GpuDriverSuite, SimulatedAllocationFaultIsResourceExhausted) {
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  ASSERT_EQ(controls_.set_faults(backend().alloc_fault_plan.c_str()), 0);
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  auto buffer = device->allocator()->AllocateBuffer(params, 1024);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted)
      << buffer.status().ToString();
  ExpectMessageNames(buffer.status(), backend().alloc_fault_messages);
  EXPECT_TRUE(device->allocator()->AllocateBuffer(params, 1024).ok());
}

// The same fault under a queue_alloca: the allocation's signal fails.
TEST_P(GpuDriverSuite, QueueAllocaFaultFailsSignal) {
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  ASSERT_EQ(controls_.set_faults(backend().alloc_fault_plan.c_str()), 0);
  auto s = device->CreateSemaphore(0);
  SemaphorePoint s1{s->get(), 1};
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  auto buffer = device->QueueAlloca(1, {}, {&s1, 1}, params, 1024);
  ASSERT_TRUE(buffer.ok());
  Status st = (*s)->Wait(1, Timeout::After(std::chrono::seconds(20)));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  ExpectMessageNames(st, backend().alloc_fault_messages);
}

// A stream operation the simulator fails fails its semaphores with
// DATA_LOSS and the vendor's error name; work chained to it on another
// queue fails too, and nothing hangs.
TEST_P(GpuDriverSuite, OperationFaultFailsTheSignal) {
  Ref<Device> device = OpenSimDevice("queues=2");
  ASSERT_TRUE(device);
  {
    auto buffer = device->allocator()->AllocateBuffer(HostParams(), 256);
    ASSERT_TRUE(buffer.ok());
    auto s = device->CreateSemaphore(0);
    auto t = device->CreateSemaphore(0);
    SemaphorePoint s1{s->get(), 1}, t1{t->get(), 1};
    ASSERT_EQ(controls_.set_faults(backend().op_fault_plan.c_str()), 0);
    const uint8_t pattern = 1;
    ASSERT_TRUE(
        device->QueueFill(1, {}, {&s1, 1}, buffer->get(), 0, 128, &pattern, 1)
            .ok());
    ASSERT_TRUE(device
                    ->QueueFill(2, {&s1, 1}, {&t1, 1}, buffer->get(), 128, 128,
                                &pattern, 1)
                    .ok());
    Status a = (*s)->Wait(1, Timeout::After(std::chrono::seconds(20)));
    Status b = (*t)->Wait(1, Timeout::After(std::chrono::seconds(20)));
    EXPECT_EQ(a.code(), StatusCode::kDataLoss) << a.ToString();
    ExpectMessageNames(a, backend().op_fault_messages);
    EXPECT_EQ(b.code(), StatusCode::kDataLoss) << b.ToString();
    EXPECT_TRUE(
        device->WaitIdle(Timeout::After(std::chrono::seconds(20))).ok());
  }
  // Releasing the device after the fault returns: no release path may wait
  // without bound on work behind the failure (Level Zero waited forever in
  // zeEventHostSynchronize for an event recorded behind it; issue 25).
  auto released =
      std::async(std::launch::async,
                 [device = std::move(device)]() mutable { device = nullptr; });
  if (released.wait_for(std::chrono::seconds(30)) !=
      std::future_status::ready) {
    std::fprintf(stderr,
                 "FAILED: releasing the %s device after an operation fault "
                 "did not return within 30 s\n",
                 backend().name.c_str());
    std::fflush(stderr);
    std::_Exit(1);  // the release thread is stuck: nothing else can end
  }
}

// command_buffer_mode=graph: command buffers run as the vendor's graphs
// (or regular command lists), counted by the simulator, with the stream
// path's results, reused while their addresses stay the same (the check in
// gpu_driver_checks.h); no API rule is broken.
TEST_P(GpuDriverSuite, GraphCommandBuffersLaunchAndReuse) {
  Ref<Device> device = OpenSimDevice("command_buffer_mode=graph");
  ASSERT_TRUE(device);
  auto launches = SimSymbol<SimControls::Counter>(
      backend().sim_library.c_str(), backend().graph_launch_control.c_str());
  ASSERT_NE(launches, nullptr) << backend().graph_launch_control;
  const uint64_t violations_before = controls_.violations();
  CheckGraphCommandBufferReuse(device.get(), launches,
                               backend().graph_launches_per_run);
  EXPECT_TRUE(device->WaitIdle(Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(controls_.violations(), violations_before);
}

// An indirect dispatch reads its workgroup count on the device: with every
// host reaction held, a command buffer that fills the count and then
// dispatches with it runs to the end, and the submission neither reads the
// count back (gpu::IndirectCountHostReads) nor allocates host memory for
// it; the semaphore is signalled only once the host may react.
TEST_P(GpuDriverSuite, IndirectDispatchMakesNoHostRoundTrip) {
  std::ifstream in(backend().test_kernels, std::ios::binary);
  std::vector<uint8_t> code((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
  ASSERT_FALSE(code.empty()) << "no test kernels at " << backend().test_kernels;
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  auto cache = device->CreateExecutableCache();
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  ExecutableParams params;
  params.data = code;
  auto exe = (*cache)->Prepare(params);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto write_ids = (*exe)->LookupFunction("write_ids");
  ASSERT_TRUE(write_ids.ok()) << write_ids.status().ToString();

  BufferParams device_params;
  device_params.type = MemoryType::kDeviceLocal;
  device_params.usage = BufferUsage::kDefault;
  auto count = device->allocator()->AllocateBuffer(device_params, 12);
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  constexpr uint32_t kWords = 32;
  auto out = device->allocator()->AllocateBuffer(HostParams(), kWords * 4);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE((*out)->MapZero(0, kWords * 4).ok());

  auto cb = device->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                        CommandCategory::kAny, 1, 0);
  ASSERT_TRUE(cb.ok()) << cb.status().ToString();
  const uint32_t three = 3;  // {3, 3, 3}: 27 workgroups of write_ids
  BufferRef indirect = BufferRef::Direct(count->get());
  BufferRef binding = BufferRef::Direct(out->get());
  const uint32_t constants[] = {3, 3};  // id = x + 3 * (y + 3 * z)
  DispatchParams p;
  p.executable = exe->get();
  p.entry_point = *write_ids;
  p.constants = constants;
  p.bindings = {&binding, 1};
  p.indirect_workgroup_count = &indirect;
  ASSERT_TRUE((*cb)->Begin().ok());
  ASSERT_TRUE((*cb)->FillBuffer(indirect, &three, 4).ok());
  ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
  ASSERT_TRUE((*cb)->Dispatch(p).ok());
  ASSERT_TRUE((*cb)->End().ok());

  auto s = device->CreateSemaphore(0);
  ASSERT_TRUE(s.ok());
  SemaphorePoint s1{s->get(), 1};
  const uint64_t kernels_before = controls_.kernels_run();
  const uint64_t violations_before = controls_.violations();
  // Holding host functions alone does not tell: a host round trip is a host
  // wait (copy, synchronize) that needs no host function. The GPU layer
  // counts its reads of the count, and a read through a bounce buffer
  // allocates host memory, which the fault hook sees.
  const uint64_t host_reads_before = IndirectCountHostReads();
  static std::atomic<int> host_allocations;
  host_allocations = 0;
  const std::string call = backend().host_alloc_call;
  backend().set_fault_hook([call](std::string_view c) {
    if (IsCall(c, call)) ++host_allocations;
    return false;
  });
  controls_.pause(1);
  Status submitted = device->QueueExecute(1, {}, {&s1, 1}, cb->get());
  backend().set_fault_hook(nullptr);
  const uint64_t want = backend().indirect_kernels_run;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (controls_.kernels_run() - kernels_before < want &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const uint64_t kernels = controls_.kernels_run() - kernels_before;
  const uint64_t signalled = *(*s)->Query();
  controls_.pause(0);
  ASSERT_TRUE(submitted.ok()) << submitted.ToString();
  EXPECT_EQ(kernels, want)
      << "the indirect dispatch did not run while the host was held: it "
         "waited for the host";
  EXPECT_EQ(signalled, 0u);  // the host had not reacted yet
  EXPECT_EQ(host_allocations.load(), 0)
      << "the submission allocated host memory: a host read of the count";
  ASSERT_TRUE((*s)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  uint32_t got[kWords];
  ASSERT_TRUE((*out)->MapRead(0, got, sizeof(got)).ok());
  for (uint32_t i = 0; i < kWords; ++i) {
    EXPECT_EQ(got[i], i < 27 ? i + 1 : 0u) << i;
  }
  EXPECT_EQ(controls_.violations(), violations_before);
  EXPECT_EQ(IndirectCountHostReads(), host_reads_before)
      << "the count was read on the host";
}

}  // namespace hal::gpu::testing
