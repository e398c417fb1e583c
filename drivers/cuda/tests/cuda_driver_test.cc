// The CUDA driver against the CUDA API simulator (HAL_CUDA_SIM_LIBRARY), and
// a symbols check against the real libcuda that skips without one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "drivers/cuda/cuda_device.h"
#include "drivers/cuda/cuda_dynamic_symbols.h"
#include "drivers/cuda/cuda_status.h"
#include "drivers/gpu/gpu_device.h"
#include "drivers/gpu/tests/gpu_driver_checks.h"
#include "drivers/gpu/tests/gpu_driver_suite.h"
#include "hal/driver.h"
#include "hal/executable.h"

namespace hal::cuda {
namespace {

using gpu::testing::HostParams;

constexpr char kSimLibrary[] = HAL_CUDA_SIM_LIBRARY;

// Several tests here race on purpose: the simulator must count and print
// races, not abort, whatever the environment says (cuInit reads it once).
[[maybe_unused]] const bool kRacesCounted =
    setenv("HALSIM_CUDA_RACES", "count", 1) == 0;

using gpu::testing::SimControls;

Ref<Device> OpenSimDevice(const std::string& params = "") {
  return gpu::testing::OpenDevice(
      [](const DeviceUri& uri) { return CreateCudaDevice(uri); },
      gpu::testing::SimUri("cuda", kSimLibrary, params));
}

class CudaSim : public gpu::testing::SimDriverTest {
 protected:
  CudaSim() : SimDriverTest(kSimLibrary, [] { SetCudaFaultHook(nullptr); }) {}
};

// The shared driver suite (drivers/gpu/tests/gpu_driver_suite.h) over the
// simulator: CudaSim/GpuDriverSuite.*/cuda.
const gpu::testing::GpuDriverBackend* CudaBackend() {
  static const gpu::testing::GpuDriverBackend* backend = [] {
    auto* b = new gpu::testing::GpuDriverBackend;
    b->name = "cuda";
    b->sim_library = kSimLibrary;
    b->sim_uri = [](const std::string& params) {
      return gpu::testing::SimUri("cuda", kSimLibrary, params);
    };
    b->create = [](const DeviceUri& uri) { return CreateCudaDevice(uri); };
    b->enumerate = [] { return EnumerateCudaDevices(kSimLibrary); };
    b->check_info = [](const DeviceInfo& info) {
      EXPECT_EQ(info.properties.at("compute_capability"), "8.0");
    };
    b->missing_library = "/nonexistent/libcuda.so.1";
    b->missing_library_hints = {"HAL_CUDA_LIBRARY"};
    b->set_fault_hook = [](std::function<bool(std::string_view)> fail) {
      if (!fail) return SetCudaFaultHook(nullptr);
      SetCudaFaultHook([fail](std::string_view call) {
        return fail(call) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
      });
    };
    b->host_alloc_call = "cuMemHostAlloc";
    b->host_alloc_fault_messages = {"CUDA_ERROR_OUT_OF_MEMORY",
                                    "in cuMemHostAlloc"};
    // The CUDA simulator's aliases (sim/cuda/sim_libcuda.h).
    b->alloc_fault_plan = "alloc=1";
    b->alloc_fault_messages = {"CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc"};
    b->op_fault_plan = "op=1";
    b->op_fault_messages = {"CUDA_ERROR_LAUNCH_FAILED"};
    b->test_kernels =
        std::string(HAL_CUDA_TEST_KERNELS_DIR) + "/test_kernels.cuda-ptx";
    b->unsupported["IndirectDispatchMakesNoHostRoundTrip"] =
        "CUDA has no indirect launch: the GPU layer reads the count on the "
        "host";
    return b;
  }();
  return backend;
}

HAL_GPU_DRIVER_SUITE(CudaSim, CudaBackend());

// The older halsim_cuda_* names (sim/cuda/sim_libcuda.h) are the same
// controls as halsim_control.h's.
TEST_F(CudaSim, OlderControlNamesAreAliases) {
  using gpu::testing::SimSymbol;
  auto hash = SimSymbol<uint64_t (*)()>(kSimLibrary, "halsim_cuda_trace_hash");
  auto waits =
      SimSymbol<uint64_t (*)()>(kSimLibrary, "halsim_cuda_unrecorded_waits");
  auto faults =
      SimSymbol<int (*)(const char*)>(kSimLibrary, "halsim_cuda_set_faults");
  ASSERT_TRUE(hash && waits && faults);
  EXPECT_EQ(hash(), controls_.trace_hash());
  EXPECT_EQ(waits(), controls_.unrecorded_waits());
  EXPECT_EQ(faults("alloc=1"), 0);
  EXPECT_EQ(faults("no_such_fault=1"), -1);
  EXPECT_EQ(controls_.set_faults(""), 0);
}

TEST_F(CudaSim, SymbolsResolveThroughGetProcAddress) {
  auto syms = LoadCudaSymbols(kSimLibrary);
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
  EXPECT_EQ((*syms)->driver_version, 13000);
  // Every symbol the driver resolves, optional ones included, is simulated
  // (sim/cuda/sim_libcuda_procs.inc must cover drivers/cuda/
  // cuda_symbols.inc).
#define HAL_CUDA_REQUIRED_SYMBOL(name) \
  EXPECT_NE((*syms)->name, nullptr) << #name;
#define HAL_CUDA_OPTIONAL_SYMBOL(name) \
  EXPECT_NE((*syms)->name, nullptr) << #name;
#include "drivers/cuda/cuda_symbols.inc"
#undef HAL_CUDA_REQUIRED_SYMBOL
#undef HAL_CUDA_OPTIONAL_SYMBOL
}

TEST_F(CudaSim, TooOldDriverIsUnavailable) {
  // Another spelling of the same path: not in the load cache yet.
  std::string path = kSimLibrary;
  path.insert(path.rfind('/'), "/.");
  setenv("HALSIM_CUDA_DRIVER_VERSION", "11080", 1);
  auto syms = LoadCudaSymbols(path);
  unsetenv("HALSIM_CUDA_DRIVER_VERSION");
  ASSERT_FALSE(syms.ok());
  EXPECT_EQ(syms.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(syms.status().message().find("too old"), std::string::npos)
      << syms.status().ToString();
}

TEST_F(CudaSim, SimulatorReportsCudaCallsFromHostFunctions) {
  auto syms_or = LoadCudaSymbols(kSimLibrary);
  ASSERT_TRUE(syms_or.ok());
  const CudaSymbols* syms = syms_or->get();
  CUcontext ctx = nullptr;
  ASSERT_EQ(syms->cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuCtxPushCurrent(ctx), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(syms->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  struct Probe {
    const CudaSymbols* syms;
    CUresult result = CUDA_SUCCESS;
  } probe{syms};
  const uint64_t before = controls_.violations();
  ASSERT_EQ(syms->cuLaunchHostFunc(
                stream,
                [](void* p) {
                  auto* probe = static_cast<Probe*>(p);
                  CUdeviceptr ptr;
                  probe->result = probe->syms->cuMemAlloc(&ptr, 16);
                },
                &probe),
            CUDA_SUCCESS);
  ASSERT_EQ(syms->cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(probe.result, CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(controls_.violations(), before + 1);
  EXPECT_EQ(syms->cuStreamDestroy(stream), CUDA_SUCCESS);
  CUcontext popped;
  EXPECT_EQ(syms->cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(syms->cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

// Direct use of the simulated libcuda from the test thread, behind a gate:
// every stream first waits on an event recorded behind a host function that
// is held until everything is enqueued, so the schedule cannot depend on how
// fast this thread enqueues.
class SimApi {
 public:
  explicit SimApi(const SimControls& controls) : controls_(controls) {
    auto syms = LoadCudaSymbols(kSimLibrary);
    EXPECT_TRUE(syms.ok()) << syms.status().ToString();
    if (!syms.ok()) return;
    syms_holder_ = std::move(*syms);
    syms_ = syms_holder_.get();
    EXPECT_EQ(syms_->cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    EXPECT_EQ(syms_->cuCtxPushCurrent(ctx_), CUDA_SUCCESS);
  }
  ~SimApi() {
    if (!syms_) return;
    CUcontext popped;
    syms_->cuCtxPopCurrent(&popped);
    syms_->cuDevicePrimaryCtxRelease(0);
  }
  const CudaSymbols* syms() const { return syms_; }

  // Creates `n` streams (after a schedule reset to `seed`) that all wait on
  // the gate.
  std::vector<CUstream> GatedStreams(uint64_t seed, int n) {
    EXPECT_EQ(controls_.reset_schedule(seed), 0);
    controls_.pause(1);
    EXPECT_EQ(syms_->cuStreamCreate(&gate_stream_, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    EXPECT_EQ(syms_->cuEventCreate(&gate_, CU_EVENT_DISABLE_TIMING),
              CUDA_SUCCESS);
    EXPECT_EQ(syms_->cuLaunchHostFunc(
                  gate_stream_, [](void*) {}, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(syms_->cuEventRecord(gate_, gate_stream_), CUDA_SUCCESS);
    std::vector<CUstream> streams(n);
    for (CUstream& stream : streams) {
      EXPECT_EQ(syms_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                CUDA_SUCCESS);
      EXPECT_EQ(syms_->cuStreamWaitEvent(stream, gate_, 0), CUDA_SUCCESS);
    }
    return streams;
  }
  // Opens the gate, waits for every stream and destroys them.
  void Run(std::vector<CUstream>& streams) {
    for (CUresult r : RunAll(streams)) EXPECT_EQ(r, CUDA_SUCCESS);
  }
  // Run, returning what each stream's synchronize returned.
  std::vector<CUresult> RunAll(std::vector<CUstream>& streams) {
    controls_.pause(0);
    std::vector<CUresult> results;
    for (CUstream stream : streams) {
      results.push_back(syms_->cuStreamSynchronize(stream));
      EXPECT_EQ(syms_->cuStreamDestroy(stream), CUDA_SUCCESS);
    }
    EXPECT_EQ(syms_->cuStreamDestroy(gate_stream_), CUDA_SUCCESS);
    EXPECT_EQ(syms_->cuEventDestroy(gate_), CUDA_SUCCESS);
    streams.clear();
    return results;
  }

 private:
  const SimControls& controls_;
  std::shared_ptr<const CudaSymbols> syms_holder_;
  const CudaSymbols* syms_ = nullptr;
  CUcontext ctx_ = nullptr;
  CUstream gate_stream_ = nullptr;
  CUevent gate_ = nullptr;
};

// Which stream's work completes first is the seed's choice: three streams,
// each a chain of fills and host functions that log the stream, give the
// same completion order and trace for the same seed, and different orders
// across seeds.
TEST_F(CudaSim, ScheduleFollowsTheSeedAndReplays) {
  SimApi api(controls_);
  ASSERT_TRUE(api.syms());
  const CudaSymbols* syms = api.syms();
  CUdeviceptr memory = 0;
  ASSERT_EQ(syms->cuMemAlloc(&memory, 3 * 4096), CUDA_SUCCESS);
  struct Log {
    std::vector<int> order;
  };
  struct Entry {
    Log* log;
    int stream;
  };
  auto run = [&](uint64_t seed, uint64_t* hash) {
    Log log;
    std::vector<Entry> entries;
    entries.reserve(12);
    std::vector<CUstream> streams = api.GatedStreams(seed, 3);
    for (int step = 0; step < 4; ++step) {
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(
            syms->cuMemsetD8Async(memory + 4096 * i, step, 4096, streams[i]),
            CUDA_SUCCESS);
        entries.push_back(Entry{&log, i});
        EXPECT_EQ(syms->cuLaunchHostFunc(
                      streams[i],
                      [](void* p) {
                        auto* e = static_cast<Entry*>(p);
                        e->log->order.push_back(e->stream);
                      },
                      &entries.back()),
                  CUDA_SUCCESS);
      }
    }
    api.Run(streams);
    *hash = controls_.trace_hash();
    std::string order;
    for (int i : log.order) order += char('0' + i);
    return order;
  };
  std::set<std::string> orders;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    uint64_t hash1 = 0, hash2 = 0;
    std::string first = run(seed, &hash1);
    std::string second = run(seed, &hash2);
    EXPECT_EQ(first.size(), 12u);
    EXPECT_EQ(first, second) << "seed " << seed << " did not replay";
    EXPECT_EQ(hash1, hash2) << "seed " << seed << " did not replay";
    orders.insert(first);
  }
  EXPECT_GE(orders.size(), 5u) << "the seed hardly changes the schedule";
  EXPECT_EQ(syms->cuMemFree(memory), CUDA_SUCCESS);
}

// Two streams writing overlapping bytes with no event between them race; the
// simulator reports it. Ordered by an event, the same writes do not.
TEST_F(CudaSim, RacesBetweenUnorderedStreamsAreReported) {
  SimApi api(controls_);
  ASSERT_TRUE(api.syms());
  const CudaSymbols* syms = api.syms();
  CUdeviceptr memory = 0;
  ASSERT_EQ(syms->cuMemAlloc(&memory, 1024), CUDA_SUCCESS);
  const uint64_t before = controls_.races();
  std::vector<CUstream> streams = api.GatedStreams(1, 2);
  ASSERT_EQ(syms->cuMemsetD8Async(memory, 1, 256, streams[0]), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuMemsetD8Async(memory + 128, 2, 256, streams[1]),
            CUDA_SUCCESS);
  api.Run(streams);
  EXPECT_EQ(controls_.races() - before, 1u);

  const uint64_t unordered = controls_.races();
  streams = api.GatedStreams(1, 2);
  CUevent event = nullptr;
  ASSERT_EQ(syms->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuMemsetD8Async(memory, 1, 256, streams[0]), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuEventRecord(event, streams[0]), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuStreamWaitEvent(streams[1], event, 0), CUDA_SUCCESS);
  // Destroying an event with a pending record and wait returns at once, as
  // in CUDA; both still work (ASan would see a use after free).
  ASSERT_EQ(syms->cuEventDestroy(event), CUDA_SUCCESS);
  ASSERT_EQ(syms->cuMemsetD8Async(memory + 128, 2, 256, streams[1]),
            CUDA_SUCCESS);
  api.Run(streams);
  EXPECT_EQ(controls_.races(), unordered) << "ordered writes reported";
  uint8_t bytes[384];  // unified addressing: device memory is host memory
  std::memcpy(bytes, reinterpret_cast<void*>(memory), sizeof(bytes));
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[200], 2) << "the second write landed first";
  EXPECT_EQ(syms->cuMemFree(memory), CUDA_SUCCESS);
}

// Sizes whose rounding to the allocation alignment wraps are out of memory,
// not a tiny block (a mapped write then overflowed the heap); so is a host
// range that wraps the address space for registration.
TEST_F(CudaSim, AllocationSizesThatOverflowAreOutOfMemory) {
  SimApi api(controls_);
  ASSERT_TRUE(api.syms());
  const CudaSymbols* syms = api.syms();
  for (size_t size : {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 2 + 1}) {
    void* host = nullptr;
    EXPECT_EQ(syms->cuMemHostAlloc(&host, size, 0), CUDA_ERROR_OUT_OF_MEMORY)
        << size;
    CUdeviceptr device = 0;
    EXPECT_EQ(syms->cuMemAlloc(&device, size), CUDA_ERROR_OUT_OF_MEMORY)
        << size;
    EXPECT_EQ(syms->cuMemAllocManaged(&device, size, CU_MEM_ATTACH_GLOBAL),
              CUDA_ERROR_OUT_OF_MEMORY)
        << size;
  }
  void* near_top = reinterpret_cast<void*>(~uintptr_t{0} - 4095);
  EXPECT_EQ(syms->cuMemHostRegister(near_top, 8192, 0),
            CUDA_ERROR_INVALID_VALUE);
  // Ordinary sizes still work.
  void* host = nullptr;
  ASSERT_EQ(syms->cuMemHostAlloc(&host, 100, 0), CUDA_SUCCESS);
  EXPECT_EQ(syms->cuMemFreeHost(host), CUDA_SUCCESS);
}

// Freed memory that a pending op still names stays allocated (quarantined):
// the op fails with CUDA_ERROR_ILLEGAL_ADDRESS instead of writing memory the
// process reuses (ASan saw a heap-use-after-free). One case per way memory
// is freed and written: cuMemFree then a memset, cuMemFreeAsync then a
// memset ordered after it, cuMemFree then a graph memset node.
TEST_F(CudaSim, WritesToFreedMemoryAreIllegalAddress) {
  enum class Case { kSyncFree, kStreamOrderedFree, kGraphAfterFree };
  for (Case c :
       {Case::kSyncFree, Case::kStreamOrderedFree, Case::kGraphAfterFree}) {
    SCOPED_TRACE(static_cast<int>(c));
    SimApi api(controls_);
    ASSERT_TRUE(api.syms());
    const CudaSymbols* syms = api.syms();
    CUdeviceptr memory = 0;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    CUevent freed = nullptr;
    if (c == Case::kStreamOrderedFree) {
      CUmemoryPool pool = nullptr;
      ASSERT_EQ(syms->cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
      std::vector<CUstream> setup = api.GatedStreams(1, 1);
      ASSERT_EQ(syms->cuMemAllocFromPoolAsync(&memory, 4096, pool, setup[0]),
                CUDA_SUCCESS);
      api.Run(setup);
    } else {
      ASSERT_EQ(syms->cuMemAlloc(&memory, 4096), CUDA_SUCCESS);
    }
    if (c == Case::kGraphAfterFree) {
      CUcontext ctx = nullptr;
      ASSERT_EQ(syms->cuCtxPopCurrent(&ctx), CUDA_SUCCESS);
      ASSERT_EQ(syms->cuCtxPushCurrent(ctx), CUDA_SUCCESS);
      ASSERT_EQ(syms->cuGraphCreate(&graph, 0), CUDA_SUCCESS);
      CUDA_MEMSET_NODE_PARAMS memset{};
      memset.dst = memory;
      memset.elementSize = 1;
      memset.width = 4096;
      memset.height = 1;
      memset.value = 7;
      CUgraphNode node = nullptr;
      ASSERT_EQ(
          syms->cuGraphAddMemsetNode(&node, graph, nullptr, 0, &memset, ctx),
          CUDA_SUCCESS);
      ASSERT_EQ(syms->cuGraphInstantiateWithFlags(&exec, graph, 0),
                CUDA_SUCCESS);
    }
    // streams[1] writes after streams[0] freed (or, gated, after the host
    // freed): the free is done before the write runs.
    std::vector<CUstream> streams = api.GatedStreams(1, 2);
    ASSERT_EQ(syms->cuEventCreate(&freed, CU_EVENT_DISABLE_TIMING),
              CUDA_SUCCESS);
    if (c == Case::kStreamOrderedFree) {
      ASSERT_EQ(syms->cuMemFreeAsync(memory, streams[0]), CUDA_SUCCESS);
    }
    ASSERT_EQ(syms->cuEventRecord(freed, streams[0]), CUDA_SUCCESS);
    ASSERT_EQ(syms->cuStreamWaitEvent(streams[1], freed, 0), CUDA_SUCCESS);
    if (c == Case::kGraphAfterFree) {
      ASSERT_EQ(syms->cuGraphLaunch(exec, streams[1]), CUDA_SUCCESS);
    } else {
      ASSERT_EQ(syms->cuMemsetD8Async(memory, 7, 4096, streams[1]),
                CUDA_SUCCESS);
    }
    if (c != Case::kStreamOrderedFree) {
      ASSERT_EQ(syms->cuMemFree(memory), CUDA_SUCCESS);
    }
    const uint64_t work_before = controls_.work_done();
    std::vector<CUresult> results = api.RunAll(streams);
    EXPECT_EQ(results[1], CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(controls_.work_done(), work_before) << "the write ran";
    syms->cuEventDestroy(freed);
    if (exec) syms->cuGraphExecDestroy(exec);
    if (graph) syms->cuGraphDestroy(graph);
    // ~SimApi releases the primary context and its sticky error.
  }
}

// The same misuse through the HAL, in each allocation and command-buffer
// mode: a queue_dealloca not ordered with a fill of the same buffer on
// another queue. Whichever the seed runs first, the simulator never writes
// freed memory (ASan saw it do so), and no semaphore hangs; a fill that
// lands after the free fails its signal with CUDA_ERROR_ILLEGAL_ADDRESS.
TEST_F(CudaSim, DeallocaRacingAnUnorderedFillNeverTouchesFreedMemory) {
  for (const char* mode :
       {"", "&async_allocations=0", "&command_buffer_mode=graph"}) {
    int fills_failed = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE(std::string("mode '") + mode + "', seed " +
                   std::to_string(seed));
      ASSERT_EQ(controls_.reset_schedule(seed), 0);
      Ref<Device> device = OpenSimDevice(std::string("queues=2") + mode);
      ASSERT_TRUE(device);
      auto allocated = device->CreateSemaphore(0);
      auto filled = device->CreateSemaphore(0);
      auto freed = device->CreateSemaphore(0);
      ASSERT_TRUE(allocated.ok() && filled.ok() && freed.ok());
      SemaphorePoint a{allocated->get(), 1}, f{filled->get(), 1},
          d{freed->get(), 1};
      BufferParams params;
      params.type = MemoryType::kDeviceLocal;
      auto buffer = device->QueueAlloca(1, {}, {&a, 1}, params, 64 * 1024);
      ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
      const uint32_t pattern = 0x5A5A5A5Au;
      // A backlog on queue 1 so that the dealloca is often done (on the
      // device and, with synchronous allocations, on the host) first.
      auto scratch = device->allocator()->AllocateBuffer(params, 4096);
      ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
      for (int i = 0; i < 8; ++i) {
        ASSERT_TRUE(
            device->QueueFill(2, {}, {}, scratch->get(), 0, 4096, &pattern, 4)
                .ok());
      }
      ASSERT_TRUE(device
                      ->QueueFill(2, {&a, 1}, {&f, 1}, buffer->get(), 0,
                                  64 * 1024, &pattern, 4)
                      .ok());
      ASSERT_TRUE(
          device->QueueDealloca(1, {&a, 1}, {&d, 1}, buffer->get()).ok());
      Status fill =
          (*filled)->Wait(1, Timeout::After(std::chrono::seconds(20)));
      Status dealloca =
          (*freed)->Wait(1, Timeout::After(std::chrono::seconds(20)));
      EXPECT_NE(fill.code(), StatusCode::kDeadlineExceeded) << fill.ToString();
      EXPECT_NE(dealloca.code(), StatusCode::kDeadlineExceeded)
          << dealloca.ToString();
      if (fill.message().find("CUDA_ERROR_ILLEGAL_ADDRESS") !=
          std::string::npos) {
        ++fills_failed;
      }
      device->WaitIdle(Timeout::After(std::chrono::seconds(20))).IgnoreError();
    }
    // The backlog makes the fill land after the free under these seeds
    // (each of them, when this was written).
    EXPECT_GE(fills_failed, 1)
        << "mode '" << mode << "': no seed ran the fill after the free";
  }
}

// CUDA's "record before wait" rule: a stream wait on an event that was never
// recorded orders nothing; the simulator counts and reports it. The driver
// never does it (checked over a two-queue chain).
TEST_F(CudaSim, WaitOnNeverRecordedEventIsReported) {
  {
    SimApi api(controls_);
    const CudaSymbols* syms = api.syms();
    CUstream stream = nullptr;
    CUevent event = nullptr;
    ASSERT_EQ(syms->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    ASSERT_EQ(syms->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
              CUDA_SUCCESS);
    const uint64_t before = controls_.unrecorded_waits();
    EXPECT_EQ(syms->cuStreamWaitEvent(stream, event, 0), CUDA_SUCCESS);
    EXPECT_EQ(controls_.unrecorded_waits(), before + 1);
    ASSERT_EQ(syms->cuEventRecord(event, stream), CUDA_SUCCESS);
    EXPECT_EQ(syms->cuStreamWaitEvent(stream, event, 0), CUDA_SUCCESS);
    EXPECT_EQ(controls_.unrecorded_waits(), before + 1);
    EXPECT_EQ(syms->cuStreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT_EQ(syms->cuEventDestroy(event), CUDA_SUCCESS);
    EXPECT_EQ(syms->cuStreamDestroy(stream), CUDA_SUCCESS);
  }
  Ref<Device> device = OpenSimDevice("queues=2");
  ASSERT_TRUE(device);
  const uint64_t before = controls_.unrecorded_waits();
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 256);
  ASSERT_TRUE(buffer.ok());
  auto s = device->CreateSemaphore(0);
  for (uint32_t i = 1; i <= 8; ++i) {
    SemaphorePoint wait{s->get(), i - 1}, signal{s->get(), i};
    ASSERT_TRUE(device
                    ->QueueFill(i % 2 ? 1 : 2, {&wait, 1}, {&signal, 1},
                                buffer->get(), 0, 256, &i, 4)
                    .ok());
  }
  ASSERT_TRUE((*s)->Wait(8, Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(controls_.unrecorded_waits(), before);
}

// Fault rates are drawn from the seed: the same seed fails the same
// allocations and the same stream operation again; other seeds fail others.
TEST_F(CudaSim, SeededFaultsReplay) {
  auto alloc_pattern = [&](uint64_t seed) {
    SimApi api(controls_);
    EXPECT_EQ(controls_.reset_schedule(seed), 0);
    EXPECT_EQ(controls_.set_faults("alloc_ppm=300000"), 0);
    std::string pattern;
    for (int i = 0; i < 24; ++i) {
      CUdeviceptr p = 0;
      CUresult r = api.syms()->cuMemAlloc(&p, 64);
      pattern += r == CUDA_SUCCESS ? '.' : 'X';
      if (r == CUDA_SUCCESS) api.syms()->cuMemFree(p);
    }
    controls_.set_faults("");
    return pattern;
  };
  // The index of the first failed fill on a stream (later ones are skipped:
  // the error is sticky until the context is released).
  auto first_failed_op = [&](uint64_t seed) {
    SimApi api(controls_);
    const CudaSymbols* syms = api.syms();
    EXPECT_EQ(controls_.reset_schedule(seed), 0);
    EXPECT_EQ(controls_.set_faults("op_ppm=100000"), 0);
    CUdeviceptr memory = 0;
    EXPECT_EQ(syms->cuMemAlloc(&memory, 64), CUDA_SUCCESS);
    std::memset(reinterpret_cast<void*>(memory), 0, 64);
    CUstream stream = nullptr;
    EXPECT_EQ(syms->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(syms->cuMemsetD8Async(memory + i, 1, 1, stream), CUDA_SUCCESS);
    }
    CUresult r = syms->cuStreamSynchronize(stream);
    EXPECT_EQ(syms->cuStreamDestroy(stream), CUDA_SUCCESS);
    controls_.set_faults("");
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(memory);
    int first = 0;
    while (first < 64 && bytes[first] == 1) ++first;
    EXPECT_EQ(r == CUDA_SUCCESS, first == 64);
    if (first < 64) {
      EXPECT_EQ(r, CUDA_ERROR_LAUNCH_FAILED);
    }
    return first;
  };
  std::set<std::string> alloc_patterns;
  std::set<int> op_indexes;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::string a = alloc_pattern(seed);
    EXPECT_EQ(a, alloc_pattern(seed)) << "seed " << seed;
    EXPECT_NE(a.find('X'), std::string::npos) << a;
    EXPECT_NE(a.find('.'), std::string::npos) << a;
    alloc_patterns.insert(a);
    int op = first_failed_op(seed);
    EXPECT_EQ(op, first_failed_op(seed)) << "seed " << seed;
    op_indexes.insert(op);
  }
  EXPECT_GE(alloc_patterns.size(), 6u);
  EXPECT_GE(op_indexes.size(), 3u);
}

// Graph nodes count toward the simulator's faults as stream work does: a
// failed fill node is a sticky CUDA_ERROR_LAUNCH_FAILED that fails the
// signal with the CUDA error name.
TEST_F(CudaSim, GraphLaunchFaultFailsSignal) {
  Ref<Device> device = OpenSimDevice("command_buffer_mode=graph");
  ASSERT_TRUE(device);
  auto a = device->allocator()->AllocateBuffer(HostParams(), 256);
  ASSERT_TRUE(a.ok());
  auto cb = device->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                        CommandCategory::kAny, 1, 0);
  ASSERT_TRUE(cb.ok());
  const uint8_t x = 7;
  ASSERT_TRUE((*cb)->Begin().ok());
  ASSERT_TRUE((*cb)->FillBuffer(BufferRef::Direct(a->get()), &x, 1).ok());
  ASSERT_TRUE((*cb)->End().ok());
  ASSERT_EQ(controls_.set_faults("op=1"), 0);
  auto s = device->CreateSemaphore(0);
  SemaphorePoint s1{s->get(), 1};
  ASSERT_TRUE(device->QueueExecute(1, {}, {&s1, 1}, cb->get()).ok());
  Status waited = (*s)->Wait(1, Timeout::After(std::chrono::seconds(20)));
  EXPECT_EQ(waited.code(), StatusCode::kDataLoss) << waited.ToString();
  EXPECT_NE(waited.message().find("CUDA_ERROR_LAUNCH_FAILED"),
            std::string::npos)
      << waited.ToString();
  EXPECT_TRUE(device->WaitIdle(Timeout::After(std::chrono::seconds(20))).ok());
}

// The CUDA-PTX test kernels, as the build packed them.
std::vector<uint8_t> PtxTestKernels() {
  std::ifstream in(
      std::string(HAL_CUDA_TEST_KERNELS_DIR) + "/test_kernels.cuda-ptx",
      std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

// PTX is loaded with cuModuleLoadDataEx and each export launched with
// cuLaunchKernel; the simulator runs the native build of the same kernel.
TEST_F(CudaSim, PtxKernelsRunThroughCuLaunchKernel) {
  std::vector<uint8_t> ptx = PtxTestKernels();
  if (ptx.empty()) GTEST_SKIP() << "no cuda-ptx test kernels were built";
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  auto cache = device->CreateExecutableCache();
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_TRUE((*cache)->CanPrepareFormat(ExecutableFormat::kCudaPtx));
  EXPECT_FALSE((*cache)->CanPrepareFormat(ExecutableFormat::kSim));
  ExecutableParams params;
  params.data = ptx;
  auto exe = (*cache)->Prepare(params);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto fill = (*exe)->LookupFunction("fill");
  ASSERT_TRUE(fill.ok());
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 256);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*buffer)->MapZero(0, 256).ok());
  auto s = device->CreateSemaphore(0);
  SemaphorePoint s1{s->get(), 1};
  const uint32_t constants[] = {0x12345678u, 60};
  BufferRef binding = BufferRef::Direct(buffer->get());
  DispatchParams p;
  p.executable = exe->get();
  p.entry_point = *fill;
  p.constants = constants;
  p.bindings = {&binding, 1};
  const uint64_t kernels_before = controls_.kernels_run();
  const uint64_t violations_before = controls_.violations();
  ASSERT_TRUE(device->QueueDispatch(1, {}, {&s1, 1}, p).ok());
  ASSERT_TRUE((*s)->Wait(1, Timeout::After(std::chrono::seconds(20))).ok());
  EXPECT_EQ(controls_.kernels_run() - kernels_before, 1u);
  uint32_t words[64];
  ASSERT_TRUE((*buffer)->MapRead(0, words, sizeof(words)).ok());
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(words[i], i < 60 ? 0x12345678u : 0u) << i;
  }
  EXPECT_EQ(controls_.violations(), violations_before);
}

// A kernel access past the allocation its pointer is in is what a GPU
// reports as an illegal address: a sticky error that fails the semaphores
// with the CUDA error name.
TEST_F(CudaSim, KernelAccessPastItsAllocationIsIllegalAddress) {
  std::vector<uint8_t> ptx = PtxTestKernels();
  if (ptx.empty()) GTEST_SKIP() << "no cuda-ptx test kernels were built";
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  auto cache = device->CreateExecutableCache();
  ASSERT_TRUE(cache.ok());
  ExecutableParams params;
  params.data = ptx;
  auto exe = (*cache)->Prepare(params);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 64);
  ASSERT_TRUE(buffer.ok());
  auto s = device->CreateSemaphore(0);
  SemaphorePoint s1{s->get(), 1};
  const uint32_t index[] = {1u << 20};
  BufferRef binding = BufferRef::Direct(buffer->get());
  DispatchParams p;
  p.executable = exe->get();
  p.entry_point = *(*exe)->LookupFunction("store_at");
  p.constants = index;
  p.bindings = {&binding, 1};
  ASSERT_TRUE(device->QueueDispatch(1, {}, {&s1, 1}, p).ok());
  Status st = (*s)->Wait(1, Timeout::After(std::chrono::seconds(20)));
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_NE(st.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << st.ToString();
}

// PTX that cuModuleLoadDataEx rejects is INVALID_ARGUMENT with the CUDA
// error name; an export its module lacks too.
TEST_F(CudaSim, BadPtxIsInvalidArgument) {
  std::vector<uint8_t> ptx = PtxTestKernels();
  if (ptx.empty()) GTEST_SKIP() << "no cuda-ptx test kernels were built";
  auto data = ParseExecutable(ptx);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Ref<Device> device = OpenSimDevice();
  ASSERT_TRUE(device);
  auto cache = device->CreateExecutableCache();
  ASSERT_TRUE(cache.ok());

  ExecutableData garbled = *data;
  for (ExecutableModule& m : garbled.modules) {
    std::string text = "not ptx at all\n";
    for (const FunctionInfo& f : garbled.functions) {
      text += ".entry " + f.name + "\n";
    }
    m.code.assign(text.begin(), text.end());
  }
  std::vector<uint8_t> bytes = SerializeExecutable(garbled);
  ExecutableParams params;
  params.data = bytes;
  auto r = (*cache)->Prepare(params);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("CUDA_ERROR_INVALID_PTX"),
            std::string::npos)
      << r.status().ToString();

  // An export in module 1 whose kernel lives in module 0.
  ExecutableData moved = *data;
  moved.functions[0].module_ordinal = 1;
  bytes = SerializeExecutable(moved);
  params.data = bytes;
  if (ParseExecutable(bytes).ok()) {  // module 1 must name the .entry too
    r = (*cache)->Prepare(params);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
        << r.status().ToString();
  }
}

TEST_F(CudaSim, LateEventsStillOrderWork) {
  Ref<Device> device = OpenSimDevice("queues=2");
  ASSERT_TRUE(device);
  ASSERT_EQ(controls_.set_faults("late_event_us=2000,late_event_ppm=500000"),
            0);
  auto buffer = device->allocator()->AllocateBuffer(HostParams(), 4);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*buffer)->MapZero(0, 4).ok());
  auto s = device->CreateSemaphore(0);
  // Ping-pong between the queues: each step overwrites the value, so only
  // the right order leaves the last one.
  for (uint32_t i = 1; i <= 20; ++i) {
    SemaphorePoint wait{s->get(), i - 1}, signal{s->get(), i};
    ASSERT_TRUE(device
                    ->QueueFill(i % 2 ? 1 : 2, {&wait, 1}, {&signal, 1},
                                buffer->get(), 0, 4, &i, 4)
                    .ok());
  }
  ASSERT_TRUE((*s)->Wait(20, Timeout::After(std::chrono::seconds(30))).ok());
  uint32_t value = 0;
  ASSERT_TRUE((*buffer)->MapRead(0, &value, 4).ok());
  EXPECT_EQ(value, 20u);
}

// The real driver: resolves every required symbol, or skips when this
// machine has no libcuda.
TEST(CudaRealLibrary, SymbolsResolve) {
  auto syms = LoadCudaSymbols("libcuda.so.1");
  if (!syms.ok() && syms.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << syms.status().ToString();
  }
  ASSERT_TRUE(syms.ok()) << syms.status().ToString();
#define HAL_CUDA_REQUIRED_SYMBOL(name) \
  EXPECT_NE((*syms)->name, nullptr) << #name;
#define HAL_CUDA_OPTIONAL_SYMBOL(name)
#include "drivers/cuda/cuda_symbols.inc"
#undef HAL_CUDA_REQUIRED_SYMBOL
#undef HAL_CUDA_OPTIONAL_SYMBOL
}

}  // namespace
}  // namespace hal::cuda
