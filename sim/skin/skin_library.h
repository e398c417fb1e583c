// The edge of every simulated vendor library (libhalsim_cuda, _hip, _ze,
// _hsa, _metal), written once: a vendor configures one Library and keeps
// only its entry points, the translation of its handles, flags and codes,
// and what is really its own.
//
//   * The engine: one per library, created with the library and never
//     destroyed (the engine thread may outlive exit).
//   * Configuration: HALSIM_* and the vendor's alias prefix, applied at the
//     vendor's init call (ApplyEnvironment), and the device count's variable.
//   * Handles and objects: named kinds with live counts, a handle table for
//     vendors whose handles must be checked (a destroyed, foreign or null
//     handle is an error instead of a crash), and one leak report at exit.
//   * Rules: a broken vendor rule (Violation) and an API call from a host
//     callback (HostCallbackViolation) are counted and reported with the
//     seed that replays them, in one format for every vendor.
//   * Kernels: the native builds of the test kernels (KernelLibrary).
//   * Codes: one error table per vendor (ErrorRow) with its names and texts.
//   * Entry guards: HALSIM_SKIN_ENTER* (the settle rule, the host-callback
//     rule).
//   * The control ABI (sim/core/halsim_control.h) over the library:
//     sim/skin/skin_control.h.
//
// What CUDA and HIP share beyond this (devices as error scopes, streams,
// events, graphs, modules) is sim/skin/skin_stream.h.
//
// Threading: every method may be called from any thread; the kinds, handle
// table and counters have their own lock or are atomic.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/engine_kernels.h"

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace hal::sim::skin {

using engine::Engine;

// The answers of the shared helpers, in one vendor-neutral vocabulary;
// each vendor maps them to its codes in one table (ErrorRow).
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

// One row of a vendor's error table: the neutral code (kNone when none maps
// to it), the vendor's value, its name and its text. The first row with a
// code is what that code becomes; the last row is what an unmapped code
// becomes.
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
    if (row.code == code && code != Code::kNone) return row.result;
  }
  return rows[N - 1].result;
}
template <typename R, size_t N>
R ToVendor(const ErrorRow<R> (&rows)[N], engine::Error error) {
  return ToVendor(rows, FromEngine(error));
}
template <typename R, size_t N>
const ErrorRow<R>* FindError(const ErrorRow<R> (&rows)[N], R result) {
  for (const ErrorRow<R>& row : rows) {
    if (row.result == result) return &row;
  }
  return nullptr;
}
// The name (or text) of `result` in `*out`; kInvalidValue for a code the
// table does not have, or a null `out`.
template <typename R, size_t N>
Code ErrorText(const ErrorRow<R> (&rows)[N], R result, bool name,
               const char** out) {
  const ErrorRow<R>* row = FindError(rows, result);
  if (!out || !row) return Code::kInvalidValue;
  *out = name ? row->name : row->text;
  return Code::kOk;
}

struct LibraryOptions {
  const char* log_prefix;  // "halsim_cuda": every stderr line starts with it
  const char* api;         // "CUDA", in messages
  const char* env_alias;   // the variables' vendor prefix ("HALSIM_CUDA_")
  // The device count's variable (e.g. HALSIM_ZE_DEVICES), or null.
  const char* devices_env = nullptr;
  // The native kernel modules' default directory (HALSIM_KERNEL_DIR
  // overrides it), or null.
  const char* kernel_dir = nullptr;
  // What a host callback may not do, for stderr; null when the vendor lets
  // host callbacks call its API (HSA's signal handlers).
  const char* callback_rule = nullptr;
  // The object kinds whose live counts the leak report names, by id (see
  // KindId()); more may be added at run time by name.
  std::vector<const char*> kinds = {};
  size_t device_memory_bytes = size_t{16} << 30;
  // Run at exit before the leak report (e.g. to let posted completion
  // handlers release their objects).
  void (*before_leak_report)() = nullptr;
  // The engine's device-loss handler (sim/engine/engine.h), or null: the
  // engine refuses lose_device_at for a library without one.
  void (*device_loss_handler)() = nullptr;
};

class Library {
 public:
  static constexpr int kMaxKinds = 32;

  // The engine is created here; the leak report is registered for exit.
  // A library is never destroyed (create it with new): the engine thread
  // and the exit-time report may outlive any scope.
  explicit Library(LibraryOptions options);
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  Engine& engine() { return *engine_; }
  const LibraryOptions& options() const { return options_; }
  const char* log_prefix() const { return options_.log_prefix; }

  // Applies HALSIM_SEED/FAULTS/TRACE/RACES/SETTLE_US (and their aliases
  // with the vendor's prefix) to the engine: the vendor's init call. The
  // seed is left alone when halsim_reset_schedule came first. False (and a
  // line on stderr) for a malformed fault plan.
  bool ApplyEnvironment();
  // HALSIM_<name>, then the vendor's alias; `*used` names the one that was
  // set. Null when neither is.
  const char* GetEnv(const char* name, std::string* used = nullptr) const;
  // The device count's variable (options().devices_env) as a number in
  // [min, max]: `fallback` when unset; -1 (and a line on stderr) when set
  // to anything else.
  int ConfiguredDeviceCount(int fallback, int min, int max) const;

  // Kinds: the id of kind `name` (options().kinds first, then registered on
  // first use; at most kMaxKinds, after which every new name shares the
  // last id).
  int KindId(const char* name);
  void CountCreated(int kind);
  void CountDestroyed(int kind);
  // Live objects of every kind.
  uint64_t live_objects() const;

  // The handle table: handles whose kind is checked on every use.
  template <typename T, typename... Args>
  T* New(Args&&... args) {
    T* object = new T{std::forward<Args>(args)...};
    Register(static_cast<int>(T::kKind), object);
    return object;
  }
  // The live object behind `handle`, or null.
  template <typename T>
  T* Find(const void* handle) const {
    return Live(static_cast<int>(T::kKind), handle)
               ? static_cast<T*>(const_cast<void*>(handle))
               : nullptr;
  }
  // Destroys the live object behind `handle`; false for any other.
  template <typename T>
  bool Delete(const void* handle) {
    if (!Unregister(static_cast<int>(T::kKind), handle)) return false;
    delete static_cast<T*>(const_cast<void*>(handle));
    return true;
  }
  void Register(int kind, const void* handle);
  bool Unregister(int kind, const void* handle);
  bool Live(int kind, const void* handle) const;

  // A broken vendor rule: counted, and reported on stderr as
  //   "<prefix>: <api> rule violated: [<call>: ]<text>; seed=N (rerun with
  //   HALSIM_SEED=N)".
  // `call` may be null.
  void Violation(const char* call, const char* format, ...)
      __attribute__((format(printf, 3, 4)));
  void ViolationV(const char* call, const char* format, va_list args);
  uint64_t violations() const { return violations_.load(); }
  // An API call from inside a host callback: counted by the engine
  // (halsim_api_violations) and reported with options().callback_rule;
  // returns kNotPermitted.
  Code HostCallbackViolation(const char* call);

  // The native builds of the test kernels.
  engine::KernelLibrary& kernels();

  // The leak report (also run at exit): one line naming every kind with
  // live objects, or nothing.
  void ReportLeaks() const;

 protected:
  ~Library() = default;  // never called: see the constructor

 private:
  const LibraryOptions options_;
  Engine* engine_;
  std::mutex configure_mutex_;
  mutable std::mutex kinds_mutex_;
  std::vector<std::string> kind_names_;
  std::atomic<int64_t> live_[kMaxKinds] = {};
  mutable std::mutex handles_mutex_;
  std::unordered_map<const void*, int> handles_;
  std::atomic<uint64_t> violations_{0};
  std::once_flag kernels_once_;
  engine::KernelLibrary* kernels_ = nullptr;
};

}  // namespace hal::sim::skin

// Entry guards: every entry point starts with one, so that the engine's
// settle rule counts the thread as inside a call.
//   HALSIM_SKIN_ENTER_CALL(library): a plain guard.
#define HALSIM_SKIN_ENTER_CALL(library) \
  ::hal::sim::engine::Engine::HostCall halsim_api_call_((library).engine())
//   HALSIM_SKIN_ENTER(library, name, to_vendor): host callbacks may not call
//   the API; `to_vendor` maps the Code (kNotPermitted) to the vendor's
//   result then.
#define HALSIM_SKIN_ENTER(library, name, to_vendor)          \
  if (::hal::sim::engine::Engine::InHostCallback())          \
    return to_vendor((library).HostCallbackViolation(name)); \
  HALSIM_SKIN_ENTER_CALL(library)
//   HALSIM_SKIN_ENTER_FROM_CALLBACKS(library): host callbacks may call the
//   API (they run on the engine thread and take no guard there).
#define HALSIM_SKIN_ENTER_FROM_CALLBACKS(library)                       \
  std::optional<::hal::sim::engine::Engine::HostCall> halsim_api_call_; \
  if (!::hal::sim::engine::Engine::InHostCallback())                    \
  halsim_api_call_.emplace((library).engine())
