// Dispatch throughput and executable loading, each next to its baseline.
//
// Throughput: the test kernel `copy` (b1[i] = b0[i], uint32 elements) over
// kCopyBytes, as 4 dispatches of a quarter each in one reusable command
// buffer, submitted and waited for per iteration, on the simulator with 1
// and 2 worker threads (`workers=N` is added to the device URI; other
// drivers run on the device as given). Baselines: the same element loop
// called directly in this binary (the physical limit of this machine), on 1
// and 2 threads; and the simulator's checked copy kernel, compiled into this
// binary from the same macro layer, called over all its workgroups at once
// without the HAL (bench_kernels.c): the gap between it and the plain loop
// is the cost of the kernel's bounds checks, the gap between it and the
// dispatch is the dispatch machinery. Bytes processed are bytes read plus bytes
// written (2 x kCopyBytes per iteration), so `bytes_per_second` ratios read
// directly. Multi-threaded benchmarks use real time.
//
// Loading: for every test-kernel format this build produced,
// ParseExecutable of test_kernels.<format> (baseline: copying the same bytes
// into a fresh std::vector); for formats the device can prepare,
// ExecutableCache::Prepare (baseline, sim format: memfd_create + write +
// dlopen + dlsym of every export + dlclose of the same modules, what the
// simulator's loader must at least do).
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/bench_common.h"
#include "hal/command_buffer.h"
#include "hal/driver.h"
#include "hal/executable.h"
#include "sim/core/sim_kernel_abi.h"
#if HAL_BENCH_HAVE_TEST_KERNELS
#include "hal/cts/test_kernels.h"
#endif

extern "C" void hal_bench_copy(hal_sim_dispatch_state* state);
extern "C" void hal_bench_copy_unchecked(hal_sim_dispatch_state* state);

namespace hal::bench {
namespace {

constexpr uint64_t kCopyBytes = 32ull << 20;
constexpr uint64_t kCopyElements = kCopyBytes / 4;
constexpr uint64_t kCopyPieces = 4;  // dispatches; each <= 65535 workgroups
constexpr uint64_t kPieceElements = kCopyElements / kCopyPieces;
constexpr uint32_t kWorkgroupSize = 64;  // the `copy` kernel's
static_assert(kPieceElements % kWorkgroupSize == 0);
static_assert(kPieceElements / kWorkgroupSize <= kMaxWorkgroupCount);

void ReportBytes(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * 2 * int64_t{kCopyBytes});
}

// Host memory for the baselines, allocated and touched once.
struct HostArrays {
  std::vector<uint32_t> src, dst;
};
HostArrays& Host() {
  static HostArrays* h = [] {
    auto* a = new HostArrays;
    a->src.resize(kCopyElements);
    a->dst.resize(kCopyElements);
    for (uint64_t i = 0; i < kCopyElements; ++i) a->src[i] = uint32_t(i * 7);
    AtTeardown([a] { delete a; });
    return a;
  }();
  return *h;
}

// The body of the `copy` kernel as a plain loop.
__attribute__((noinline)) void CopyLoop(const uint32_t* src, uint32_t* dst,
                                        uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) dst[i] = src[i];
}

void BM_Baseline_CopyLoop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostArrays& h = Host();
  const uint64_t per = kCopyElements / threads;
  for (auto _ : state) {
    if (threads == 1) {
      CopyLoop(h.src.data(), h.dst.data(), kCopyElements);
    } else {
      std::vector<std::thread> helpers;
      for (int t = 1; t < threads; ++t) {
        helpers.emplace_back([&h, t, per] {
          CopyLoop(h.src.data() + t * per, h.dst.data() + t * per, per);
        });
      }
      CopyLoop(h.src.data(), h.dst.data(), per);
      for (auto& t : helpers) t.join();
    }
    benchmark::ClobberMemory();
  }
  ReportBytes(state);
}

// The simulator's checked kernel (range 0: 1) or the same loop without
// checks (0), called as the simulator calls it with one worker (one call
// for every workgroup of the copy), on this thread.
void BM_Baseline_CopyKernelDirect(benchmark::State& state) {
  hal_sim_kernel_fn kernel =
      state.range(0) ? hal_bench_copy : hal_bench_copy_unchecked;
  HostArrays& h = Host();
  uint8_t* data[2] = {reinterpret_cast<uint8_t*>(h.src.data()),
                      reinterpret_cast<uint8_t*>(h.dst.data())};
  const uint64_t lengths[2] = {kCopyBytes, kCopyBytes};
  const uint32_t flags[2] = {HAL_SIM_BINDING_READ_ONLY, 0};
  const uint32_t constants[1] = {static_cast<uint32_t>(kCopyElements)};
  hal_sim_dispatch_state base{};
  const uint32_t groups = static_cast<uint32_t>(kCopyElements / kWorkgroupSize);
  base.workgroup_begin = 0;
  base.workgroup_end = groups;
  base.workgroup_count[0] = groups;
  base.workgroup_count[1] = base.workgroup_count[2] = 1;
  base.workgroup_size[0] = kWorkgroupSize;
  base.workgroup_size[1] = base.workgroup_size[2] = 1;
  base.constant_count = 1;
  base.constants = constants;
  base.binding_count = 2;
  base.binding_data = data;
  base.binding_lengths = lengths;
  base.binding_flags = flags;
  for (auto _ : state) {
    hal_sim_dispatch_state s = base;
    kernel(&s);
    if (s.fault != HAL_SIM_FAULT_NONE) {
      state.SkipWithError("the copy kernel faulted");
      return;
    }
    benchmark::ClobberMemory();
  }
  ReportBytes(state);
}

// One simulator device per worker count, with its buffers and command
// buffer, kept across the runs of a benchmark.
struct CopySetup {
  Ref<Device> device;
  Ref<Executable> exe;
  Ref<Buffer> src, dst;
  Ref<CommandBuffer> cb;
  Ref<Semaphore> done;
  uint64_t value = 0;
  std::string label;
};

StatusOr<Ref<Device>> DeviceWithWorkers(int workers, std::string* label) {
  if (GetDevice()->info().driver != "sim") {
    *label = "device as given (workers apply to the simulator only)";
    return Ref<Device>(GetDevice());
  }
  std::string uri = DeviceUri();
  if (uri.find("workers=") != std::string::npos) {
    *label = "workers as given in the URI";
    return Ref<Device>(GetDevice());
  }
  if (uri.find("://") == std::string::npos) uri += "://";
  uri += uri.find('?') == std::string::npos ? "?" : "&";
  uri += "workers=" + std::to_string(workers);
  *label = uri;
  return DefaultDriverRegistry().CreateDevice(uri);
}

// `device_local`: the buffers live in device memory (filled and checked
// through queue operations) instead of host memory mapped by the benchmark.
// On the simulator both are host memory; on a GPU only the device-local
// variant measures the kernel against the device's memory (host memory is
// read over the bus).
StatusOr<CopySetup*> GetCopySetup(int workers, bool device_local) {
  static std::map<int, std::unique_ptr<CopySetup>>* setups = [] {
    auto* m = new std::map<int, std::unique_ptr<CopySetup>>;
    AtTeardown([m] { delete m; });
    return m;
  }();
  const int key = workers * 2 + (device_local ? 1 : 0);
  auto it = setups->find(key);
  if (it != setups->end()) return it->second.get();

  auto s = std::make_unique<CopySetup>();
  HAL_ASSIGN_OR_RETURN(s->device, DeviceWithWorkers(workers, &s->label));
  Device* device = s->device.get();
  HAL_ASSIGN_OR_RETURN(Ref<ExecutableCache> cache,
                       device->CreateExecutableCache());
  HAL_ASSIGN_OR_RETURN(s->exe, PrepareTestKernels(cache.get()));
  HAL_ASSIGN_OR_RETURN(uint32_t entry, s->exe->LookupFunction("copy"));
  BufferParams host_params;
  host_params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  host_params.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  BufferParams params = host_params;
  if (device_local) {
    params.type = MemoryType::kDeviceLocal;
    params.usage = BufferUsage::kDefault;
  }
  HAL_ASSIGN_OR_RETURN(s->src,
                       device->allocator()->AllocateBuffer(params, kCopyBytes));
  HAL_ASSIGN_OR_RETURN(s->dst,
                       device->allocator()->AllocateBuffer(params, kCopyBytes));
  const uint32_t pattern = 0x5A5A1234, zero = 0;
  HAL_ASSIGN_OR_RETURN(s->done, device->CreateSemaphore(0));
  if (device_local) {
    SemaphorePoint filled{s->done.get(), ++s->value};
    HAL_RETURN_IF_ERROR(device->QueueFill(1, {}, {&filled, 1}, s->src.get(), 0,
                                          kCopyBytes, &pattern, 4));
    SemaphorePoint zeroed{s->done.get(), ++s->value};
    HAL_RETURN_IF_ERROR(device->QueueFill(
        1, {&filled, 1}, {&zeroed, 1}, s->dst.get(), 0, kCopyBytes, &zero, 4));
    HAL_RETURN_IF_ERROR(s->done->Wait(s->value, Timeout::Infinite()));
  } else {
    HAL_RETURN_IF_ERROR(s->src->MapFill(0, kCopyBytes, &pattern, 4));
    HAL_RETURN_IF_ERROR(s->dst->MapFill(0, kCopyBytes, &zero, 4));
  }

  HAL_ASSIGN_OR_RETURN(
      s->cb, device->CreateCommandBuffer(CommandBufferMode::kReusable,
                                         CommandCategory::kDispatch, 1, 0));
  HAL_RETURN_IF_ERROR(s->cb->Begin());
  const uint32_t constants[1] = {static_cast<uint32_t>(kPieceElements)};
  for (uint64_t p = 0; p < kCopyPieces; ++p) {
    const DeviceSize offset = p * kPieceElements * 4;
    BufferRef bindings[2] = {
        BufferRef::Direct(s->src.get(), offset, kPieceElements * 4),
        BufferRef::Direct(s->dst.get(), offset, kPieceElements * 4)};
    DispatchParams d;
    d.executable = s->exe.get();
    d.entry_point = entry;
    d.workgroup_count[0] =
        static_cast<uint32_t>(kPieceElements / kWorkgroupSize);
    d.constants = constants;
    d.bindings = bindings;
    HAL_RETURN_IF_ERROR(s->cb->Dispatch(d));
  }
  HAL_RETURN_IF_ERROR(s->cb->End());

  // One run, checked, so that a broken dispatch cannot pass for a fast one.
  SemaphorePoint signal{s->done.get(), ++s->value};
  HAL_RETURN_IF_ERROR(device->QueueExecute(1, {}, {&signal, 1}, s->cb.get()));
  Ref<Buffer> check = s->dst;
  if (device_local) {
    HAL_ASSIGN_OR_RETURN(
        check, device->allocator()->AllocateBuffer(host_params, kCopyBytes));
    SemaphorePoint copied{s->done.get(), ++s->value};
    HAL_RETURN_IF_ERROR(device->QueueCopy(1, {&signal, 1}, {&copied, 1},
                                          s->dst.get(), 0, check.get(), 0,
                                          kCopyBytes));
  }
  HAL_RETURN_IF_ERROR(s->done->Wait(s->value, Timeout::Infinite()));
  for (uint64_t at : {uint64_t{0}, kCopyBytes / 2 + 4, kCopyBytes - 4}) {
    uint32_t got = 0;
    HAL_RETURN_IF_ERROR(check->MapRead(at, &got, 4));
    if (got != pattern) {
      return InternalError("copy dispatch wrote %08x at byte %llu, want %08x",
                           got, (unsigned long long)at, pattern);
    }
  }
  return setups->emplace(key, std::move(s)).first->second.get();
}

void BM_Dispatch_Copy(benchmark::State& state) {
  HAL_BENCH_ASSIGN(
      state, CopySetup * s,
      GetCopySetup(static_cast<int>(state.range(0)), state.range(1) != 0));
  for (auto _ : state) {
    SemaphorePoint signal{s->done.get(), ++s->value};
    HAL_BENCH_CHECK(state,
                    s->device->QueueExecute(1, {}, {&signal, 1}, s->cb.get()));
    HAL_BENCH_CHECK(state, s->done->Wait(s->value, Timeout::Infinite()));
  }
  state.SetLabel(s->label);
  ReportBytes(state);
}

BENCHMARK(BM_Baseline_CopyLoop)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Baseline_CopyKernelDirect)
    ->ArgName("checked")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
// device_local:0 maps host memory; device_local:1 (workers 1 only) is the
// variant that measures a GPU's own memory.
BENCHMARK(BM_Dispatch_Copy)
    ->ArgNames({"workers", "device_local"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Executable loading.

#if HAL_BENCH_HAVE_TEST_KERNELS

// The bytes of every produced test-kernel file, read once.
std::map<ExecutableFormat, std::vector<uint8_t>>& KernelFiles() {
  static auto* files = new std::map<ExecutableFormat, std::vector<uint8_t>>;
  return *files;
}

void BM_Baseline_CopyBytes(benchmark::State& state, ExecutableFormat format) {
  const std::vector<uint8_t>& bytes = KernelFiles()[format];
  for (auto _ : state) {
    std::vector<uint8_t> copy(bytes.begin(), bytes.end());
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(bytes.size()));
}

void BM_ParseExecutable(benchmark::State& state, ExecutableFormat format) {
  const std::vector<uint8_t>& bytes = KernelFiles()[format];
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, ExecutableData data, ParseExecutable(bytes));
    benchmark::DoNotOptimize(data.functions.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(bytes.size()));
}

void BM_Executable_Prepare(benchmark::State& state, ExecutableFormat format) {
  const std::vector<uint8_t>& bytes = KernelFiles()[format];
  HAL_BENCH_ASSIGN(state, Ref<ExecutableCache> cache,
                   GetDevice()->CreateExecutableCache());
  ExecutableParams params;
  params.data = bytes;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<Executable> exe, cache->Prepare(params));
    benchmark::DoNotOptimize(exe.get());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(bytes.size()));
}

// What loading a sim executable's modules costs without the HAL.
void BM_Baseline_DlopenModules(benchmark::State& state) {
  const std::vector<uint8_t>& bytes = KernelFiles()[ExecutableFormat::kSim];
  HAL_BENCH_ASSIGN(state, ExecutableData data, ParseExecutable(bytes));
  for (auto _ : state) {
    std::vector<std::pair<int, void*>> loaded;
    for (const ExecutableModule& m : data.modules) {
      int fd = memfd_create("bench-module", MFD_CLOEXEC);
      if (fd < 0 || write(fd, m.code.data(), m.code.size()) !=
                        static_cast<ssize_t>(m.code.size())) {
        state.SkipWithError("memfd_create/write failed");
        return;
      }
      std::string path = "/proc/self/fd/" + std::to_string(fd);
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        state.SkipWithError("dlopen failed");
        close(fd);
        return;
      }
      loaded.emplace_back(fd, handle);
    }
    for (const FunctionInfo& f : data.functions) {
      void* handle = loaded[f.module_ordinal].second;
      benchmark::DoNotOptimize(dlsym(handle, f.name.c_str()));
      benchmark::DoNotOptimize(
          dlsym(handle, (f.name + "__hal_sim_info").c_str()));
    }
    for (auto& [fd, handle] : loaded) {
      dlclose(handle);
      close(fd);
    }
  }
  state.SetBytesProcessed(state.iterations() * int64_t(bytes.size()));
}

void RegisterLoadingBenchmarks() {
  auto cache = GetDevice()->CreateExecutableCache();
  for (ExecutableFormat format : cts::ProducedTestKernelFormats()) {
    auto bytes = cts::ReadTestKernels(format);
    if (!bytes.ok()) {
      std::fprintf(stderr, "bench_dispatch: %s\n",
                   bytes.status().ToString().c_str());
      continue;
    }
    KernelFiles()[format] = std::move(bytes).value();
    const std::string name = ExecutableFormatName(format);
    benchmark::RegisterBenchmark(("BM_Baseline_CopyBytes/" + name).c_str(),
                                 BM_Baseline_CopyBytes, format);
    benchmark::RegisterBenchmark(("BM_ParseExecutable/" + name).c_str(),
                                 BM_ParseExecutable, format);
    if (cache.ok() && (*cache)->CanPrepareFormat(format)) {
      benchmark::RegisterBenchmark(("BM_Executable_Prepare/" + name).c_str(),
                                   BM_Executable_Prepare, format)
          ->Unit(benchmark::kMicrosecond);
    }
    if (format == ExecutableFormat::kSim) {
      benchmark::RegisterBenchmark("BM_Baseline_DlopenModules/sim",
                                   BM_Baseline_DlopenModules)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

#else
void RegisterLoadingBenchmarks() {}
#endif  // HAL_BENCH_HAVE_TEST_KERNELS

}  // namespace
}  // namespace hal::bench

HAL_BENCH_MAIN_WITH(::hal::bench::RegisterLoadingBenchmarks)
