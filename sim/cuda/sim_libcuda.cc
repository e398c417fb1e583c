// The CUDA API simulator: a libcuda stand-in that runs on the CPU.
//
// It exports the driver-API entry points the HAL's CUDA driver uses
// (resolved through cuGetProcAddress, as the driver does with a real
// libcuda), so the driver's own code runs the conformance suite without a
// GPU. It follows the CUDA documentation where the driver depends on it, and
// reports what real CUDA punishes:
//
//   * Streams run their work in order on one worker thread each. An event
//     record captures the stream position; a stream wait or an event
//     synchronize waits for the captured record (a wait on a never-recorded
//     event is a no-op, as in CUDA). Re-recording an event does not affect
//     waits enqueued before.
//   * Host functions run on the stream's worker and block the stream.
//     Calling any CUDA API from inside one returns CUDA_ERROR_NOT_PERMITTED
//     and counts a violation (halsim_cuda_api_violations).
//   * Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT when
//     none is current; a failed stream operation is a sticky context error
//     (every later call and event in the context reports it) until the
//     primary context is released.
//   * Memory is host RAM: device, managed, pinned host, registered host and
//     pool memory. Transfers that run past the end of an allocation fail
//     with CUDA_ERROR_ILLEGAL_ADDRESS. Fresh memory is filled with 0xCD.
//   * Faults (HALSIM_CUDA_FAULTS, seeded by HALSIM_CUDA_SEED): alloc=N fails
//     the Nth allocation with CUDA_ERROR_OUT_OF_MEMORY; op=N fails the Nth
//     stream operation with CUDA_ERROR_LAUNCH_FAILED; late_event_us=U with
//     late_event_ppm=P delays an event's completion by U us with probability
//     P/10^6.
//
// Not simulated: kernels and modules (no cuModule*/cuLaunchKernel), graphs,
// timing events, the legacy default stream. Scheduling is whatever the OS
// gives the stream threads; it is not under the seed (only faults are).
#include "sim/cuda/sim_libcuda.h"

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kSimDriverVersion = 13000;
constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct FaultPlan {
  uint64_t alloc = 0;  // fail the Nth allocation
  uint64_t op = 0;     // fail the Nth stream operation
  uint64_t late_event_us = 0;
  uint64_t late_event_ppm = 0;
};

bool ParseFaults(const char* text, FaultPlan* out) {
  FaultPlan plan;
  std::string s = text ? text : "";
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return false;
    std::string key = item.substr(0, eq);
    char* tail = nullptr;
    uint64_t value = std::strtoull(item.c_str() + eq + 1, &tail, 10);
    if (!tail || *tail) return false;
    if (key == "alloc") {
      plan.alloc = value;
    } else if (key == "op") {
      plan.op = value;
    } else if (key == "late_event_us") {
      plan.late_event_us = value;
    } else if (key == "late_event_ppm") {
      plan.late_event_ppm = value;
    } else {
      return false;
    }
  }
  *out = plan;
  return true;
}

struct Context;

struct Allocation {
  size_t size;
  enum Kind { kDevice, kManaged, kHost, kRegistered, kPool } kind;
};

struct SimEvent {
  Context* context = nullptr;
  uint64_t generation = 0;  // bumped by each record
  uint64_t done = 0;        // the last generation that completed
  CUresult result = CUDA_SUCCESS;
};

struct Stream {
  Context* context = nullptr;
  std::deque<std::function<void()>> ops;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stop = false;
  std::thread worker;
};

struct Context {
  int device = 0;
  int refs = 0;
  CUresult sticky = CUDA_SUCCESS;
};

// One lock for all simulator state: streams are few and the work is memcpy.
struct Sim {
  std::mutex mutex;
  std::condition_variable cv;  // any progress
  bool initialized = false;
  int device_count = 1;
  uint64_t seed = 0;
  uint64_t rng = 0;
  FaultPlan faults;
  uint64_t allocs = 0;
  uint64_t stream_ops = 0;
  std::vector<Context*> primary;  // per device, null when released
  std::map<uintptr_t, Allocation> allocations;
  size_t device_bytes = 0;
  bool host_functions_paused = false;
};

Sim& S() {
  static Sim* sim =
      new Sim();  // never destroyed: stream threads may outlive exit
  return *sim;
}

std::atomic<uint64_t> g_launched{0};
std::atomic<uint64_t> g_run{0};
std::atomic<uint64_t> g_violations{0};
std::atomic<uint64_t> g_work_done{0};
thread_local bool t_in_host_function = false;
thread_local std::vector<Context*> t_context_stack;

// Every entry point starts here: host functions may not call CUDA.
#define HALSIM_ENTER(name)                                              \
  do {                                                                  \
    if (t_in_host_function) {                                           \
      g_violations.fetch_add(1);                                        \
      std::fprintf(stderr,                                              \
                   "halsim_cuda: %s called from a host function; CUDA " \
                   "forbids API calls in cuLaunchHostFunc callbacks\n", \
                   name);                                               \
      return CUDA_ERROR_NOT_PERMITTED;                                  \
    }                                                                   \
  } while (0)

#define HALSIM_NEED_INIT()                                   \
  do {                                                       \
    if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

Context* Current() {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

#define HALSIM_NEED_CONTEXT(ctx)                         \
  HALSIM_NEED_INIT();                                    \
  Context* ctx = Current();                              \
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;           \
  do {                                                   \
    std::lock_guard<std::mutex> _l(S().mutex);           \
    if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky; \
  } while (0)

// Under the lock: the allocation holding [p, p+n), the one p is in, or none.
const Allocation* FindAllocation(uintptr_t p, uintptr_t* base) {
  auto& allocs = S().allocations;
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin()) return nullptr;
  --it;
  if (p >= it->first + it->second.size &&
      !(it->second.size == 0 && p == it->first)) {
    return nullptr;
  }
  *base = it->first;
  return &it->second;
}

// Under the lock. A range that starts in an allocation must end in it;
// other addresses are pageable host memory (allowed with unified
// addressing).
bool RangeOk(uintptr_t p, size_t n) {
  uintptr_t base;
  const Allocation* a = FindAllocation(p, &base);
  return !a || p + n <= base + a->size;
}

// Under the lock: counts an allocation and injects the planned fault.
bool AllocFaultLocked() {
  Sim& s = S();
  ++s.allocs;
  return s.faults.alloc != 0 && s.allocs == s.faults.alloc;
}

void* RawAlloc(size_t size, size_t alignment) {
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded ? rounded : alignment);
  if (p) std::memset(p, 0xCD, rounded ? rounded : alignment);
  return p;
}

CUresult Allocate(size_t size, Allocation::Kind kind, size_t alignment,
                  void** out) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (AllocFaultLocked()) return CUDA_ERROR_OUT_OF_MEMORY;
  bool device = kind != Allocation::kHost;
  if (device && (size > kDeviceMemoryBytes ||
                 s.device_bytes > kDeviceMemoryBytes - size)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = RawAlloc(size, alignment);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  if (device) s.device_bytes += size;
  s.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{size, kind};
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Free(uintptr_t p, bool host) {
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  bool is_host = it->second.kind == Allocation::kHost;
  if (is_host != host || it->second.kind == Allocation::kRegistered) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!is_host) s.device_bytes -= it->second.size;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

void StreamMain(Stream* stream) {
  Sim& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    s.cv.wait(lock, [&] { return stream->stop || !stream->ops.empty(); });
    if (stream->ops.empty()) return;
    std::function<void()> op = std::move(stream->ops.front());
    stream->ops.pop_front();
    lock.unlock();
    op();
    lock.lock();
    ++stream->completed;
    s.cv.notify_all();
  }
}

CUresult Enqueue(CUstream hstream, std::function<void()> op) {
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++stream->enqueued;
  stream->ops.push_back(std::move(op));
  s.cv.notify_all();
  return CUDA_SUCCESS;
}

// A transfer or fill: counts toward the op fault, checks ranges, and is
// skipped once the context has a sticky error.
CUresult EnqueueWork(CUstream hstream, uintptr_t dst, uintptr_t src, size_t n,
                     std::function<void()> work) {
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  Context* ctx = stream->context;
  return Enqueue(hstream, [ctx, dst, src, n, work = std::move(work)] {
    Sim& s = S();
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (ctx->sticky != CUDA_SUCCESS) return;
      ++s.stream_ops;
      if (s.faults.op != 0 && s.stream_ops == s.faults.op) {
        ctx->sticky = CUDA_ERROR_LAUNCH_FAILED;
        return;
      }
      if (!RangeOk(dst, n) || (src && !RangeOk(src, n))) {
        std::fprintf(stderr,
                     "halsim_cuda: illegal address: %zu bytes at 0x%llx "
                     "(source 0x%llx) run past an allocation\n",
                     n, (unsigned long long)dst, (unsigned long long)src);
        ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return;
      }
    }
    work();
    g_work_done.fetch_add(1);
  });
}

const char* ErrorName(CUresult r) {
  switch (r) {
#define N(x) \
  case x:    \
    return #x;
    N(CUDA_SUCCESS)
    N(CUDA_ERROR_INVALID_VALUE)
    N(CUDA_ERROR_OUT_OF_MEMORY)
    N(CUDA_ERROR_NOT_INITIALIZED)
    N(CUDA_ERROR_DEINITIALIZED)
    N(CUDA_ERROR_NO_DEVICE)
    N(CUDA_ERROR_INVALID_DEVICE)
    N(CUDA_ERROR_INVALID_CONTEXT)
    N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND)
    N(CUDA_ERROR_NOT_READY)
    N(CUDA_ERROR_ILLEGAL_ADDRESS)
    N(CUDA_ERROR_LAUNCH_FAILED)
    N(CUDA_ERROR_NOT_PERMITTED)
    N(CUDA_ERROR_NOT_SUPPORTED)
    N(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    N(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
#undef N
    default:
      return nullptr;
  }
}

const char* ErrorString(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_FAILED:
      return "unspecified launch failure";
    case CUDA_ERROR_NOT_PERMITTED:
      return "operation not permitted";
    default:
      return nullptr;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT CUresult cuInit(unsigned int flags) {
  HALSIM_ENTER("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized) return CUDA_SUCCESS;
  if (const char* seed = std::getenv("HALSIM_CUDA_SEED")) {
    s.seed = std::strtoull(seed, nullptr, 10);
  }
  s.rng = s.seed;
  if (const char* faults = std::getenv("HALSIM_CUDA_FAULTS")) {
    if (!ParseFaults(faults, &s.faults)) {
      std::fprintf(stderr, "halsim_cuda: malformed HALSIM_CUDA_FAULTS '%s'\n",
                   faults);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (const char* n = std::getenv("HALSIM_CUDA_DEVICES")) {
    s.device_count = std::atoi(n);
    if (s.device_count < 0 || s.device_count > 8) s.device_count = 1;
  }
  s.primary.assign(s.device_count, nullptr);
  s.initialized = true;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  HALSIM_ENTER("cuDriverGetVersion");
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  // HALSIM_CUDA_DRIVER_VERSION pretends to be another driver (tests of the
  // too-old-driver path).
  const char* v = std::getenv("HALSIM_CUDA_DRIVER_VERSION");
  *version = v ? std::atoi(v) : kSimDriverVersion;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorName(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HALSIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorString(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  HALSIM_ENTER("cuDeviceGetCount");
  HALSIM_NEED_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = S().device_count;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  HALSIM_ENTER("cuDeviceGet");
  HALSIM_NEED_INIT();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= S().device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

#define HALSIM_CHECK_DEVICE(dev) \
  HALSIM_NEED_INIT();            \
  if ((dev) < 0 || (dev) >= S().device_count) return CUDA_ERROR_INVALID_DEVICE

HALSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetName");
  HALSIM_CHECK_DEVICE(dev);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, len, "HAL CUDA API simulator %d", dev);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetUuid");
  HALSIM_CHECK_DEVICE(dev);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  // Stable per ordinal: a fixed prefix, then the ordinal.
  static const unsigned char kPrefix[12] = {0x5e, 0xed, 0xca, 0xfe, 0x00, 0x00,
                                            0x40, 0x00, 0x80, 0x00, 0x00, 0x00};
  std::memcpy(uuid->bytes, kPrefix, sizeof(kPrefix));
  uint32_t ordinal = static_cast<uint32_t>(dev);
  for (int i = 0; i < 4; ++i)
    uuid->bytes[12 + i] = char((ordinal >> (24 - 8 * i)) & 0xff);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  HALSIM_ENTER("cuDeviceTotalMem");
  HALSIM_CHECK_DEVICE(dev);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kDeviceMemoryBytes;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetAttribute(int* value,
                                            CUdevice_attribute attrib,
                                            CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetAttribute");
  HALSIM_CHECK_DEVICE(dev);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 8;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool,
                                                 CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetDefaultMemPool");
  HALSIM_CHECK_DEVICE(dev);
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  static int pools[8];
  *pool = reinterpret_cast<CUmemoryPool>(&pools[dev]);
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Contexts: primary contexts only.

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRetain");
  HALSIM_CHECK_DEVICE(dev);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  Context*& ctx = s.primary[dev];
  if (!ctx) {
    ctx = new Context();
    ctx->device = dev;
  }
  ++ctx->refs;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRelease");
  HALSIM_CHECK_DEVICE(dev);
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  Context*& ctx = s.primary[dev];
  if (!ctx || ctx->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->refs == 0) {
    // Releasing the last reference destroys the context and its sticky
    // error. The Context object stays (handles may still be compared).
    ctx->sticky = CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  HALSIM_ENTER("cuCtxPushCurrent");
  HALSIM_NEED_INIT();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  t_context_stack.push_back(reinterpret_cast<Context*>(ctx));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  HALSIM_ENTER("cuCtxPopCurrent");
  HALSIM_NEED_INIT();
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(t_context_stack.back());
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Streams, events, host functions.

HALSIM_EXPORT CUresult cuStreamCreate(CUstream* phstream, unsigned int flags) {
  HALSIM_ENTER("cuStreamCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phstream || (flags & ~CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream();
  stream->context = ctx;
  stream->worker = std::thread(StreamMain, stream);
  *phstream = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamDestroy(CUstream hstream) {
  HALSIM_ENTER("cuStreamDestroy");
  HALSIM_NEED_INIT();
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA returns at once and releases the stream when its work is done; the
  // simulator drains it here, which the caller cannot tell apart.
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    stream->stop = true;
    S().cv.notify_all();
  }
  stream->worker.join();
  delete stream;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamSynchronize(CUstream hstream) {
  HALSIM_ENTER("cuStreamSynchronize");
  HALSIM_NEED_INIT();
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  Sim& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  uint64_t target = stream->enqueued;
  s.cv.wait(lock, [&] { return stream->completed >= target; });
  return stream->context->sticky;
}

HALSIM_EXPORT CUresult cuEventCreate(CUevent* phevent, unsigned int flags) {
  HALSIM_ENTER("cuEventCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phevent) return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_NOT_SUPPORTED;
  auto* event = new SimEvent();
  event->context = ctx;
  *phevent = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventDestroy(CUevent hevent) {
  HALSIM_ENTER("cuEventDestroy");
  HALSIM_NEED_INIT();
  auto* event = reinterpret_cast<SimEvent*>(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA defers the release until a pending record completed; so do we.
  std::unique_lock<std::mutex> lock(S().mutex);
  S().cv.wait(lock, [&] { return event->done >= event->generation; });
  lock.unlock();
  delete event;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventRecord(CUevent hevent, CUstream hstream) {
  HALSIM_ENTER("cuEventRecord");
  HALSIM_NEED_CONTEXT(ctx);
  auto* event = reinterpret_cast<SimEvent*>(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t generation;
  uint64_t delay_us = 0;
  {
    Sim& s = S();
    std::lock_guard<std::mutex> lock(s.mutex);
    generation = ++event->generation;
    if (s.faults.late_event_ppm &&
        SplitMix64(s.rng) % 1000000 < s.faults.late_event_ppm) {
      delay_us = s.faults.late_event_us;
    }
  }
  return Enqueue(hstream, [event, generation, delay_us, ctx] {
    if (delay_us)
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    std::lock_guard<std::mutex> lock(S().mutex);
    event->result = ctx->sticky;
    if (event->done < generation) event->done = generation;
  });
}

HALSIM_EXPORT CUresult cuEventQuery(CUevent hevent) {
  HALSIM_ENTER("cuEventQuery");
  HALSIM_NEED_INIT();
  auto* event = reinterpret_cast<SimEvent*>(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(S().mutex);
  if (event->done < event->generation) return CUDA_ERROR_NOT_READY;
  return event->result;
}

HALSIM_EXPORT CUresult cuEventSynchronize(CUevent hevent) {
  HALSIM_ENTER("cuEventSynchronize");
  HALSIM_NEED_INIT();
  auto* event = reinterpret_cast<SimEvent*>(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock<std::mutex> lock(S().mutex);
  uint64_t generation = event->generation;
  S().cv.wait(lock, [&] { return event->done >= generation; });
  return event->result;
}

HALSIM_EXPORT CUresult cuStreamWaitEvent(CUstream hstream, CUevent hevent,
                                         unsigned int flags) {
  HALSIM_ENTER("cuStreamWaitEvent");
  HALSIM_NEED_CONTEXT(ctx);
  auto* event = reinterpret_cast<SimEvent*>(hevent);
  if (!event || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    generation = event->generation;  // the record this wait captures
  }
  if (generation == 0) return CUDA_SUCCESS;  // never recorded: no-op
  return Enqueue(hstream, [event, generation] {
    std::unique_lock<std::mutex> lock(S().mutex);
    S().cv.wait(lock, [&] { return event->done >= generation; });
  });
}

HALSIM_EXPORT CUresult cuLaunchHostFunc(CUstream hstream, CUhostFn fn,
                                        void* user_data) {
  HALSIM_ENTER("cuLaunchHostFunc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  g_launched.fetch_add(1);
  return Enqueue(hstream, [fn, user_data] {
    {
      std::unique_lock<std::mutex> lock(S().mutex);
      S().cv.wait(lock, [] { return !S().host_functions_paused; });
    }
    t_in_host_function = true;
    fn(user_data);
    t_in_host_function = false;
    g_run.fetch_add(1);
  });
}

// ---------------------------------------------------------------------------
// Memory.

HALSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  HALSIM_ENTER("cuMemAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kDevice, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemAllocManaged");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kManaged, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  HALSIM_ENTER("cuMemFree");
  HALSIM_NEED_CONTEXT(ctx);
  return Free(static_cast<uintptr_t>(dptr), /*host=*/false);
}

HALSIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize,
                                      unsigned int flags) {
  HALSIM_ENTER("cuMemHostAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  return Allocate(bytesize, Allocation::kHost, 4096, pp);
}

HALSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  HALSIM_ENTER("cuMemFreeHost");
  HALSIM_NEED_CONTEXT(ctx);
  return Free(reinterpret_cast<uintptr_t>(p), /*host=*/true);
}

HALSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemHostRegister");
  HALSIM_NEED_CONTEXT(ctx);
  if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  uintptr_t base;
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (FindAllocation(addr, &base) ||
      FindAllocation(addr + bytesize - 1, &base)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  s.allocations[addr] = Allocation{bytesize, Allocation::kRegistered};
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  HALSIM_ENTER("cuMemHostUnregister");
  HALSIM_NEED_CONTEXT(ctx);
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.allocations.end() || it->second.kind != Allocation::kRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                 unsigned int flags) {
  HALSIM_ENTER("cuMemHostGetDevicePointer");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(S().mutex);
  uintptr_t base;
  const Allocation* a = FindAllocation(reinterpret_cast<uintptr_t>(p), &base);
  if (!a ||
      (a->kind != Allocation::kHost && a->kind != Allocation::kRegistered)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr,
                                               size_t bytesize,
                                               CUmemoryPool pool,
                                               CUstream hstream) {
  HALSIM_ENTER("cuMemAllocFromPoolAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr || !pool || !hstream) return CUDA_ERROR_INVALID_VALUE;
  // The address is handed out at once and usable in stream order.
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kPool, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hstream) {
  HALSIM_ENTER("cuMemFreeAsync");
  HALSIM_NEED_CONTEXT(ctx);
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    auto it = S().allocations.find(static_cast<uintptr_t>(dptr));
    if (it == S().allocations.end() || it->second.kind == Allocation::kHost ||
        it->second.kind == Allocation::kRegistered) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return Enqueue(hstream,
                 [dptr] { Free(static_cast<uintptr_t>(dptr), false); });
}

HALSIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, CUstream hstream) {
  HALSIM_ENTER("cuMemcpyAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if ((!dst || !src) && bytes) return CUDA_ERROR_INVALID_VALUE;
  return EnqueueWork(hstream, dst, src, bytes, [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(dst),
                 reinterpret_cast<const void*>(src), bytes);
  });
}

template <typename T>
CUresult MemsetAsync(CUdeviceptr dst, T value, size_t count, CUstream hstream) {
  if (!dst && count) return CUDA_ERROR_INVALID_VALUE;
  if (dst % sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
  return EnqueueWork(hstream, dst, 0, count * sizeof(T), [dst, value, count] {
    T* p = reinterpret_cast<T*>(dst);
    for (size_t i = 0; i < count; ++i) p[i] = value;
  });
}

HALSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc,
                                       size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD8Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned char>(dst, uc, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD16Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned short>(dst, us, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD32Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned int>(dst, ui, n, hstream);
}

// ---------------------------------------------------------------------------
// Entry points by name.

namespace {
struct ProcEntry {
  const char* name;
  void* fn;
};
// #name keeps the un-suffixed API name; the pointer is the versioned
// definition cuda.h's macros map the name to (cuMemAlloc -> cuMemAlloc_v2).
#define HALSIM_PROC(name) {#name, reinterpret_cast<void*>(&name)},
const ProcEntry kProcs[] = {
    HALSIM_PROC(cuInit) HALSIM_PROC(cuDriverGetVersion) HALSIM_PROC(
        cuGetErrorName) HALSIM_PROC(cuGetErrorString) HALSIM_PROC(cuDeviceGet)
        HALSIM_PROC(cuDeviceGetCount) HALSIM_PROC(cuDeviceGetName) HALSIM_PROC(
            cuDeviceGetUuid) HALSIM_PROC(cuDeviceTotalMem)
            HALSIM_PROC(cuDeviceGetAttribute) HALSIM_PROC(
                cuDeviceGetDefaultMemPool) HALSIM_PROC(cuDevicePrimaryCtxRetain)
                HALSIM_PROC(cuDevicePrimaryCtxRelease) HALSIM_PROC(
                    cuCtxPushCurrent) HALSIM_PROC(cuCtxPopCurrent)
                    HALSIM_PROC(cuStreamCreate) HALSIM_PROC(
                        cuStreamDestroy) HALSIM_PROC(cuStreamWaitEvent)
                        HALSIM_PROC(cuStreamSynchronize) HALSIM_PROC(
                            cuEventCreate) HALSIM_PROC(cuEventDestroy)
                            HALSIM_PROC(cuEventRecord) HALSIM_PROC(
                                cuEventQuery) HALSIM_PROC(cuEventSynchronize)
                                HALSIM_PROC(cuLaunchHostFunc) HALSIM_PROC(
                                    cuMemAlloc) HALSIM_PROC(cuMemAllocManaged)
                                    HALSIM_PROC(cuMemFree) HALSIM_PROC(
                                        cuMemHostAlloc) HALSIM_PROC(cuMemFreeHost)
                                        HALSIM_PROC(cuMemHostRegister) HALSIM_PROC(
                                            cuMemHostUnregister)
                                            HALSIM_PROC(
                                                cuMemHostGetDevicePointer)
                                                HALSIM_PROC(
                                                    cuMemAllocFromPoolAsync)
                                                    HALSIM_PROC(cuMemFreeAsync) HALSIM_PROC(
                                                        cuMemcpyAsync)
                                                        HALSIM_PROC(
                                                            cuMemsetD8Async)
                                                            HALSIM_PROC(
                                                                cuMemsetD16Async)
                                                                HALSIM_PROC(
                                                                    cuMemsetD32Async)};
#undef HALSIM_PROC
}  // namespace

HALSIM_EXPORT CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  HALSIM_ENTER("cuGetProcAddress");
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (cuda_version > kSimDriverVersion) {
    if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (const ProcEntry& e : kProcs) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// The CUDA 11.3-11.8 signature, for callers that ask for it by name.
#undef cuGetProcAddress
HALSIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                        int cuda_version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, nullptr);
}

// ---------------------------------------------------------------------------
// Simulator controls (sim/cuda/sim_libcuda.h).

HALSIM_EXPORT uint64_t halsim_cuda_host_functions_launched(void) {
  return g_launched.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_host_functions_run(void) {
  return g_run.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_api_violations(void) {
  return g_violations.load();
}

HALSIM_EXPORT uint64_t halsim_cuda_stream_work_done(void) {
  return g_work_done.load();
}

HALSIM_EXPORT void halsim_cuda_pause_host_functions(int paused) {
  std::lock_guard<std::mutex> lock(S().mutex);
  S().host_functions_paused = paused != 0;
  S().cv.notify_all();
}

HALSIM_EXPORT int halsim_cuda_set_faults(const char* plan) {
  FaultPlan parsed;
  if (!ParseFaults(plan, &parsed)) return -1;
  std::lock_guard<std::mutex> lock(S().mutex);
  S().faults = parsed;
  S().allocs = 0;
  S().stream_ops = 0;
  S().rng = S().seed;
  return 0;
}
