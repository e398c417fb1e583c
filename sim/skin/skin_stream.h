// What the simulated stream APIs (CUDA, HIP) share beyond the library edge
// (sim/skin/skin_library.h), written once: a skin (sim/cuda/, sim/hip/)
// keeps only its C ABI entry points, the translation of its handles, flags
// and error codes, and what really differs (contexts vs a current device,
// PTX vs HSACO, launch limits).
//
//   * StreamLibrary: the Library with devices as sticky error scopes, the
//     device queries as CUDA and HIP answer them, and default memory pools.
//   * Handles: every stream, event, module, graph and executable graph
//     handed out is in the library's handle table until it is destroyed, so
//     a destroyed, foreign or null handle is kInvalidHandle instead of a
//     crash, and the live ones are counted (the leak report at exit).
//   * Streams are engine queues; events views of engine signals
//     (sim/engine/engine_event.h); memory, transfers and fills the engine's
//     (sim/engine/engine.h); graphs engine graphs (engine_graph.h); kernels
//     the native build of the same test kernel (engine_kernels.h).
//
// Threading: as the engine's. The handle table has its own lock.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/engine_event.h"
#include "sim/engine/engine_graph.h"
#include "sim/engine/engine_kernels.h"
#include "sim/skin/skin_library.h"

namespace hal::sim::skin {

using engine::Engine;

// A device attribute's answer, in a skin's table.
template <typename A>
struct AttributeRow {
  A attribute;
  int value;
};
template <typename A, size_t N>
Code Attribute(const AttributeRow<A> (&rows)[N], A attribute, int* value) {
  if (!value) return Code::kInvalidValue;
  for (const AttributeRow<A>& row : rows) {
    if (row.attribute == attribute) {
      *value = row.value;
      return Code::kOk;
    }
  }
  return Code::kInvalidValue;
}

inline uintptr_t Address(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Stores `object` as the vendor's opaque handle type.
template <typename H, typename T>
Code Hand(T* object, H* out) {
  *out = reinterpret_cast<H>(object);
  return Code::kOk;
}

// A sticky error scope with its device: a CUDA primary context, a HIP
// device. The first failed op in it fails it (engine::Domain).
struct Scope {
  int ordinal = 0;
  int refs = 0;  // primary-context references (under the init lock)
  engine::Domain domain;
};

enum class Kind : int { kStream, kEvent, kModule, kGraph, kGraphExec, kCount };

struct Stream {
  static constexpr Kind kKind = Kind::kStream;
  Scope* scope = nullptr;
  engine::Queue* queue = nullptr;
};

// Enqueued records and waits hold the signal, so the event may be destroyed
// while they are pending, as CUDA and HIP allow.
struct Event {
  static constexpr Kind kKind = Kind::kEvent;
  Event(Engine& engine, Scope* s) : scope(s), event(engine) {}
  Scope* scope;
  engine::Event event;
};

// A kernel of a module: its signature as the vendor format gives it, and
// the native build that runs it.
struct Function {
  std::string name;
  std::vector<int> param_bytes;  // PTX: per parameter, 8 or 4
  uint32_t kernarg_size = 0;     // HSACO: the descriptor's argument bytes
  bool native = false;           // false: no native build
  engine::Kernel kernel;
};

struct Module {
  static constexpr Kind kKind = Kind::kModule;
  explicit Module(Scope* s) : scope(s) {}
  Scope* scope;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct Graph {
  static constexpr Kind kKind = Kind::kGraph;
  explicit Graph(Scope* s) : scope(s) {}
  Scope* scope;
  engine::Graph graph;
};

// In-flight launches keep the node list (the engine's GraphExec state).
struct GraphExec {
  static constexpr Kind kKind = Kind::kGraphExec;
  GraphExec(Engine& engine, const engine::Graph& graph)
      : exec(engine, graph, /*random=*/nullptr) {}
  engine::GraphExec exec;
};

class StreamLibrary : public Library {
 public:
  static constexpr int kMaxDevices = 8;
  static constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;

  // `options.kinds` is set to the handle table's kinds (Kind);
  // `options.devices_env` names the device count's variable, or null (1).
  explicit StreamLibrary(LibraryOptions options);

  // The vendor's init call: kInvalidValue for flags or a malformed
  // HALSIM_FAULTS; later calls do nothing. Applies HALSIM_* to the engine
  // and reads the device count (0 to 8; out of range: 1).
  Code Init(unsigned flags);
  bool initialized() const { return initialized_.load(); }
  int device_count() const { return device_count_; }
  Scope* device(int ordinal);  // null when out of range

  // Device queries, as CUDA and HIP answer them: kNotInitialized before the
  // init call, kInvalidDevice for an ordinal out of range, kInvalidValue for
  // a null output.
  Code DeviceCount(int* count);
  Code GetDevice(int ordinal, int* out);
  Code CheckDevice(int ordinal);
  // The name `format` gives with the ordinal (printf: %d).
  Code DeviceName(int ordinal, char* name, int len, const char* format);
  // engine::StableDeviceUuid with the vendor's tag.
  Code DeviceUuid(int ordinal, const char tag[4], char out[16]);
  Code DeviceTotalMem(int ordinal, size_t* bytes);
  template <typename A, size_t N>
  Code DeviceAttribute(const AttributeRow<A> (&rows)[N], int ordinal,
                       A attribute, int* value) {
    Code code = CheckDevice(ordinal);
    return code == Code::kOk ? Attribute(rows, attribute, value) : code;
  }
  // The device's scope as a retained primary context (CUDA's; HIP has them
  // too): releasing the last reference clears its sticky error, and the
  // handle stays the same; kInvalidContext for a release without a retain.
  template <typename H>
  Code RetainScope(int ordinal, H* out) {
    Code code = CheckDevice(ordinal);
    if (code != Code::kOk) return code;
    return out ? Hand(Retain(ordinal), out) : Code::kInvalidValue;
  }
  Code ReleaseScope(int ordinal);
  // The device's default memory pool (a token: pool memory is the engine's).
  template <typename H>
  Code DefaultPool(int ordinal, H* out) {
    Code code = CheckDevice(ordinal);
    if (code != Code::kOk) return code;
    return out ? Hand(&pools_[ordinal], out) : Code::kInvalidValue;
  }

  // Destroys the live object behind `handle`; kInvalidHandle for any other.
  template <typename T>
  Code Destroy(const void* handle) {
    return Delete<T>(handle) ? Code::kOk : Code::kInvalidHandle;
  }

 protected:
  ~StreamLibrary() = default;  // never called: a library is never destroyed

 private:
  Scope* Retain(int ordinal);

  std::mutex init_mutex_;
  std::atomic<bool> initialized_{false};
  int device_count_ = 1;
  Scope devices_[kMaxDevices];
  int pools_[kMaxDevices] = {};
};

// ... and the library is initialised.
#define HALSIM_SKIN_ENTER_INIT(library, name, to_vendor) \
  HALSIM_SKIN_ENTER(library, name, to_vendor);           \
  if (!(library).initialized())                          \
  return to_vendor(::hal::sim::skin::Code::kNotInitialized)
// ... and `current` (the calling thread's scope) is one without a sticky
// error, as `scope`; kInvalidContext when there is none.
#define HALSIM_SKIN_ENTER_SCOPE(library, name, to_vendor, scope, current) \
  HALSIM_SKIN_ENTER_INIT(library, name, to_vendor);                       \
  ::hal::sim::skin::Scope* scope = current;                               \
  if (!scope) return to_vendor(::hal::sim::skin::Code::kInvalidContext);  \
  if (scope->domain.failed())                                             \
  return to_vendor(::hal::sim::skin::FromEngine(scope->domain.error()))

// --- Streams, events and host functions (skin_queue.cc). ---
Stream* NewStream(StreamLibrary& lib, Scope* scope);
// Drains the stream's work (as HIP does; CUDA returns at once and releases
// it later, which the caller cannot tell apart), then destroys it.
Code DestroyStream(StreamLibrary& lib, const void* stream);
// The scope's sticky error once the stream's work is done.
Code SynchronizeStream(StreamLibrary& lib, Stream* stream);
// Records on `stream`; the event reports `status_from`'s error. Recording an
// event whose previous record is still pending is reported as a rule
// violation (vendor-object reuse: CUDA and HIP allow it, no driver of ours
// means it), then done; `call` names the entry point.
Code RecordEvent(StreamLibrary& lib, Event* event, Stream* stream,
                 const engine::Domain* status, const char* call);
// Destroys the event; destroying one whose record is still pending is
// reported the same way (then done, as CUDA and HIP allow).
Code DestroyEvent(StreamLibrary& lib, const void* event, const char* call);
Code QueryEvent(Event* event);  // kNotReady while the record is pending
Code SynchronizeEvent(Event* event);
// A wait on a never-recorded event is a no-op (reported); `call` names it.
Code StreamWaitEvent(StreamLibrary& lib, Stream* stream, Event* event,
                     const char* call);
Code LaunchHostFunction(StreamLibrary& lib, Stream* stream,
                        std::function<void()> fn);

// --- Memory (skin_queue.cc). ---
// `size` 0 is kInvalidValue, or a null pointer and kOk with `zero_is_null`.
Code Allocate(StreamLibrary& lib, void** out, size_t size,
              engine::MemoryKind kind, size_t alignment,
              bool zero_is_null = false);
// The same, into a vendor's pointer or address type (CUdeviceptr).
template <typename P>
Code Allocate(StreamLibrary& lib, P* out, size_t size, engine::MemoryKind kind,
              size_t alignment, bool zero_is_null = false) {
  void* p = nullptr;
  Code code =
      Allocate(lib, out ? &p : nullptr, size, kind, alignment, zero_is_null);
  if (out) *out = reinterpret_cast<P>(p);
  return code;
}
// kInvalidValue unless `p` lies in pinned or registered host memory.
Code CheckHostPointer(StreamLibrary& lib, const void* p);
// The device address of host memory `host` (unified: the same); flags must
// be 0.
template <typename P>
Code HostDevicePointer(StreamLibrary& lib, void* host, unsigned flags, P* out) {
  if (!out || flags != 0) return Code::kInvalidValue;
  Code code = CheckHostPointer(lib, host);
  if (code == Code::kOk) *out = reinterpret_cast<P>(host);
  return code;
}
// A stream-ordered free of device, managed or pool memory at `p`.
Code FreeAsync(StreamLibrary& lib, uintptr_t p, Stream* stream);
Code CopyAsync(StreamLibrary& lib, Stream* stream, uintptr_t dst, uintptr_t src,
               size_t bytes);
// `count` elements of `size` bytes (1, 2 or 4); `dst` aligned to `size`.
Code FillAsync(StreamLibrary& lib, Stream* stream, uintptr_t dst,
               uint32_t value, int size, size_t count);

// --- Graphs (skin_graph.cc). Node handles (CUgraphNode, hipGraphNode_t)
// are engine graph nodes. ---
// Adds a node after `deps` (nodes of the same graph, no duplicates).
// `write` and `read` are the ranges it touches, for the race check between
// nodes that no path of edges orders (engine::Graph::UnorderedConflicts).
Code AddNode(Graph* graph, const void* const* deps, size_t num_deps,
             engine::Work run, bool host, const void** out,
             const char* name = "node", Range write = {}, Range read = {},
             std::vector<Range> more_writes = {});
// A 1D fill's work: `height` must be 1 (2D is not simulated).
Code FillNodeWork(StreamLibrary& lib, Graph* graph, uintptr_t dst,
                  uint32_t value, unsigned size, size_t width, size_t height,
                  engine::Work* out);

template <typename H>
Code AddNode(Graph* graph, const H* deps, size_t num_deps, engine::Work run,
             H* out, bool host = false, const char* name = "node",
             Range write = {}, Range read = {},
             std::vector<Range> more_writes = {}) {
  if (!out) return Code::kInvalidValue;
  const void* node = nullptr;
  Code code = AddNode(graph, reinterpret_cast<const void* const*>(deps),
                      num_deps, std::move(run), host, &node, name, write, read,
                      std::move(more_writes));
  if (code == Code::kOk) *out = reinterpret_cast<H>(const_cast<void*>(node));
  return code;
}
// A 1D copy node of `bytes` from `src` to `dst`.
template <typename H>
Code AddCopyNode(StreamLibrary& lib, Graph* graph, const H* deps,
                 size_t num_deps, uintptr_t dst, uintptr_t src, size_t bytes,
                 H* out) {
  if (!graph) return Code::kInvalidValue;
  return AddNode(graph, deps, num_deps,
                 lib.engine().CopyWork(&graph->scope->domain, dst, src, bytes),
                 out, /*host=*/false, "memcpy", Range::Of(dst, bytes),
                 Range::Of(src, bytes));
}
template <typename H>
Code AddFillNode(StreamLibrary& lib, Graph* graph, const H* deps,
                 size_t num_deps, uintptr_t dst, uint32_t value, unsigned size,
                 size_t width, size_t height, H* out) {
  engine::Work work;
  Code code = FillNodeWork(lib, graph, dst, value, size, width, height, &work);
  if (code != Code::kOk) return code;
  return AddNode(graph, deps, num_deps, std::move(work), out, /*host=*/false,
                 "memset", Range::Of(dst, size_t{size} * width));
}
// A host node: a host callback (no API calls from inside).
template <typename H>
Code AddHostNode(Graph* graph, const H* deps, size_t num_deps,
                 std::function<void()> fn, H* out) {
  return AddNode(graph, deps, num_deps, Engine::AsHostCallback(std::move(fn)),
                 out, /*host=*/true);
}
// One topological order (the engine's unseeded one); flags must be 0.
Code Instantiate(StreamLibrary& lib, Graph* graph, unsigned long long flags,
                 GraphExec** out);
Code LaunchGraph(StreamLibrary& lib, const void* exec, Stream* stream);
// kInvalidValue for a handle that is not a live graph (executable graph).
Code DestroyGraph(StreamLibrary& lib, const void* graph);
Code DestroyGraphExec(StreamLibrary& lib, const void* exec);

// --- Modules and kernels (skin_module.cc). ---
// Adds kernel `name` to `module`, with its native build when there is one.
Function* AddFunction(StreamLibrary& lib, Module* module,
                      const std::string& name);
// The kernel `name` of a live module: kNotFound (and a line naming
// `format`) when it is missing or has no native build.
Code GetFunction(StreamLibrary& lib, const void* module, const char* name,
                 const char* format, Function** out);
// A vendor's launch limits.
struct LaunchLimits {
  uint32_t max_grid[3];        // blocks per dimension
  uint64_t max_grid_items;     // grid[i] * block[i] per dimension; 0: none
  uint32_t max_block_threads;  // block[0] * block[1] * block[2]
  uint32_t max_shared_bytes;   // dynamic shared memory (LDS)
};
// A kernel launch: its work, and the ranges it declares to the race checker
// (engine::Engine::KernelBindingRanges: the first bytes of each binding).
struct KernelLaunch {
  engine::Work work;
  std::vector<Range> writes;
};
// Checks a launch of `f` against `limits` and the native build's block size
// (kInvalidValue, with a line for a wrong block size), and returns its work
// in `out`: parameters read now, each pointer bounded by its allocation; a
// fault fails `scope`.
Code LaunchWork(StreamLibrary& lib, const LaunchLimits& limits, Scope* scope,
                const Function* f, const uint32_t grid[3],
                const uint32_t block[3], unsigned shared_bytes, void** params,
                KernelLaunch* out);
Code EnqueueKernel(StreamLibrary& lib, Stream* stream, KernelLaunch launch);
// A graph kernel node (CUDA and HIP), its bindings declared as a stream
// launch's.
template <typename H>
Code AddKernelNode(Graph* graph, const H* deps, size_t num_deps,
                   KernelLaunch launch, H* out) {
  return AddNode(graph, deps, num_deps, std::move(launch.work), out,
                 /*host=*/false, "kernel", Range{}, Range{},
                 std::move(launch.writes));
}

}  // namespace hal::sim::skin
