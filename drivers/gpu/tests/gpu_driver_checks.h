// What the GPU-stream drivers' tests (CUDA, HIP, Level Zero, AMDGPU) share,
// run over each driver's simulated vendor library: the simulator's controls
// (sim/core/halsim_control.h), a device over the simulated library, the
// fixture of a driver's own tests, and the checks that the shared suite
// (gpu_driver_suite.h) and a driver's own tests run.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "drivers/gpu/gpu_device.h"
#include "hal/device.h"
#include "hal/uri.h"

namespace hal::gpu::testing {

// A symbol of the simulated library at `path` (the library a driver loaded:
// dlopen of the same path returns its handle), or null.
template <typename F>
F SimSymbol(const char* path, const char* name) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return library ? reinterpret_cast<F>(dlsym(library, name)) : nullptr;
}

// The simulator's controls (halsim_control.h names, which every simulated
// library exports); null members when the library is missing.
struct SimControls {
  explicit SimControls(const char* path = nullptr) {
    if (!path) return;
    launched = SimSymbol<Counter>(path, "halsim_host_functions_launched");
    run = SimSymbol<Counter>(path, "halsim_host_functions_run");
    violations = SimSymbol<Counter>(path, "halsim_api_violations");
    work_done = SimSymbol<Counter>(path, "halsim_work_done");
    kernels_run = SimSymbol<Counter>(path, "halsim_kernels_run");
    graphs_run = SimSymbol<Counter>(path, "halsim_graphs_run");
    trace_hash = SimSymbol<Counter>(path, "halsim_trace_hash");
    races = SimSymbol<Counter>(path, "halsim_races");
    unrecorded_waits = SimSymbol<Counter>(path, "halsim_unsignalled_waits");
    pause = SimSymbol<void (*)(int)>(path, "halsim_pause_host_functions");
    set_faults = SimSymbol<int (*)(const char*)>(path, "halsim_set_faults");
    reset_schedule =
        SimSymbol<int (*)(uint64_t)>(path, "halsim_reset_schedule");
  }
  using Counter = uint64_t (*)();
  Counter launched = nullptr, run = nullptr, violations = nullptr,
          work_done = nullptr, kernels_run = nullptr, graphs_run = nullptr,
          trace_hash = nullptr, races = nullptr, unrecorded_waits = nullptr;
  void (*pause)(int) = nullptr;
  int (*set_faults)(const char*) = nullptr;
  int (*reset_schedule)(uint64_t) = nullptr;
};

// `driver`://?`params`, over the simulated library at `path`.
inline DeviceUri SimUri(const char* driver, const char* path,
                        const std::string& params = "") {
  auto parsed = DeviceUri::Parse(std::string(driver) + "://?" + params);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  DeviceUri uri = parsed.ok() ? *parsed : DeviceUri{};
  uri.driver = driver;
  uri.params["library"] = path;
  return uri;
}

// The device `create` makes for `uri`, or null (and a test failure).
template <typename Create>
Ref<Device> OpenDevice(Create create, const DeviceUri& uri) {
  auto device = create(uri);
  EXPECT_TRUE(device.ok()) << device.status().ToString();
  return device.ok() ? *device : Ref<Device>();
}

// The fixture of a driver's tests over its simulated library at `path`:
// the controls in `controls_`, no faults planned before and after each test,
// host functions resumed and the driver's fault hook removed after it
// (`clear_fault_hook`).
class SimDriverTest : public ::testing::Test {
 protected:
  SimDriverTest(const char* path, std::function<void()> clear_fault_hook)
      : path_(path), clear_fault_hook_(std::move(clear_fault_hook)) {}
  void SetUp() override {
    controls_ = SimControls(path_);
    ASSERT_NE(controls_.set_faults, nullptr)
        << "simulator not found at " << path_;
    ASSERT_EQ(controls_.set_faults(""), 0);
  }
  void TearDown() override {
    if (controls_.set_faults) controls_.set_faults("");
    if (controls_.pause) controls_.pause(0);
    clear_fault_hook_();
  }
  const char* path_;
  std::function<void()> clear_fault_hook_;
  SimControls controls_;
};

inline BufferParams HostParams() {
  BufferParams p;
  p.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  p.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  return p;
}

// Two queues (two streams): queue 0 fills a device buffer and signals s=1;
// queue 1 waits s>=1 and copies the buffer to host memory. With host
// functions held back, the copy still lands, and the host never sees s=1
// before that: the wait was a stream wait on queue 0's event, with no host
// round trip. `launched` and `run` may be null for a library with no host
// functions to count (Level Zero, whose simulator holds the driver's
// emulating host waits instead while paused).
template <typename Controls>
void CheckDeviceToDeviceChainMakesNoHostRoundTrip(const Ref<Device>& device,
                                                  const Controls& controls) {
  ASSERT_TRUE(device);
  constexpr DeviceSize kSize = 4096;
  BufferParams device_params;
  device_params.type = MemoryType::kDeviceLocal;
  auto source = device->allocator()->AllocateBuffer(device_params, kSize);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto target = device->allocator()->AllocateBuffer(HostParams(), kSize);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  ASSERT_TRUE((*target)->MapZero(0, kSize).ok());
  auto mapping = (*target)->Map(MappingMode::kPersistent, MemoryAccess::kRead);
  ASSERT_TRUE(mapping.ok());
  auto s = device->CreateSemaphore(0);
  auto t = device->CreateSemaphore(0);
  ASSERT_TRUE(s.ok() && t.ok());

  const bool counts_host_functions = controls.launched && controls.run;
  const uint64_t launched_before =
      counts_host_functions ? controls.launched() : 0;
  const uint64_t run_before = counts_host_functions ? controls.run() : 0;
  const uint64_t work_before = controls.work_done();
  const uint64_t violations_before = controls.violations();
  controls.pause(1);
  const uint32_t pattern = 0xA5A5A5A5u;
  SemaphorePoint s1{s->get(), 1}, t1{t->get(), 1};
  ASSERT_TRUE(
      device->QueueFill(1, {}, {&s1, 1}, source->get(), 0, kSize, &pattern, 4)
          .ok());
  ASSERT_TRUE(device
                  ->QueueCopy(2, {&s1, 1}, {&t1, 1}, source->get(), 0,
                              target->get(), 0, kSize)
                  .ok());
  // Both the fill and the copy run on their streams while no host function
  // may run (the simulator counts finished transfers and fills).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (controls.work_done() - work_before < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(controls.work_done() - work_before, 2u)
      << "the copy on queue 1 did not run while host functions were held: "
         "it waited for the host";
  // No host function ran, so the host has not seen s=1 yet.
  EXPECT_EQ(*(*s)->Query(), 0u);
  if (counts_host_functions) {
    EXPECT_EQ(controls.run(), run_before);
    EXPECT_EQ(controls.launched() - launched_before, 2u)
        << "one completion host function per operation";
  }
  controls.pause(0);
  EXPECT_TRUE((*t)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(*(*s)->Query(), 1u);
  const uint8_t* bytes = mapping->data();
  EXPECT_EQ(bytes[0], 0xA5);
  EXPECT_EQ(bytes[kSize - 1], 0xA5);
  EXPECT_EQ(controls.violations(), violations_before);
}

// command_buffer_mode=graph: a reusable command buffer (two fills, a
// barrier, a copy into a binding-table slot, a barrier, an update) runs with
// the stream path's results; its graph is launched again while the table
// names the same memory and rebuilt for other memory. `launches` reads the
// simulated library's launch counter (graphs, command lists), which grows
// by `per_run` for each execution.
inline void CheckGraphCommandBufferReuse(
    Device* device, const std::function<uint64_t()>& launches,
    uint64_t per_run) {
  auto* gpu_device = dynamic_cast<GpuDevice*>(device);
  ASSERT_NE(gpu_device, nullptr);
  const GpuGraphCache* graphs = gpu_device->graph_cache();
  ASSERT_NE(graphs, nullptr);
  auto a = device->allocator()->AllocateBuffer(HostParams(), 256);
  auto b = device->allocator()->AllocateBuffer(HostParams(), 256);
  auto c = device->allocator()->AllocateBuffer(HostParams(), 256);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto cb = device->CreateCommandBuffer(CommandBufferMode::kReusable,
                                        CommandCategory::kAny, 1, 1);
  ASSERT_TRUE(cb.ok()) << cb.status().ToString();
  const uint8_t x = 0x11;
  const uint16_t y = 0x2233;
  const uint32_t word = 0xA1B2C3D4u;
  ASSERT_TRUE((*cb)->Begin().ok());
  // Two fills that may run concurrently, then a copy and an update after a
  // barrier each.
  ASSERT_TRUE(
      (*cb)->FillBuffer(BufferRef::Direct(a->get(), 0, 128), &x, 1).ok());
  ASSERT_TRUE(
      (*cb)->FillBuffer(BufferRef::Direct(a->get(), 128, 128), &y, 2).ok());
  ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
  ASSERT_TRUE(
      (*cb)
          ->CopyBuffer(BufferRef::Direct(a->get()), BufferRef::Slot(0), 256)
          .ok());
  ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
  ASSERT_TRUE((*cb)->UpdateBuffer(&word, BufferRef::Slot(0, 4, 4)).ok());
  ASSERT_TRUE((*cb)->End().ok());

  auto s = device->CreateSemaphore(0);
  ASSERT_TRUE(s.ok());
  const uint64_t launches_before = launches();
  auto run = [&](Buffer* target, uint64_t value) {
    ASSERT_TRUE(target->MapZero(0, 256).ok());
    SemaphorePoint signal{s->get(), value};
    Binding binding{target, 0, 256};
    ASSERT_TRUE(
        device->QueueExecute(1, {}, {&signal, 1}, cb->get(), {&binding, 1})
            .ok());
    Status waited = (*s)->Wait(value, Timeout::After(std::chrono::seconds(20)));
    ASSERT_TRUE(waited.ok()) << waited.ToString();
    uint8_t bytes[256];
    ASSERT_TRUE(target->MapRead(0, bytes, sizeof(bytes)).ok());
    for (int i = 0; i < 256; ++i) {
      uint8_t want = i < 128 ? 0x11 : (i % 2 ? 0x22 : 0x33);
      if (i >= 4 && i < 8) want = static_cast<uint8_t>(word >> (8 * (i - 4)));
      ASSERT_EQ(bytes[i], want) << "byte " << i;
    }
  };
  run(b->get(), 1);
  run(b->get(), 2);
  EXPECT_EQ(graphs->graphs_built(), 1u);
  EXPECT_EQ(graphs->graphs_reused(), 1u);
  run(c->get(), 3);  // other memory in the table: a new graph
  EXPECT_EQ(graphs->graphs_built(), 2u);
  EXPECT_EQ(launches() - launches_before, 3 * per_run);
}

}  // namespace hal::gpu::testing
