// Property 2: allocation.
//
// Random sequences of synchronous allocations, host imports, queue_alloca
// and queue_dealloca (some held back behind a "gate" semaphore that the host
// later signals or fails), host writes and reads through mappings, frees and
// statistics queries, against a model of every buffer's state and bytes.
//
// Checked: memory types, usage and alignment are as requested; no two live
// allocations overlap; contents survive until freed; misuse gives the
// documented error (mapping device-only memory: INVALID_ARGUMENT; host use
// before the alloca commits, use after dealloca, double dealloca:
// FAILED_PRECONDITION); a dealloca whose wait failed frees nothing; an
// import's release callback runs exactly once; Allocator::statistics()
// matches the model.
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "hal/allocator.h"
#include "hal/device.h"
#include "hal/utils/buffer_internal.h"
#include "property_tests/property_util.h"

namespace hal::prop {
namespace {

constexpr int kMaxBuffers = 8;

struct TypeInfo {
  const char* name;
  MemoryType type;
  BufferUsage usage;
  bool mappable;
  bool device_bytes;  // counted as device memory in the statistics
};
const TypeInfo kTypes[] = {
    {"DEVICE_LOCAL", MemoryType::kDeviceLocal, BufferUsage::kTransfer, false,
     true},
    {"HOST_LOCAL|HOST_COHERENT",
     MemoryType::kHostLocal | MemoryType::kHostCoherent,
     BufferUsage::kTransfer | BufferUsage::kMapping, true, false},
    {"DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT",
     MemoryType::kDeviceLocal | MemoryType::kHostVisible |
         MemoryType::kHostCoherent,
     BufferUsage::kTransfer | BufferUsage::kMapping, true, true},
    {"HOST_LOCAL (not coherent)", MemoryType::kHostLocal,
     BufferUsage::kTransfer | BufferUsage::kMapping, true, false},
};

enum class Kind { kAllocated, kImported, kAlloca };

bool NoImport() {
  const char* v = std::getenv("HAL_PROPERTY_NO_IMPORT");
  return v && std::string(v) == "1";
}
enum class State { kReserved, kLive, kDeallocaQueued, kFreed, kDropped };

struct BufModel {
  Kind kind = Kind::kAllocated;
  int type = 0;
  DeviceSize size = 0;
  DeviceSize alignment = 0;
  State state = State::kLive;
  bool committed = false;  // memory counted in the statistics
  bool gated = false;      // its last queue op waits on the gate
  State before_dealloca = State::kLive;
  std::vector<int> bytes;  // -1: unknown
};

struct Model {
  std::vector<BufModel> buffers;
  AllocatorStatistics base;  // the allocator's statistics before the case
  uint64_t imports = 0;
};

bool Mappable(const BufModel& b) {
  return b.kind == Kind::kImported || kTypes[b.type].mappable;
}

void Commit(BufModel& b) { b.committed = true; }

// Host memory for imports, freed when the last owner drops it: a failing
// case (RC_FAIL throws out of the middle of a command) frees it too.
// `g_live_host_blocks` counts the blocks not freed yet (the self-check
// HAL_PROPERTY_SELF_TEST_FAIL_IMPORT reads it).
std::atomic<int64_t> g_live_host_blocks{0};

class HostBlock {
 public:
  explicit HostBlock(size_t size)
      : ptr_(std::aligned_alloc(64,
                                std::max<size_t>(64, (size + 63) / 64 * 64))) {
    if (ptr_) g_live_host_blocks.fetch_add(1);
  }
  ~HostBlock() {
    if (ptr_) {
      std::free(ptr_);
      g_live_host_blocks.fetch_sub(1);
    }
  }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }

 private:
  void* ptr_;
};

struct Sut {
  // First, so it is destroyed last: after the device and the buffers that
  // import it.
  std::vector<std::unique_ptr<HostBlock>> host_memory;
  Ref<Device> device;
  Ref<Semaphore> gate;
  Ref<Semaphore> pump;
  std::vector<Ref<Buffer>> buffers;
  std::vector<Ref<Semaphore>> last_op;  // per buffer: its latest queue op's
  std::vector<std::shared_ptr<std::atomic<int>>> releases;  // imports

  ~Sut() {
    // Buffers and device go before host_memory (declaration order would
    // do it too; this says it).
    buffers.clear();
    last_op.clear();
    gate = nullptr;
    pump = nullptr;
    device.reset();
  }
};

using Cmd = rc::state::Command<Model, Sut>;

// Waits until the ungated queue ops of buffer `i` finished.
void SettleBuffer(const Model& m, Sut& sut, size_t i) {
  if (m.buffers[i].gated || !sut.last_op[i]) return;
  Status st = sut.last_op[i]->Wait(1, Timeout::After(kSettleTimeout));
  if (!st.ok()) {
    RC_FAIL("b" + std::to_string(i) +
            ": its queue operations should finish: " + st.ToString());
  }
}

// Driver-private (hal/utils/buffer_internal.h): null for drivers whose
// memory the host cannot address.
uint8_t* StorageOf(Buffer* b) {
  return internal::BufferInternal::HostStorage(b);
}

// No two live allocations share a byte (where the driver shows addresses).
void CheckNoOverlap(const Model& m, Sut& sut) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const BufModel& b = m.buffers[i];
    if (b.state == State::kDropped || b.size == 0) continue;
    uint8_t* p = StorageOf(sut.buffers[i].get());
    if (!p) continue;
    ranges.push_back({reinterpret_cast<uintptr_t>(p),
                      reinterpret_cast<uintptr_t>(p) + b.size});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      RC_FAIL("two live allocations overlap");
    }
  }
}

void CheckCreated(const Model& m, Sut& sut, const BufModel& b, Buffer* buffer) {
  RC_ASSERT(buffer->byte_length() == b.size);
  if (b.kind != Kind::kImported) {
    RC_ASSERT(AllOf(buffer->memory_type(), kTypes[b.type].type));
    RC_ASSERT(AllOf(buffer->allowed_usage(), kTypes[b.type].usage));
  }
  uint8_t* p = StorageOf(buffer);
  if (p && b.alignment && b.size) {
    if (reinterpret_cast<uintptr_t>(p) % b.alignment != 0) {
      RC_FAIL("allocation is not aligned to " + std::to_string(b.alignment));
    }
  }
}

struct Allocate : Cmd {
  Kind kind;
  int type;
  DeviceSize size;
  DeviceSize alignment;
  bool gated;
  explicit Allocate(const Model& m) {
    // HAL_PROPERTY_NO_IMPORT=1: the device cannot import host memory
    // (Level Zero 1.4); its check registration says so.
    kind = NoImport() ? *rc::gen::element(Kind::kAllocated, Kind::kAlloca,
                                          Kind::kAlloca)
                      : *rc::gen::element(Kind::kAllocated, Kind::kImported,
                                          Kind::kAlloca, Kind::kAlloca);
    type = *rc::gen::inRange(0, 4);
    size = *rc::gen::element<DeviceSize>(0, 1, 4, 64, 100, 256, 4096);
    alignment = kind == Kind::kImported
                    ? *rc::gen::element<DeviceSize>(0, 4, 64)
                    : *rc::gen::element<DeviceSize>(0, 64, 256, 4096, 65536);
    gated = kind == Kind::kAlloca && *rc::gen::arbitrary<bool>();
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.buffers.size() < static_cast<size_t>(kMaxBuffers));
  }
  void apply(Model& m) const override {
    BufModel b;
    b.kind = kind;
    b.type = type;
    b.size = size;
    b.alignment = alignment;
    b.bytes.assign(size, -1);
    if (kind == Kind::kImported) {
      for (DeviceSize i = 0; i < size; ++i)
        b.bytes[i] = static_cast<int>(i * 7 & 0xFF);
      ++m.imports;
    } else if (kind == Kind::kAlloca) {
      b.gated = gated;
      b.state = gated ? State::kReserved : State::kLive;
      b.committed = !gated;
    } else {
      b.committed = true;
    }
    m.buffers.push_back(b);
  }
  void run(const Model& m, Sut& sut) const override {
    BufferParams params;
    params.type = kTypes[type].type;
    params.usage = kTypes[type].usage;
    params.min_alignment = alignment;
    Ref<Buffer> buffer;
    Ref<Semaphore> done;
    auto releases = std::make_shared<std::atomic<int>>(0);
    std::unique_ptr<HostBlock> host;
    if (kind == Kind::kAllocated) {
      buffer =
          ValueOrFail(sut.device->allocator()->AllocateBuffer(params, size),
                      "AllocateBuffer");
    } else if (kind == Kind::kImported) {
      params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
      params.usage = BufferUsage::kTransfer | BufferUsage::kMapping;
      // Owned by sut.host_memory before anything can fail.
      sut.host_memory.push_back(std::make_unique<HostBlock>(size));
      uint8_t* bytes = sut.host_memory.back()->data();
      RC_ASSERT(bytes != nullptr);
      for (DeviceSize i = 0; i < size; ++i) {
        bytes[i] = static_cast<uint8_t>(i * 7 & 0xFF);
      }
      buffer = ValueOrFail(
          sut.device->allocator()->ImportHostAllocation(
              params, bytes, size, [releases] { releases->fetch_add(1); }),
          "ImportHostAllocation");
      host = std::move(sut.host_memory.back());
      sut.host_memory.pop_back();
      if (std::getenv("HAL_PROPERTY_SELF_TEST_FAIL_IMPORT")) {
        sut.host_memory.push_back(std::move(host));
        RC_FAIL(
            "HAL_PROPERTY_SELF_TEST_FAIL_IMPORT: this case fails on purpose");
      }
    } else {
      done = ValueOrFail(sut.device->CreateSemaphore(0), "CreateSemaphore");
      StatusOr<uint64_t> g = sut.gate->Query();
      RC_ASSERT(g.ok());
      SemaphorePoint wait{sut.gate.get(), *g + (gated ? 1 : 0)};
      SemaphorePoint signal{done.get(), 1};
      StatusOr<Ref<Buffer>> r = sut.device->QueueAlloca(
          kQueueAffinityAny, {&wait, 1}, {&signal, 1}, params, size);
      buffer = ValueOrFail(std::move(r), "QueueAlloca");
      RC_ASSERT(buffer->state() == BufferState::kReserved ||
                buffer->state() == BufferState::kLive);
    }
    sut.buffers.push_back(buffer);
    sut.last_op.push_back(done);
    sut.releases.push_back(releases);
    sut.host_memory.push_back(std::move(host));
    Model next = nextState(m);
    SettleBuffer(next, sut, next.buffers.size() - 1);
    CheckCreated(next, sut, next.buffers.back(), buffer.get());
    CheckNoOverlap(next, sut);
  }
  void show(std::ostream& os) const override {
    const char* what = kind == Kind::kAllocated  ? "AllocateBuffer"
                       : kind == Kind::kImported ? "ImportHostAllocation"
                                                 : "QueueAlloca";
    os << "b = " << what << "("
       << (kind == Kind::kImported ? "HOST_LOCAL|HOST_COHERENT"
                                   : kTypes[type].name)
       << ", " << size << " bytes, min_alignment=" << alignment
       << (gated ? ", wait={gate>=next}" : "") << ")";
  }
};

// A buffer index drawn among those that satisfy `eligible` (a discard when
// none does): drawing among all and discarding the ineligible ones costs a
// retry and an exception each.
template <typename Pred>
int PickBuffer(const Model& m, Pred eligible) {
  std::vector<int> candidates;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    if (eligible(m.buffers[i])) candidates.push_back(static_cast<int>(i));
  }
  RC_PRE(!candidates.empty());
  return *rc::gen::elementOf(candidates);
}

struct Dealloca : Cmd {
  int buffer;
  bool gated;
  explicit Dealloca(const Model& m) {
    buffer = PickBuffer(m, [](const BufModel& b) {
      return b.kind != Kind::kImported && b.state != State::kDropped;
    });
    gated = *rc::gen::arbitrary<bool>();
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(buffer < static_cast<int>(m.buffers.size()));
    const BufModel& b = m.buffers[buffer];
    RC_PRE(b.kind != Kind::kImported && b.state != State::kDropped);
  }
  bool Allowed(const BufModel& b) const {
    return b.state == State::kLive || b.state == State::kReserved;
  }
  void apply(Model& m) const override {
    BufModel& b = m.buffers[buffer];
    if (!Allowed(b)) return;  // double dealloca: an error, nothing changes
    b.before_dealloca = b.state;
    b.gated = b.gated || gated;
    if (b.gated) {
      b.state = State::kDeallocaQueued;
    } else {
      b.state = State::kFreed;
      b.committed = false;
    }
  }
  void run(const Model& m, Sut& sut) const override {
    const BufModel& b = m.buffers[buffer];
    Buffer* buf = sut.buffers[buffer].get();
    if (!Allowed(b)) {
      Status st = sut.device->QueueDealloca(kQueueAffinityAny, {}, {}, buf);
      if (st.code() != StatusCode::kFailedPrecondition) {
        RC_FAIL("double dealloca should be FAILED_PRECONDITION: " +
                st.ToString());
      }
      return;
    }
    std::vector<SemaphorePoint> waits;
    if (sut.last_op[buffer]) waits.push_back({sut.last_op[buffer].get(), 1});
    StatusOr<uint64_t> g = sut.gate->Query();
    RC_ASSERT(g.ok());
    waits.push_back({sut.gate.get(), *g + (gated ? 1 : 0)});
    Ref<Semaphore> done =
        ValueOrFail(sut.device->CreateSemaphore(0), "CreateSemaphore");
    SemaphorePoint signal{done.get(), 1};
    Status st =
        sut.device->QueueDealloca(kQueueAffinityAny, waits, {&signal, 1}, buf);
    if (!st.ok()) RC_FAIL("QueueDealloca: " + st.ToString());
    sut.last_op[buffer] = done;
    SettleBuffer(nextState(m), sut, buffer);
  }
  void show(std::ostream& os) const override {
    os << "QueueDealloca(b" << buffer << (gated ? ", wait={gate>=next}" : "")
       << ")";
  }
};

struct Gate : Cmd {
  bool fail;
  explicit Gate(const Model& m) { fail = *rc::gen::inRange(0, 3) == 0; }
  void apply(Model& m) const override {
    for (BufModel& b : m.buffers) {
      if (!b.gated) continue;
      b.gated = false;
      if (fail) {
        // Nothing held back runs: an alloca stays uncommitted, a dealloca
        // frees nothing and the buffer is usable again.
        if (b.state == State::kDeallocaQueued) b.state = b.before_dealloca;
      } else {
        if (b.kind == Kind::kAlloca && !b.committed &&
            b.state != State::kFreed) {
          Commit(b);
        }
        if (b.state == State::kReserved) b.state = State::kLive;
        if (b.state == State::kDeallocaQueued) {
          b.state = State::kFreed;
          b.committed = false;
        }
      }
    }
  }
  void run(const Model& m, Sut& sut) const override {
    if (fail) {
      sut.gate->Fail(Status(StatusCode::kAborted, "gate failed by the test"));
    } else {
      uint64_t g = ValueOrFail(sut.gate->Query(), "gate->Query");
      RC_ASSERT(sut.gate->Signal(g + 1).ok());
    }
    for (size_t i = 0; i < m.buffers.size(); ++i) {
      if (!m.buffers[i].gated) continue;
      Status st = sut.last_op[i]->Wait(1, Timeout::After(kSettleTimeout));
      if (fail) {
        if (st.code() != StatusCode::kAborted) {
          RC_FAIL("b" + std::to_string(i) +
                  ": ops behind a failed gate should "
                  "fail with ABORTED: " +
                  st.ToString());
        }
        sut.last_op[i] = nullptr;  // failed: later ops must not wait on it
      } else if (!st.ok()) {
        RC_FAIL("b" + std::to_string(i) + ": " + st.ToString());
      }
    }
    if (fail)
      sut.gate = ValueOrFail(sut.device->CreateSemaphore(0), "CreateSemaphore");
    Model next = nextState(m);
    for (size_t i = 0; i < next.buffers.size(); ++i) {
      const BufModel& b = next.buffers[i];
      if (b.state == State::kDropped) continue;
      BufferState s = sut.buffers[i]->state();
      bool ok = (b.state == State::kLive && s == BufferState::kLive) ||
                (b.state == State::kReserved && s == BufferState::kReserved) ||
                (b.state == State::kFreed && s == BufferState::kFreed) ||
                (b.state == State::kDeallocaQueued &&
                 s == BufferState::kDeallocaQueued);
      if (!ok) {
        RC_FAIL("b" + std::to_string(i) + " is " + BufferStateName(s) +
                ", not what the model says");
      }
    }
  }
  void show(std::ostream& os) const override {
    os << (fail ? "gate->Fail(ABORTED); gate = new semaphore"
                : "gate->Signal(next)");
  }
};

// Host write or read through a mapping, with the error the state implies.
struct HostAccess : Cmd {
  int buffer;
  bool write;
  DeviceSize offset, length;
  uint8_t seed;
  explicit HostAccess(const Model& m) {
    buffer = PickBuffer(
        m, [](const BufModel& b) { return b.state != State::kDropped; });
    write = *rc::gen::arbitrary<bool>();
    DeviceSize size = m.buffers[buffer].size;
    offset = *rc::gen::inRange<DeviceSize>(0, size + 2);
    length = *rc::gen::inRange<DeviceSize>(1, size + 3);
    seed = *rc::gen::arbitrary<uint8_t>();
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(buffer < static_cast<int>(m.buffers.size()));
    RC_PRE(m.buffers[buffer].state != State::kDropped);
  }
  StatusCode Expected(const BufModel& b) const {
    if (!Mappable(b)) return StatusCode::kInvalidArgument;
    if (b.state == State::kDeallocaQueued || b.state == State::kFreed) {
      return StatusCode::kFailedPrecondition;
    }
    if (offset > b.size || length > b.size - offset)
      return StatusCode::kOutOfRange;
    if (b.state == State::kReserved) return StatusCode::kFailedPrecondition;
    return StatusCode::kOk;
  }
  void apply(Model& m) const override {
    BufModel& b = m.buffers[buffer];
    if (!write || Expected(b) != StatusCode::kOk) return;
    for (DeviceSize i = 0; i < length; ++i) {
      b.bytes[offset + i] = static_cast<uint8_t>(seed + i);
    }
  }
  void run(const Model& m, Sut& sut) const override {
    const BufModel& b = m.buffers[buffer];
    SettleBuffer(m, sut, buffer);
    std::vector<uint8_t> data(length);
    for (DeviceSize i = 0; i < length; ++i)
      data[i] = static_cast<uint8_t>(seed + i);
    Buffer* buf = sut.buffers[buffer].get();
    Status st = write ? buf->MapWrite(offset, data.data(), length)
                      : buf->MapRead(offset, data.data(), length);
    StatusCode expected = Expected(b);
    if (st.code() != expected) {
      RC_FAIL(std::string("expected ") + StatusCodeName(expected) + ", got " +
              st.ToString());
    }
    if (write || !st.ok()) return;
    for (DeviceSize i = 0; i < length; ++i) {
      int want = b.bytes[offset + i];
      if (want >= 0 && data[i] != want) {
        RC_FAIL("b" + std::to_string(buffer) + "[" +
                std::to_string(offset + i) + "] is " + std::to_string(data[i]) +
                ", written as " + std::to_string(want));
      }
    }
  }
  void show(std::ostream& os) const override {
    os << "b" << buffer << "->" << (write ? "MapWrite(" : "MapRead(") << offset
       << ", " << length << ")";
  }
};

// A queue fill on a buffer after its dealloca: FAILED_PRECONDITION, and
// nothing is enqueued.
struct UseAfterDealloca : Cmd {
  int buffer;
  explicit UseAfterDealloca(const Model& m) {
    buffer = PickBuffer(m, [](const BufModel& b) {
      return b.state == State::kDeallocaQueued || b.state == State::kFreed;
    });
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(buffer < static_cast<int>(m.buffers.size()));
    State s = m.buffers[buffer].state;
    RC_PRE(s == State::kDeallocaQueued || s == State::kFreed);
  }
  void run(const Model& m, Sut& sut) const override {
    uint8_t zero = 0;
    Status st = sut.device->QueueFill(kQueueAffinityAny, {}, {},
                                      sut.buffers[buffer].get(), 0,
                                      kWholeBuffer, &zero, 1);
    RC_ASSERT(st.code() == StatusCode::kFailedPrecondition);
  }
  void show(std::ostream& os) const override {
    os << "QueueFill(b" << buffer << ") after its dealloca";
  }
};

struct Free : Cmd {
  int buffer;
  explicit Free(const Model& m) {
    buffer = PickBuffer(m, [](const BufModel& b) {
      return b.state != State::kDropped && !b.gated;
    });
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(buffer < static_cast<int>(m.buffers.size()));
    RC_PRE(m.buffers[buffer].state != State::kDropped);
    RC_PRE(!m.buffers[buffer].gated);  // queued work still holds it
  }
  void apply(Model& m) const override {
    BufModel& b = m.buffers[buffer];
    b.state = State::kDropped;
    b.committed = false;
  }
  void run(const Model& m, Sut& sut) const override {
    SettleBuffer(m, sut, buffer);
    sut.buffers[buffer] = nullptr;
    sut.last_op[buffer] = nullptr;
    if (m.buffers[buffer].kind == Kind::kImported) {
      // Exactly once (a finishing operation may hold it a moment longer).
      auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
      while (sut.releases[buffer]->load() == 0 &&
             std::chrono::steady_clock::now() < deadline) {
        sut.pump->Wait(1, Timeout::After(std::chrono::microseconds(200)))
            .IgnoreError();
      }
      RC_ASSERT(sut.releases[buffer]->load() == 1);
      sut.host_memory[buffer] = nullptr;
    }
  }
  void show(std::ostream& os) const override {
    os << "b" << buffer << " = nullptr  // drop the last reference";
  }
};

struct Stats : Cmd {
  explicit Stats(const Model& m) {}
  void run(const Model& m, Sut& sut) const override {
    for (size_t i = 0; i < m.buffers.size(); ++i) SettleBuffer(m, sut, i);
    AllocatorStatistics want = m.base;
    for (const BufModel& b : m.buffers) {
      if (b.kind == Kind::kImported || !b.committed) continue;
      (kTypes[b.type].device_bytes ? want.device_bytes_allocated
                                   : want.host_bytes_allocated) += b.size;
      ++want.live_allocations;
    }
    want.imports += m.imports;
    // Memory a finished operation still holds is released a moment later.
    AllocatorStatistics got;
    auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
    auto same = [&] {
      got = sut.device->allocator()->statistics();
      return got.device_bytes_allocated == want.device_bytes_allocated &&
             got.host_bytes_allocated == want.host_bytes_allocated &&
             got.live_allocations == want.live_allocations &&
             got.imports == want.imports;
    };
    while (!same() && std::chrono::steady_clock::now() < deadline) {
      sut.pump->Wait(1, Timeout::After(std::chrono::microseconds(200)))
          .IgnoreError();
    }
    if (!same()) {
      RC_FAIL("statistics: device " +
              std::to_string(got.device_bytes_allocated) + " host " +
              std::to_string(got.host_bytes_allocated) + " live " +
              std::to_string(got.live_allocations) + " imports " +
              std::to_string(got.imports) + "; the model says device " +
              std::to_string(want.device_bytes_allocated) + " host " +
              std::to_string(want.host_bytes_allocated) + " live " +
              std::to_string(want.live_allocations) + " imports " +
              std::to_string(want.imports));
    }
    RC_ASSERT(got.device_bytes_peak >= got.device_bytes_allocated);
    RC_ASSERT(got.host_bytes_peak >= got.host_bytes_allocated);
    RC_ASSERT(got.total_allocations >= got.live_allocations);
    CheckNoOverlap(m, sut);
  }
  void show(std::ostream& os) const override {
    os << "allocator->statistics()";
  }
};

}  // namespace
}  // namespace hal::prop

int main() {
  using namespace hal;
  using namespace hal::prop;
  int rc = RunProperty("allocation", [](uint32_t sim_seed) {
    std::string uri = CaseDeviceUri(sim_seed);
    Sut sut;
    sut.device = CreateCaseDevice(uri);
    sut.gate = ValueOrFail(sut.device->CreateSemaphore(0), "CreateSemaphore");
    sut.pump = ValueOrFail(sut.device->CreateSemaphore(0), "CreateSemaphore");
    Model initial;
    initial.base = sut.device->allocator()->statistics();
    // Without buffers only these three can be generated; with the most
    // buffers, no allocation.
    auto next = [](const Model& m) {
      if (m.buffers.empty())
        return OneOfCommands<Model, Sut, Allocate, Gate, Stats>(m);
      if (m.buffers.size() >= static_cast<size_t>(kMaxBuffers)) {
        return OneOfCommands<Model, Sut, Dealloca, Gate, HostAccess, HostAccess,
                             HostAccess, UseAfterDealloca, Free, Stats>(m);
      }
      return OneOfCommands<Model, Sut, Allocate, Allocate, Dealloca, Gate,
                           HostAccess, HostAccess, HostAccess, UseAfterDealloca,
                           Free, Stats>(m);
    };
    const auto commands = *rc::state::gen::commands(initial, next);
    rc::state::runAll(commands, initial, sut);
    // Dropping the device cancels what still waits on the gate; imports are
    // released exactly once in the end.
    Model final_model = initial;
    rc::state::applyAll(commands, final_model);
    sut.buffers.clear();
    sut.last_op.clear();
    sut.device.reset();
    for (size_t i = 0; i < sut.releases.size(); ++i) {
      if (final_model.buffers[i].kind != Kind::kImported) continue;
      RC_ASSERT(sut.releases[i]->load() == 1);
    }
  });
  // Every case, failed ones included, frees its host memory
  // (property.allocation.failing_case_cleans_up checks this line).
  std::printf("allocation: %lld host block(s) not freed\n",
              static_cast<long long>(g_live_host_blocks.load()));
  if (g_live_host_blocks.load() != 0) return 1;
  return rc;
}
