// Property 3: command-buffer semantics.
//
// Random programs of fill, update and copy over a few buffers, with
// execution barriers and binding-table slots, recorded one-shot or reusable
// and submitted (a reusable one several times, each time with another
// binding table). After every submission the buffers must equal what a
// reference interpreter (plain C++ over byte arrays) computes.
//
// Programs are race-free by construction: a command that touches bytes an
// earlier command of the same segment writes (or writes bytes it reads) gets
// an ExecutionBarrier first, so any order the driver picks inside a segment
// gives the same bytes. On the simulator with its checker on (the default),
// some programs deliberately leave such a barrier out; the simulator must
// then fail the submission with FAILED_PRECONDITION instead of silently
// computing something.
//
// Failure: some submissions also wait on a gate that the host fails (before
// or after the submission). Such an execution must not run any command
// (every buffer keeps its bytes) and its signal must fail with the gate's
// code.
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/uri.h"
#include "property_tests/property_util.h"

namespace hal::prop {
namespace {

constexpr int kMaxTables = 3;

// A binding-table entry: a range of one of the buffers.
struct Region {
  int buffer = 0;
  DeviceSize offset = 0;
  DeviceSize length = 0;
};
using Table = std::vector<Region>;

// A buffer reference as recorded: a buffer index or a slot.
struct Ref_ {
  bool slot = false;
  int index = 0;  // buffer or slot
  DeviceSize offset = 0;
};

enum class Kind { kFill, kUpdate, kCopy };

struct Op {
  Kind kind = Kind::kFill;
  Ref_ target;
  Ref_ source;  // copy
  DeviceSize length = 0;
  uint32_t pattern = 0;
  uint8_t pattern_length = 1;
  std::vector<uint8_t> data;  // update
};

// One byte range a command touches once its slots are resolved.
struct Access {
  int buffer;
  DeviceSize begin, end;
  bool write;
};

struct Model {
  std::vector<std::vector<uint8_t>> contents;  // the buffers
  bool checking_sim = false;  // the device reports missing barriers
  // The current command buffer.
  bool exists = false;
  bool ended = false;
  bool one_shot = false;
  int submitted = 0;
  std::vector<Table> tables;              // one per planned submission
  std::vector<std::vector<Op>> segments;  // program, split at barriers
  uint32_t racy_tables = 0;  // bit t: the program has a hazard with table t
};

Access Resolve(const Model& m, const Ref_& r, DeviceSize length, bool write,
               const Table& table) {
  if (!r.slot) return {r.index, r.offset, r.offset + length, write};
  const Region& g = table[r.index];
  return {g.buffer, g.offset + r.offset, g.offset + r.offset + length, write};
}

std::vector<Access> Accesses(const Model& m, const Op& op, const Table& t) {
  std::vector<Access> out;
  out.push_back(Resolve(m, op.target, op.length, true, t));
  if (op.kind == Kind::kCopy)
    out.push_back(Resolve(m, op.source, op.length, false, t));
  return out;
}

bool Overlap(const Access& a, const Access& b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end &&
         a.end > a.begin && b.end > b.begin;
}

// Whether `op` conflicts with the current segment under table `t`.
bool Conflicts(const Model& m, const Op& op, const Table& t) {
  if (m.segments.empty()) return false;
  std::vector<Access> mine = Accesses(m, op, t);
  for (const Op& other : m.segments.back()) {
    for (const Access& a : Accesses(m, other, t)) {
      for (const Access& b : mine) {
        if ((a.write || b.write) && Overlap(a, b)) return true;
      }
    }
  }
  return false;
}

// The reference interpreter: one command over plain byte arrays.
void Interpret(std::vector<std::vector<uint8_t>>& mem, const Op& op,
               const Table& t, const Model& m) {
  Access dst = Resolve(m, op.target, op.length, true, t);
  uint8_t* d = mem[dst.buffer].data() + dst.begin;
  switch (op.kind) {
    case Kind::kFill:
      for (DeviceSize i = 0; i < op.length; ++i) {
        d[i] =
            static_cast<uint8_t>(op.pattern >> (8 * (i % op.pattern_length)));
      }
      break;
    case Kind::kUpdate:
      if (op.length) std::memcpy(d, op.data.data(), op.length);
      break;
    case Kind::kCopy: {
      Access src = Resolve(m, op.source, op.length, false, t);
      std::vector<uint8_t> tmp(mem[src.buffer].begin() + src.begin,
                               mem[src.buffer].begin() + src.end);
      if (op.length) std::memcpy(d, tmp.data(), op.length);
      break;
    }
  }
}

struct Sut {
  Ref<Device> device;
  std::vector<Ref<Buffer>> buffers;
  Ref<CommandBuffer> cb;
  Ref<Semaphore> timeline;
  uint64_t timeline_value = 0;
  std::vector<std::string> recorded;  // what was recorded, for messages
};

using Cmd = rc::state::Command<Model, Sut>;

std::string ShowRef(const Ref_& r) {
  std::ostringstream os;
  if (r.slot) {
    os << "Slot(" << r.index << ", " << r.offset;
  } else {
    os << "Direct(b" << r.index << ", " << r.offset;
  }
  return os.str();
}

BufferRef ToHal(const Sut& sut, const Ref_& r, DeviceSize length) {
  if (r.slot) return BufferRef::Slot(r.index, r.offset, length);
  return BufferRef::Direct(sut.buffers[r.index].get(), r.offset, length);
}

struct Begin : Cmd {
  bool one_shot;
  std::vector<Table> tables;
  explicit Begin(const Model& m) {
    one_shot = *rc::gen::arbitrary<bool>();
    int submissions = one_shot ? 1 : *rc::gen::inRange(1, kMaxTables + 1);
    int capacity = *rc::gen::inRange(0, 4);
    for (int s = 0; s < submissions; ++s) {
      Table t;
      for (int i = 0; i < capacity; ++i) {
        Region g;
        g.buffer = *rc::gen::inRange<int>(0, m.contents.size());
        DeviceSize size = m.contents[g.buffer].size();
        g.offset = 4 * *rc::gen::inRange<DeviceSize>(0, size / 4);
        g.length =
            4 * *rc::gen::inRange<DeviceSize>(1, (size - g.offset) / 4 + 1);
        t.push_back(g);
      }
      tables.push_back(t);
    }
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.exists || m.ended);
    for (const Table& t : tables) {
      for (const Region& g : t) {
        RC_PRE(g.buffer < static_cast<int>(m.contents.size()));
        RC_PRE(g.offset + g.length <= m.contents[g.buffer].size());
      }
    }
  }
  void apply(Model& m) const override {
    m.exists = true;
    m.ended = false;
    m.one_shot = one_shot;
    m.submitted = 0;
    m.tables = tables;
    m.segments.clear();
    m.segments.emplace_back();
    m.racy_tables = 0;
  }
  void run(const Model& m, Sut& sut) const override {
    StatusOr<Ref<CommandBuffer>> cb = sut.device->CreateCommandBuffer(
        one_shot ? CommandBufferMode::kOneShot : CommandBufferMode::kReusable,
        CommandCategory::kTransfer, kQueueAffinityAny,
        static_cast<uint32_t>(tables[0].size()));
    RC_ASSERT(cb.ok());
    sut.cb = cb.value();
    RC_ASSERT(sut.cb->Begin().ok());
    sut.recorded.clear();
  }
  void show(std::ostream& os) const override {
    os << "cb = CreateCommandBuffer(" << (one_shot ? "ONE_SHOT" : "REUSABLE")
       << ", binding_capacity=" << tables[0].size() << "); cb->Begin()"
       << "  // tables:";
    for (const Table& t : tables) {
      os << " [";
      for (size_t i = 0; i < t.size(); ++i) {
        os << (i ? ", " : "") << "b" << t[i].buffer << "+" << t[i].offset << ":"
           << t[i].length;
      }
      os << "]";
    }
  }
};

// Fill, update or copy. The generator keeps every reference in range and
// aligned under every planned table; the barrier that race freedom needs is
// decided when the command runs (so shrinking cannot make a program racy).
struct Record : Cmd {
  Op op;
  bool omit_barrier = false;  // only where the device checks for hazards

  // A reference's buffer or slot, and the bytes it may span under every
  // table (the offset is drawn once the length is known).
  static std::pair<Ref_, DeviceSize> PickRef(const Model& m) {
    Ref_ r;
    int slots = static_cast<int>(m.tables[0].size());
    r.slot = slots > 0 && *rc::gen::arbitrary<bool>();
    DeviceSize window;
    if (r.slot) {
      r.index = *rc::gen::inRange(0, slots);
      window = ~DeviceSize{0};
      for (const Table& t : m.tables)
        window = std::min(window, t[r.index].length);
    } else {
      r.index = *rc::gen::inRange<int>(0, m.contents.size());
      window = m.contents[r.index].size();
    }
    return {r, window};
  }
  static void PlaceRef(Ref_& r, DeviceSize window, DeviceSize length,
                       DeviceSize align) {
    r.offset =
        align * *rc::gen::inRange<DeviceSize>(0, (window - length) / align + 1);
  }

  // Lengths are drawn first and clamped to what the chosen references can
  // hold (rather than discarded), so that generation never retries.
  explicit Record(const Model& m) {
    RC_PRE(m.exists && !m.ended);
    op.kind = *rc::gen::element(Kind::kFill, Kind::kUpdate, Kind::kCopy);
    switch (op.kind) {
      case Kind::kFill: {
        op.pattern_length = *rc::gen::element<uint8_t>(1, 2, 4);
        op.pattern = *rc::gen::arbitrary<uint32_t>();
        if (op.pattern_length < 4)
          op.pattern &= (1u << (8 * op.pattern_length)) - 1;
        auto [target, window] = PickRef(m);
        DeviceSize units = std::min<DeviceSize>(
            *rc::gen::inRange<DeviceSize>(0, 17), window / op.pattern_length);
        op.length = op.pattern_length * units;
        op.target = target;
        PlaceRef(op.target, window, op.length, op.pattern_length);
        break;
      }
      case Kind::kUpdate: {
        auto [target, window] = PickRef(m);
        op.length =
            std::min<DeviceSize>(*rc::gen::inRange<DeviceSize>(0, 65), window);
        op.data = *rc::gen::container<std::vector<uint8_t>>(
            op.length, rc::gen::arbitrary<uint8_t>());
        op.target = target;
        PlaceRef(op.target, window, op.length, 1);
        break;
      }
      case Kind::kCopy: {
        auto [source, source_window] = PickRef(m);
        auto [target, target_window] = PickRef(m);
        op.length = std::min({*rc::gen::inRange<DeviceSize>(0, 65),
                              source_window, target_window});
        op.source = source;
        op.target = target;
        PlaceRef(op.source, source_window, op.length, 1);
        PlaceRef(op.target, target_window, op.length, 1);
        break;
      }
    }
    omit_barrier = m.checking_sim && *rc::gen::inRange(0, 10) == 0;
  }

  bool Valid(const Model& m) const {
    if (!m.exists || m.ended) return false;
    auto in_range = [&](const Ref_& r) {
      if (r.slot) {
        if (r.index >= static_cast<int>(m.tables[0].size())) return false;
        for (const Table& t : m.tables) {
          if (r.offset + op.length > t[r.index].length) return false;
        }
        return true;
      }
      return r.index < static_cast<int>(m.contents.size()) &&
             r.offset + op.length <= m.contents[r.index].size();
    };
    if (!in_range(op.target)) return false;
    if (op.kind == Kind::kCopy) {
      if (!in_range(op.source)) return false;
      // A copy may not overlap itself (INVALID_ARGUMENT): not generated.
      for (const Table& t : m.tables) {
        if (Overlap(Resolve(m, op.source, op.length, false, t),
                    Resolve(m, op.target, op.length, true, t))) {
          return false;
        }
      }
    }
    return true;
  }
  void checkPreconditions(const Model& m) const override { RC_PRE(Valid(m)); }

  bool NeedsBarrier(const Model& m) const {
    for (const Table& t : m.tables) {
      if (Conflicts(m, op, t)) return true;
    }
    return false;
  }

  void apply(Model& m) const override {
    if (NeedsBarrier(m)) {
      if (omit_barrier) {
        for (size_t t = 0; t < m.tables.size(); ++t) {
          if (Conflicts(m, op, m.tables[t])) m.racy_tables |= 1u << t;
        }
      } else {
        m.segments.emplace_back();
      }
    }
    m.segments.back().push_back(op);
  }

  void run(const Model& m, Sut& sut) const override {
    if (NeedsBarrier(m) && !omit_barrier) {
      RC_ASSERT(sut.cb->ExecutionBarrier().ok());
      sut.recorded.push_back("ExecutionBarrier()");
    }
    Status st;
    switch (op.kind) {
      case Kind::kFill:
        st = sut.cb->FillBuffer(ToHal(sut, op.target, op.length), &op.pattern,
                                op.pattern_length);
        break;
      case Kind::kUpdate:
        st = sut.cb->UpdateBuffer(op.data.data(),
                                  ToHal(sut, op.target, op.length));
        break;
      case Kind::kCopy:
        st = sut.cb->CopyBuffer(ToHal(sut, op.source, op.length),
                                ToHal(sut, op.target, op.length), op.length);
        break;
    }
    if (!st.ok()) RC_FAIL("recording a valid command failed: " + st.ToString());
  }

  void show(std::ostream& os) const override {
    switch (op.kind) {
      case Kind::kFill:
        os << "cb->FillBuffer(" << ShowRef(op.target) << ", " << op.length
           << "), pattern=0x" << std::hex << op.pattern << std::dec << "/"
           << int(op.pattern_length) << ")";
        break;
      case Kind::kUpdate:
        os << "cb->UpdateBuffer(<" << op.length << " bytes>, "
           << ShowRef(op.target) << ", " << op.length << "))";
        break;
      case Kind::kCopy:
        os << "cb->CopyBuffer(" << ShowRef(op.source) << ", " << op.length
           << "), " << ShowRef(op.target) << ", " << op.length << "), "
           << op.length << ")";
        break;
    }
    os << (omit_barrier ? "  // no ExecutionBarrier before it, even if needed"
                        : "  // ExecutionBarrier first if it conflicts");
  }
};

struct Barrier : Cmd {
  explicit Barrier(const Model& m) { RC_PRE(m.exists && !m.ended); }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.exists && !m.ended);
  }
  void apply(Model& m) const override { m.segments.emplace_back(); }
  void run(const Model& m, Sut& sut) const override {
    RC_ASSERT(sut.cb->ExecutionBarrier().ok());
  }
  void show(std::ostream& os) const override { os << "cb->ExecutionBarrier()"; }
};

// Ends the recording (once) and submits it with the next planned table;
// then every buffer must equal the reference interpreter's result.
struct Submit : Cmd {
  int queue;
  // 0: no gate; 1: the gate fails before the submission; 2: after it.
  int gate_fails = 0;
  StatusCode gate_code = StatusCode::kAborted;
  explicit Submit(const Model& m) {
    RC_PRE(m.exists);
    queue = *rc::gen::inRange(0, 64);
    if (*rc::gen::inRange(0, 6) == 0) {
      gate_fails = *rc::gen::inRange(1, 3);
      gate_code = *rc::gen::element(StatusCode::kAborted, StatusCode::kDataLoss,
                                    StatusCode::kInternal);
    }
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.exists && m.submitted < static_cast<int>(m.tables.size()));
  }
  bool Racy(const Model& m) const {
    return m.checking_sim && (m.racy_tables >> m.submitted) & 1u;
  }
  void apply(Model& m) const override {
    const Table& t = m.tables[m.submitted];
    if (!Racy(m) && gate_fails == 0) {
      for (const auto& segment : m.segments) {
        for (const Op& op : segment) Interpret(m.contents, op, t, m);
      }
    }
    m.ended = true;
    ++m.submitted;
  }
  void run(const Model& m, Sut& sut) const override {
    if (!m.ended) RC_ASSERT(sut.cb->End().ok());
    const Table& t = m.tables[m.submitted];
    std::vector<Binding> table;
    for (const Region& g : t) {
      table.push_back({sut.buffers[g.buffer].get(), g.offset, g.length});
    }
    Ref<Semaphore> gate;
    std::vector<SemaphorePoint> waits = {
        {sut.timeline.get(), sut.timeline_value}};
    if (gate_fails) {
      gate = sut.device->CreateSemaphore(0).value();
      waits.push_back({gate.get(), 1});
    }
    const Status gate_failure(gate_code, "gate failed by the property test");
    if (gate_fails == 1) gate->Fail(gate_failure);
    SemaphorePoint signal{sut.timeline.get(), sut.timeline_value + 1};
    QueueAffinity affinity = QueueAffinity{1}
                             << (queue % sut.device->queue_count());
    Status st = sut.device->QueueExecute(affinity, waits, {&signal, 1},
                                         sut.cb.get(), table);
    if (!st.ok()) RC_FAIL("QueueExecute failed: " + st.ToString());
    if (gate_fails == 2) gate->Fail(gate_failure);
    st = sut.timeline->Wait(sut.timeline_value + 1,
                            Timeout::After(kSettleTimeout));
    if (gate_fails) {
      // Behind a failed wait: nothing ran, the signal carries the code.
      if (st.code() != gate_code) {
        RC_FAIL("an execution behind a gate failed with " +
                std::string(StatusCodeName(gate_code)) +
                " should fail its signal with that code; waiting gave " +
                st.ToString());
      }
      sut.timeline = sut.device->CreateSemaphore(0).value();
      sut.timeline_value = 0;
    } else if (Racy(m)) {
      // The program lacks a barrier it needs: the checker must say so.
      if (st.code() != StatusCode::kFailedPrecondition) {
        RC_FAIL(
            "a program with a missing barrier was not reported as a "
            "hazard (FAILED_PRECONDITION); the submission gave " +
            st.ToString());
      }
      sut.timeline = sut.device->CreateSemaphore(0).value();
      sut.timeline_value = 0;
    } else {
      if (!st.ok()) RC_FAIL("the submission failed: " + st.ToString());
      ++sut.timeline_value;
    }
    // Compare every buffer with the interpreter.
    Model expected = nextState(m);
    for (size_t b = 0; b < sut.buffers.size(); ++b) {
      std::vector<uint8_t> actual(expected.contents[b].size());
      Status rs = sut.buffers[b]->MapRead(0, actual.data(), actual.size());
      if (!rs.ok())
        RC_FAIL("reading b" + std::to_string(b) + ": " + rs.ToString());
      for (size_t i = 0; i < actual.size(); ++i) {
        if (actual[i] != expected.contents[b][i]) {
          std::ostringstream os;
          os << "b" << b << "[" << i << "] is 0x" << std::hex << int(actual[i])
             << " but the reference interpreter says 0x"
             << int(expected.contents[b][i]);
          RC_FAIL(os.str());
        }
      }
    }
  }
  void show(std::ostream& os) const override {
    os << "cb->End() (once); QueueExecute(queue " << queue
       << " mod count, cb, next table";
    if (gate_fails) {
      os << ", waiting on a gate failed with " << StatusCodeName(gate_code)
         << (gate_fails == 1 ? " before" : " after") << " the submission";
    }
    os << "); wait; compare every buffer";
  }
};

// Misuse: a one-shot command buffer submitted twice; recording after End.
struct Misuse : Cmd {
  bool resubmit;
  explicit Misuse(const Model& m) {
    RC_PRE(m.exists && m.ended);
    resubmit = m.one_shot && *rc::gen::arbitrary<bool>();
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.exists && m.ended);
    if (resubmit) RC_PRE(m.one_shot);
  }
  void run(const Model& m, Sut& sut) const override {
    if (resubmit) {
      std::vector<Binding> table;
      for (const Region& g : m.tables[0]) {
        table.push_back({sut.buffers[g.buffer].get(), g.offset, g.length});
      }
      Status st = sut.device->QueueExecute(kQueueAffinityAny, {}, {},
                                           sut.cb.get(), table);
      RC_ASSERT(st.code() == StatusCode::kFailedPrecondition);
    } else {
      RC_ASSERT(sut.cb->ExecutionBarrier().code() ==
                StatusCode::kFailedPrecondition);
      uint32_t zero = 0;
      RC_ASSERT(sut.cb
                    ->FillBuffer(BufferRef::Direct(sut.buffers[0].get(), 0, 4),
                                 &zero, 4)
                    .code() == StatusCode::kFailedPrecondition);
    }
  }
  void show(std::ostream& os) const override {
    os << (resubmit ? "QueueExecute(cb) again (one-shot: FAILED_PRECONDITION)"
                    : "cb->ExecutionBarrier()/FillBuffer after End "
                      "(FAILED_PRECONDITION)");
  }
};

}  // namespace
}  // namespace hal::prop

int main() {
  using namespace hal;
  using namespace hal::prop;
  return RunProperty("command-buffer semantics", [](uint32_t sim_seed) {
    std::string uri = CaseDeviceUri(sim_seed);
    Sut sut;
    sut.device = CreateCaseDevice(uri);
    sut.timeline = sut.device->CreateSemaphore(0).value();
    Model initial;
    // The simulator checks hazards unless its URI says check=0.
    StatusOr<DeviceUri> parsed = DeviceUri::Parse(uri);
    initial.checking_sim = parsed.ok() && parsed->driver == "sim" &&
                           parsed->GetBool("check", true).value();
    int buffer_count = *rc::gen::inRange(1, 5);
    for (int b = 0; b < buffer_count; ++b) {
      DeviceSize size = 4 * *rc::gen::inRange<DeviceSize>(4, 65);
      std::vector<uint8_t> bytes = *rc::gen::container<std::vector<uint8_t>>(
          size, rc::gen::arbitrary<uint8_t>());
      BufferParams params;
      params.type = MemoryType::kHostLocal | MemoryType::kHostCoherent |
                    MemoryType::kDeviceVisible;
      params.usage = BufferUsage::kTransfer | BufferUsage::kMapping;
      StatusOr<Ref<Buffer>> buffer =
          sut.device->allocator()->AllocateBuffer(params, size);
      RC_ASSERT(buffer.ok());
      RC_ASSERT(buffer.value()->MapWrite(0, bytes.data(), size).ok());
      RC_LOG() << "b" << b << ": " << size << " bytes" << std::endl;
      sut.buffers.push_back(buffer.value());
      initial.contents.push_back(bytes);
    }
    // The commands valid in each state, in the proportions of the program
    // mix (five recordings to one barrier and one submission).
    auto next = [](const Model& m) {
      if (!m.exists) return OneOfCommands<Model, Sut, Begin>(m);
      if (!m.ended) {
        return OneOfCommands<Model, Sut, Record, Record, Record, Record, Record,
                             Barrier, Submit>(m);
      }
      if (m.submitted < static_cast<int>(m.tables.size())) {
        return OneOfCommands<Model, Sut, Begin, Submit, Misuse>(m);
      }
      return OneOfCommands<Model, Sut, Begin, Misuse>(m);
    };
    const auto commands = *rc::state::gen::commands(initial, next);
    rc::state::runAll(commands, initial, sut);
    RC_ASSERT(sut.device->WaitIdle(Timeout::After(kSettleTimeout)).ok());
  });
}
