// Per-device simulator state shared by the scheduler, the device and the
// allocator: the seed and its random streams, the virtual clock, the trace,
// the hazard checker and the fault plan.
//
// Everything here is deterministic given the seed and the order of calls;
// the threaded scheduler calls in from worker threads (under `mutex`), which
// keeps it safe but not deterministic.
#pragma once

#include <atomic>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hal/buffer.h"
#include "hal/status.h"
#include "hal/types.h"
#include "hal/uri.h"
#include "sim/core/fault_plan.h"
#include "sim/core/range.h"
#include "sim/core/sim_random.h"
#include "sim/core/trace_hash.h"

namespace hal::sim {

// One buffer range an operation touches.
struct SimAccess {
  Buffer* buffer = nullptr;  // allocated buffer (kept alive by the op)
  uint64_t buffer_id = 0;
  DeviceSize offset = 0;
  DeviceSize length = 0;
  bool write = false;
  bool free = false;  // the op releases the buffer (dealloca)
};

// Faults on request, in the one fault grammar of every simulator
// (sim/core/fault_plan.h): from the URI (fail_alloc=N, alloc_fail_ppm=P,
// fail_op=N, op_fail_ppm=P, slow_ppm=P, lose_device_at=T) or SetFaults().
// The late_signal_* faults are the vendor simulators' (no URI parameter).
struct SimFaultPlan : FaultPlan {
  static StatusOr<SimFaultPlan> FromUri(const DeviceUri& uri);
};

class SimContext;

// The trace hash: a 64-bit hash over the tokens of every line, in order. A
// text token counts by its bytes (8 at a time, little-endian), a number by
// its value, so the hash of a line is the same whether or not its text is
// formatted, and the text is formatted only when someone asked for the
// trace (trace=path). Every step is a multiply and a shift: no step is
// skipped when the tokens are equal, so equal traces and only (up to hash
// collisions) equal traces hash equal.
// Inlined so that literal tokens fold into constants: hashing one costs a
// multiply per 8 bytes.
#define HAL_SIM_TRACE_INLINE inline __attribute__((always_inline))
HAL_SIM_TRACE_INLINE uint64_t TraceMix(uint64_t h, uint64_t x) {
  h = (h ^ x) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}
// Up to 7 bytes, little-endian, in the low bytes of a word.
HAL_SIM_TRACE_INLINE uint64_t TraceTailWord(const char* p, size_t n) {
  uint64_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  }
  return w;
}
HAL_SIM_TRACE_INLINE uint64_t TraceMixBytes(uint64_t h, const char* p,
                                            size_t n) {
  // Short text (most tokens): its bytes and its length in one word.
  if (n < 8) return TraceMix(h, TraceTailWord(p, n) | (uint64_t{n} << 56));
  h = TraceMix(h, 0x7478740000000000ull ^ n);  // "txt" tag and the length
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    if constexpr (std::endian::native == std::endian::big) {
      w = __builtin_bswap64(w);
    }
    h = TraceMix(h, w);
  }
  return n == 0 ? h : TraceMix(h, TraceTailWord(p, n));
}

// A text token whose hash words are computed once, at compile time (op
// names): mixing it is mixing its text (TraceMixBytes) without the length
// scan and the byte loop. Make these constexpr.
class TraceToken {
 public:
  constexpr explicit TraceToken(const char* text)
      : text_(text), size_(std::char_traits<char>::length(text)) {
    size_t n = size_;
    if (n < 8) {
      words_[count_++] = Word(text, n) | (uint64_t{n} << 56);
      return;
    }
    words_[count_++] = 0x7478740000000000ull ^ n;  // as TraceMixBytes
    size_t i = 0;
    for (; n - i >= 8; i += 8) words_[count_++] = Word(text + i, 8);
    if (i != n) words_[count_++] = Word(text + i, n - i);
  }
  const char* c_str() const { return text_; }
  std::string_view view() const { return std::string_view(text_, size_); }
  const uint64_t* words() const { return words_; }
  size_t word_count() const { return count_; }

 private:
  // Up to 8 bytes, little-endian (as TraceTailWord and TraceMixBytes).
  static constexpr uint64_t Word(const char* p, size_t n) {
    uint64_t w = 0;
    for (size_t i = 0; i < n; ++i) {
      w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    }
    return w;
  }
  const char* text_;
  size_t size_;
  // A text past 40 bytes does not fit: a compile error for a constexpr one.
  uint64_t words_[6] = {};
  size_t count_ = 0;
};

// Builds one trace line: mixes its tokens into the trace hash and, when
// the trace text is kept, appends them to the context's reusable buffer (no
// allocation once warm). The line counts when destroyed. Use with the
// context lock held.
class TraceLine {
 public:
  explicit TraceLine(SimContext& context);
  ~TraceLine();
  HAL_SIM_TRACE_INLINE TraceLine& operator<<(std::string_view text) {
    hash_ = TraceMixBytes(hash_, text.data(), text.size());
    if (text_) AppendText(text);
    return *this;
  }
  // A literal: its length and bytes fold into constants. (Other C strings
  // convert to string_view.) The length is the C string's, not N: a char
  // buffer may hold a shorter string.
  template <size_t N>
  HAL_SIM_TRACE_INLINE TraceLine& operator<<(const char (&text)[N]) {
    return *this << std::string_view(text);
  }
  HAL_SIM_TRACE_INLINE TraceLine& operator<<(const TraceToken& token) {
    for (size_t i = 0; i < token.word_count(); ++i) {
      hash_ = TraceMix(hash_, token.words()[i]);
    }
    if (text_) AppendText(token.view());
    return *this;
  }
  HAL_SIM_TRACE_INLINE TraceLine& operator<<(uint64_t value) {
    hash_ = TraceMix(hash_ ^ 0x6E756D, value);  // "num" tag
    if (text_) AppendNumber(value);
    return *this;
  }

 private:
  __attribute__((noinline)) void AppendText(std::string_view text) {
    text_->append(text);
  }
  __attribute__((noinline)) void AppendNumber(uint64_t value) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), value);
    text_->append(buf, r.ptr);
  }

  SimContext& context_;
  std::string* text_;  // null when no text is kept
  uint64_t hash_;
};

class SimContext {
 public:
  SimContext(uint64_t seed, bool checking, SimFaultPlan faults,
             std::string trace_path);
  ~SimContext();

  uint64_t seed() const { return seed_; }
  bool checking() const { return checking_; }

  std::mutex& mutex() { return mutex_; }

  // --- All below: call with mutex() held. ---
  SimRandom& schedule_random() { return schedule_random_; }
  uint64_t now_ns() const { return now_ns_; }
  void AdvanceTo(uint64_t t) {
    if (t > now_ns_) now_ns_ = t;
  }
  // A seeded duration for an op's execution, in virtual ns.
  uint64_t DrawDuration();
  uint64_t NextBufferId() { return ++buffer_ids_; }

  // Trace: every host call and device event, in order, as TraceLines. The
  // hash covers every line (see TraceMix); the text is kept only when the
  // trace is written to a file.
  uint64_t trace_hash() const { return trace_hash_; }
  size_t trace_size() const { return trace_line_count_; }
  bool keeps_trace_text() const { return !trace_path_.empty(); }
  const std::vector<std::string>& trace_lines() const { return trace_lines_; }

  // Checker: operations in flight and the ranges they touch. Returns the
  // hazard with an in-flight op, if any, as FAILED_PRECONDITION. A hazard
  // with a mapping the host holds is recorded for the op instead (see
  // TakeMappingHazard).
  Status BeginAccess(uint64_t op_id, const std::string& op_name,
                     const std::vector<SimAccess>& accesses);
  void EndAccess(uint64_t op_id);
  // The host maps a range (write: the host may write it) and holds it until
  // EndHostAccess with the same arguments. Mapping a range that an in-flight
  // op writes (or writing one it reads) is a hazard of that op; so is an op
  // that becomes in flight while the host holds a write mapping of a range it
  // writes, or any mapping of a buffer it frees. Mapping itself never fails:
  // the op does, when it runs (TakeMappingHazard), as every hazard does.
  void BeginHostAccess(uint64_t buffer_id, DeviceSize offset, DeviceSize length,
                       bool write);
  void EndHostAccess(uint64_t buffer_id, DeviceSize offset, DeviceSize length,
                     bool write);
  // The first mapping hazard recorded for the op, taken (OK when none).
  Status TakeMappingHazard(uint64_t op_id);
  // Without the lock: whether any mapping hazard waits to be taken.
  bool has_mapping_hazards() const {
    return mapping_hazard_count_.load(std::memory_order_acquire) != 0;
  }
  // Reports from the checker, in order (also returned as op statuses).
  std::vector<std::string> reports() const { return reports_; }
  void Report(const std::string& report);

  // Faults.
  const SimFaultPlan& faults() const { return faults_; }
  void set_faults(const SimFaultPlan& plan) { faults_ = plan; }
  // Counts an allocation; RESOURCE_EXHAUSTED when the plan fails it.
  Status OnAllocate(DeviceSize size);
  // Counts an op about to run; its injected failure, if any.
  Status OnRunOp(const char* op_name, uint64_t op_id);
  bool DrawSlow() { return fault_random_.Chance(faults_.slow_ppm); }
  // Device loss: OK while alive.
  const Status& lost() const { return lost_; }
  void LoseDevice(const Status& status) {
    if (lost_.ok()) lost_ = status;
  }

 private:
  // The checker's table, indexed by buffer so that an op is compared only
  // with in-flight ops on the same buffers (insertion order kept, so reports
  // are deterministic).
  struct Holder {
    uint64_t op_id;
    SimAccess access;
  };
  struct InFlightOp {
    std::string name;
    std::vector<uint64_t> buffer_ids;
  };

  const uint64_t seed_;
  const bool checking_;
  std::mutex mutex_;
  SimRandom schedule_random_;
  SimRandom fault_random_;
  uint64_t now_ns_ = 0;
  uint64_t buffer_ids_ = 0;
  friend class TraceLine;
  uint64_t trace_hash_ = 0xcbf29ce484222325ull;
  uint64_t trace_line_count_ = 0;
  std::string trace_scratch_;
  std::string trace_path_;
  std::vector<std::string> trace_lines_;  // kept only when tracing to a file
  std::unordered_map<uint64_t, std::vector<Holder>> by_buffer_;
  std::unordered_map<uint64_t, InFlightOp> in_flight_;
  // Host mappings held now, by buffer id; `write` as for SimAccess.
  std::unordered_map<uint64_t, std::vector<SimAccess>> host_mappings_;
  // Mapping hazards not yet taken by their op, by op id.
  std::unordered_map<uint64_t, Status> mapping_hazards_;
  std::atomic<size_t> mapping_hazard_count_{0};  // mapping_hazards_.size()
  void AddMappingHazard(uint64_t op_id, const std::string& report);
  std::vector<std::string> reports_;
  SimFaultPlan faults_;
  uint64_t allocations_ = 0;
  uint64_t ops_run_ = 0;
  Status lost_;
};

inline TraceLine::TraceLine(SimContext& context)
    : context_(context),
      text_(context.keeps_trace_text() ? &context.trace_scratch_ : nullptr),
      hash_(context.trace_hash_) {
  if (text_) text_->clear();
}

inline TraceLine::~TraceLine() {
  context_.trace_hash_ = TraceMix(hash_, 0x0A);  // the end of the line
  ++context_.trace_line_count_;
  if (text_) context_.trace_lines_.emplace_back(*text_);
}

}  // namespace hal::sim
