// What every simulated stream API (CUDA, HIP) does the same way, written
// once: a skin (sim/cuda/, sim/hip/) keeps only its C ABI entry points, the
// translation of its handles, flags and error codes, and what really
// differs (contexts vs a current device, PTX vs HSACO, launch limits).
//
//   * Codes: the helpers answer in one vendor-neutral vocabulary (Code);
//     each skin maps it to its codes, names and texts in one table
//     (ErrorRow).
//   * Library: a simulated vendor library's state at its C ABI edge: its
//     engine (never destroyed: the engine thread may outlive exit), the
//     initialisation (HALSIM_* variables), the devices and their sticky
//     error scopes, the host-callback rule, the native kernels, and the
//     table of live handles.
//   * Handles: every stream, event, module, graph and executable graph
//     handed out is in the library's handle table until it is destroyed, so
//     a destroyed, foreign or null handle is kInvalidHandle instead of a
//     crash, and the live ones are counted (a leak report at exit).
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

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace hal::sim::skin {

using engine::Engine;

// The answers of the shared helpers; each skin maps them to its codes.
enum class Code : int {
  kOk = 0,
  kInvalidValue,
  kOutOfMemory,
  kIllegalAddress,  // sticky
  kLaunchFailed,    // sticky
  kAlreadyRegistered,
  kNotRegistered,
  kNotReady,
  kNotInitialized,
  kInvalidDevice,
  kInvalidContext,
  kInvalidHandle,
  kNotFound,
  kNotSupported,
  kInvalidImage,
  kNotPermitted,  // an API call from a host callback
  kNone,          // an error-table row with no neutral code (names only)
};
Code FromEngine(engine::Error error);

// One row of a skin's error table: the neutral code (kNone when none maps
// to it), the vendor's value, its name and its text. The last row is what
// an unmapped code becomes.
template <typename R>
struct ErrorRow {
  Code code;
  R result;
  const char* name;
  const char* text;
};
#define HALSIM_ERROR_ROW(code, result, text) \
  { ::hal::sim::skin::Code::code, result, #result, text }

template <typename R, size_t N>
R ToVendor(const ErrorRow<R> (&rows)[N], Code code) {
  for (const ErrorRow<R>& row : rows) {
    if (row.code == code) return row.result;
  }
  return rows[N - 1].result;
}
template <typename R, size_t N>
const ErrorRow<R>* FindError(const ErrorRow<R> (&rows)[N], R result) {
  for (const ErrorRow<R>& row : rows) {
    if (row.result == result) return &row;
  }
  return nullptr;
}

// The name (or text) of `result` in `*out`; kInvalidValue for a code the
// table does not have.
template <typename R, size_t N>
Code ErrorText(const ErrorRow<R> (&rows)[N], R result, bool name,
               const char** out) {
  const ErrorRow<R>* row = FindError(rows, result);
  if (!out || !row) return Code::kInvalidValue;
  *out = name ? row->name : row->text;
  return Code::kOk;
}

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

struct LibraryOptions {
  const char* log_prefix;     // "halsim_cuda": stderr lines and the engine's
  const char* api;            // "CUDA", in messages
  const char* env_alias;      // the variables' older prefix ("HALSIM_CUDA_")
  const char* devices_env;    // the device count's variable, or null (1)
  const char* kernel_dir;     // the native kernel modules' default directory
  const char* callback_rule;  // what a host callback may not do, for stderr
};

class Library {
 public:
  static constexpr int kMaxDevices = 8;
  static constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;

  explicit Library(const LibraryOptions& options);
  Engine& engine() { return *engine_; }
  const LibraryOptions& options() const { return options_; }

  // The vendor's init call: kInvalidValue for flags or a malformed
  // HALSIM_FAULTS; later calls do nothing. Applies HALSIM_* to the engine
  // and reads the device count (0 to 8).
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

  // Counts and prints a call from inside a host callback; kNotPermitted.
  Code HostCallbackViolation(const char* call);
  engine::KernelLibrary& kernels();

  // The handle table.
  template <typename T, typename... Args>
  T* New(Args&&... args) {
    T* object = new T{std::forward<Args>(args)...};
    Register(T::kKind, object);
    return object;
  }
  // The live object behind `handle`, or null.
  template <typename T>
  T* Find(const void* handle) const {
    return Live(T::kKind, handle) ? static_cast<T*>(const_cast<void*>(handle))
                                  : nullptr;
  }
  // Destroys the live object behind `handle`; kInvalidHandle for any other.
  template <typename T>
  Code Delete(const void* handle) {
    if (!Unregister(T::kKind, handle)) return Code::kInvalidHandle;
    delete static_cast<T*>(const_cast<void*>(handle));
    return Code::kOk;
  }
  uint64_t live_handles() const;

 private:
  Scope* Retain(int ordinal);
  void Register(Kind kind, const void* handle);
  bool Unregister(Kind kind, const void* handle);
  bool Live(Kind kind, const void* handle) const;
  void ReportLeaks() const;

  const LibraryOptions options_;
  Engine* engine_;
  std::mutex init_mutex_;
  std::atomic<bool> initialized_{false};
  int device_count_ = 1;
  Scope devices_[kMaxDevices];
  int pools_[kMaxDevices] = {};
  std::once_flag kernels_once_;
  engine::KernelLibrary* kernels_ = nullptr;
  mutable std::mutex handles_mutex_;
  std::unordered_map<const void*, Kind> handles_;
  uint64_t live_[static_cast<int>(Kind::kCount)] = {};
};

// Every entry point starts with this: host callbacks may not call the API,
// and the engine's settle rule counts the thread as inside a call.
// `to_vendor` maps a Code to the skin's result type.
#define HALSIM_SKIN_ENTER(library, name, to_vendor)          \
  if (::hal::sim::engine::Engine::InHostCallback())          \
    return to_vendor((library).HostCallbackViolation(name)); \
  ::hal::sim::engine::Engine::HostCall halsim_api_call_((library).engine())
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
Stream* NewStream(Library& lib, Scope* scope);
// Drains the stream's work (as HIP does; CUDA returns at once and releases
// it later, which the caller cannot tell apart), then destroys it.
Code DestroyStream(Library& lib, const void* stream);
// The scope's sticky error once the stream's work is done.
Code SynchronizeStream(Library& lib, Stream* stream);
// Records on `stream`; the event reports `status_from`'s error.
Code RecordEvent(Event* event, Stream* stream, const engine::Domain* status);
Code QueryEvent(Event* event);  // kNotReady while the record is pending
Code SynchronizeEvent(Event* event);
// A wait on a never-recorded event is a no-op (reported); `call` names it.
Code StreamWaitEvent(Library& lib, Stream* stream, Event* event,
                     const char* call);
Code LaunchHostFunction(Library& lib, Stream* stream, std::function<void()> fn);

// --- Memory (skin_queue.cc). ---
// `size` 0 is kInvalidValue, or a null pointer and kOk with `zero_is_null`.
Code Allocate(Library& lib, void** out, size_t size, engine::MemoryKind kind,
              size_t alignment, bool zero_is_null = false);
// The same, into a vendor's pointer or address type (CUdeviceptr).
template <typename P>
Code Allocate(Library& lib, P* out, size_t size, engine::MemoryKind kind,
              size_t alignment, bool zero_is_null = false) {
  void* p = nullptr;
  Code code =
      Allocate(lib, out ? &p : nullptr, size, kind, alignment, zero_is_null);
  if (out) *out = reinterpret_cast<P>(p);
  return code;
}
// kInvalidValue unless `p` lies in pinned or registered host memory.
Code CheckHostPointer(Library& lib, const void* p);
// The device address of host memory `host` (unified: the same); flags must
// be 0.
template <typename P>
Code HostDevicePointer(Library& lib, void* host, unsigned flags, P* out) {
  if (!out || flags != 0) return Code::kInvalidValue;
  Code code = CheckHostPointer(lib, host);
  if (code == Code::kOk) *out = reinterpret_cast<P>(host);
  return code;
}
// A stream-ordered free of device, managed or pool memory at `p`.
Code FreeAsync(Library& lib, uintptr_t p, Stream* stream);
Code CopyAsync(Library& lib, Stream* stream, uintptr_t dst, uintptr_t src,
               size_t bytes);
// `count` elements of `size` bytes (1, 2 or 4); `dst` aligned to `size`.
Code FillAsync(Library& lib, Stream* stream, uintptr_t dst, uint32_t value,
               int size, size_t count);

// --- Graphs (skin_graph.cc). Node handles (CUgraphNode, hipGraphNode_t)
// are engine graph nodes. ---
// Adds a node after `deps` (nodes of the same graph, no duplicates).
Code AddNode(Graph* graph, const void* const* deps, size_t num_deps,
             engine::Work run, bool host, const void** out);
// A 1D fill's work: `height` must be 1 (2D is not simulated).
Code FillNodeWork(Library& lib, Graph* graph, uintptr_t dst, uint32_t value,
                  unsigned size, size_t width, size_t height,
                  engine::Work* out);

template <typename H>
Code AddNode(Graph* graph, const H* deps, size_t num_deps, engine::Work run,
             H* out, bool host = false) {
  if (!out) return Code::kInvalidValue;
  const void* node = nullptr;
  Code code = AddNode(graph, reinterpret_cast<const void* const*>(deps),
                      num_deps, std::move(run), host, &node);
  if (code == Code::kOk) *out = reinterpret_cast<H>(const_cast<void*>(node));
  return code;
}
template <typename H>
Code AddFillNode(Library& lib, Graph* graph, const H* deps, size_t num_deps,
                 uintptr_t dst, uint32_t value, unsigned size, size_t width,
                 size_t height, H* out) {
  engine::Work work;
  Code code = FillNodeWork(lib, graph, dst, value, size, width, height, &work);
  if (code != Code::kOk) return code;
  return AddNode(graph, deps, num_deps, std::move(work), out);
}
// A host node: a host callback (no API calls from inside).
template <typename H>
Code AddHostNode(Graph* graph, const H* deps, size_t num_deps,
                 std::function<void()> fn, H* out) {
  return AddNode(graph, deps, num_deps, Engine::AsHostCallback(std::move(fn)),
                 out, /*host=*/true);
}
// One topological order (the engine's unseeded one); flags must be 0.
Code Instantiate(Library& lib, Graph* graph, unsigned long long flags,
                 GraphExec** out);
Code LaunchGraph(Library& lib, const void* exec, Stream* stream);
// kInvalidValue for a handle that is not a live graph (executable graph).
Code DestroyGraph(Library& lib, const void* graph);
Code DestroyGraphExec(Library& lib, const void* exec);

// --- Modules and kernels (skin_module.cc). ---
// Adds kernel `name` to `module`, with its native build when there is one.
Function* AddFunction(Library& lib, Module* module, const std::string& name);
// The kernel `name` of a live module: kNotFound (and a line naming
// `format`) when it is missing or has no native build.
Code GetFunction(Library& lib, const void* module, const char* name,
                 const char* format, Function** out);
// A vendor's launch limits.
struct LaunchLimits {
  uint32_t max_grid[3];        // blocks per dimension
  uint64_t max_grid_items;     // grid[i] * block[i] per dimension; 0: none
  uint32_t max_block_threads;  // block[0] * block[1] * block[2]
  uint32_t max_shared_bytes;   // dynamic shared memory (LDS)
};
// Checks a launch of `f` against `limits` and the native build's block size
// (kInvalidValue, with a line for a wrong block size), and returns its work
// in `out`: parameters read now, each pointer bounded by its allocation; a
// fault fails `scope`.
Code LaunchWork(Library& lib, const LaunchLimits& limits, Scope* scope,
                const Function* f, const uint32_t grid[3],
                const uint32_t block[3], unsigned shared_bytes, void** params,
                engine::Work* out);
Code EnqueueKernel(Library& lib, Stream* stream, engine::Work work);

}  // namespace hal::sim::skin
