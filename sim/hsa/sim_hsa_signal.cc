// The HSA skin's signals: each is a view of an engine signal, so a packet's
// completion signal and a barrier's dependency are the engine's own signal
// updates and waits.
//
// Every operation is exported in every memory order; the engine's lock
// orders them all, which is at least as strong as any order asked for. The
// read-modify-write operations other than add/subtract (and, or, xor,
// exchange, cas) are a load and a store under this library's lock: atomic
// against each other and host stores, not against a packet's completion
// landing between the two (the driver uses none of them on such signals).
//
// Waits: hsa.h allows hsa_signal_wait_* to return before the condition
// holds. The simulator does so on purpose: a seeded draw (1 in 8 blocking
// waits, from HALSIM_SEED) returns the current value at once, so a caller
// that does not re-check is caught. Conditions compare signed 64-bit
// values (hsa_signal_value_t), as do async handlers' and barrier packets'.
//
// Async handlers (hsa_amd_signal_async_handler) run on the engine thread as
// engine host functions of one engine queue per signal: in registration
// order per signal, each once the condition holds. (ROCr runs them on one
// thread in any order; the driver registers monotone conditions per signal,
// for which both agree.)
#include <cinttypes>
#include <cstring>

#include "sim/core/sim_random.h"
#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

namespace {

std::mutex& RmwMutex() {
  static auto* m = new std::mutex();
  return *m;
}

std::atomic<uint64_t>& WaitCounter() {
  static auto* c = new std::atomic<uint64_t>(0);
  return *c;
}

std::atomic<uint64_t>& SpuriousCount() {
  static auto* c = new std::atomic<uint64_t>(0);
  return *c;
}

bool SpuriousWakeup() {
  // Keyed by the seed and the wait's number: a seed's first spurious return
  // is at the same wait in every run of a single-threaded program.
  SimRandom r(E().seed() ^ 0x5A17C0DEull ^
              (WaitCounter().fetch_add(1) * 0x9E3779B97F4A7C15ull));
  if (r.Below(8) != 0) return false;
  SpuriousCount().fetch_add(1);
  return true;
}

}  // namespace

bool ToEngineCond(uint32_t condition, engine::Cond* out) {
  switch (condition) {
    case HSA_SIGNAL_CONDITION_EQ:
      *out = engine::Cond::kEq;
      return true;
    case HSA_SIGNAL_CONDITION_NE:
      *out = engine::Cond::kNe;
      return true;
    case HSA_SIGNAL_CONDITION_LT:
      *out = engine::Cond::kLt;
      return true;
    case HSA_SIGNAL_CONDITION_GTE:
      *out = engine::Cond::kGe;
      return true;
  }
  return false;
}

namespace {

hsa_signal_value_t Load(hsa_signal_t signal) {
  Signal* s = SignalOf(signal);
  if (!s) return 0;
  return static_cast<hsa_signal_value_t>(E().SignalValue(s->signal));
}

void Store(hsa_signal_t signal, hsa_signal_value_t value) {
  Signal* s = SignalOf(signal);
  if (!s) return;
  E().UpdateSignal(s->signal, engine::SignalOp::kSet,
                   static_cast<uint64_t>(value));
  if (s->doorbell_of) RingDoorbell(s->doorbell_of, value);
}

void Add(hsa_signal_t signal, hsa_signal_value_t value) {
  Signal* s = SignalOf(signal);
  if (!s) return;
  E().UpdateSignal(s->signal, engine::SignalOp::kAdd,
                   static_cast<uint64_t>(value));
}

void Sub(hsa_signal_t signal, hsa_signal_value_t value) {
  Signal* s = SignalOf(signal);
  if (!s) return;
  E().UpdateSignal(s->signal, engine::SignalOp::kSub,
                   static_cast<uint64_t>(value));
}

template <typename F>
hsa_signal_value_t Rmw(hsa_signal_t signal, F f) {
  Signal* s = SignalOf(signal);
  if (!s) return 0;
  std::lock_guard<std::mutex> lock(RmwMutex());
  const auto old = static_cast<hsa_signal_value_t>(E().SignalValue(s->signal));
  E().UpdateSignal(s->signal, engine::SignalOp::kSet,
                   static_cast<uint64_t>(f(old)));
  return old;
}

hsa_signal_value_t Wait(hsa_signal_t signal, hsa_signal_condition_t condition,
                        hsa_signal_value_t compare, uint64_t timeout_hint) {
  Signal* s = SignalOf(signal);
  engine::Wait wait;
  if (!s || !ToEngineCond(condition, &wait.cond)) return 0;
  wait.signal = s->signal;
  wait.value = static_cast<uint64_t>(compare);
  wait.is_signed = true;  // hsa_signal_value_t is int64_t
  const auto now = static_cast<hsa_signal_value_t>(E().SignalValue(s->signal));
  if (engine::Holds(wait, static_cast<uint64_t>(now))) return now;
  // A timed wait (the hint is a bound HSA may honour or not) and a drawn
  // spurious wake-up both return the current value without waiting.
  if (timeout_hint != UINT64_MAX || SpuriousWakeup()) return now;
  if (engine::Engine::InHostCallback()) return now;  // never block the GPU
  E().WaitSignal(wait);
  return static_cast<hsa_signal_value_t>(E().SignalValue(s->signal));
}

}  // namespace

Signal* SignalOf(hsa_signal_t signal) {
  return reinterpret_cast<Signal*>(signal.handle);
}

hsa_signal_t MakeSignal(uint64_t initial) {
  auto* s = new Signal();
  s->signal = E().CreateSignal(initial);
  return {reinterpret_cast<uint64_t>(s)};
}

}  // namespace hal::sim::hsa

using namespace hal::sim::hsa;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

// The blocking waits that returned early on purpose (for tests).
HALSIM_EXPORT uint64_t halsim_hsa_spurious_wakeups(void) {
  return SpuriousCount().load();
}

HALSIM_EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value,
                                             uint32_t num_consumers,
                                             const hsa_agent_t* consumers,
                                             hsa_signal_t* signal) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!signal || (num_consumers && !consumers)) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  for (uint32_t i = 0; i < num_consumers; ++i) {
    if (!AgentOf(consumers[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  }
  *signal = MakeSignal(static_cast<uint64_t>(initial_value));
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_amd_signal_create(
    hsa_signal_value_t initial_value, uint32_t num_consumers,
    const hsa_agent_t* consumers, uint64_t attributes, hsa_signal_t* signal) {
  (void)attributes;
  return hsa_signal_create(initial_value, num_consumers, consumers, signal);
}

HALSIM_EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Signal* s = SignalOf(signal);
  if (!s) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  if (s->doorbell_of) return HSA_STATUS_ERROR_INVALID_SIGNAL;  // the queue's
  // Vendor-object reuse: a packet still queued signals or waits on it (the
  // driver released it before the work that uses it completed). Undefined
  // in HSA; here reported, then the signal stays valid until the packets
  // that use it are done (it leaks).
  const std::string user = QueuedPacketUsing(signal);
  if (!user.empty()) {
    L().Violation("hsa_signal_destroy",
                  "signal 0x%" PRIx64
                  " destroyed while %s still uses it "
                  "(released before the work that uses it completed)",
                  signal.handle, user.c_str());
    return HSA_STATUS_SUCCESS;
  }
  // Handlers still pending run first (destroying a signal a handler waits
  // on is undefined in HSA; here it waits for it).
  if (s->handlers) E().DestroyQueue(s->handlers);
  delete s;
  return HSA_STATUS_SUCCESS;
}

#define HALSIM_LOAD(suffix)                                  \
  HALSIM_EXPORT hsa_signal_value_t hsa_signal_load_##suffix( \
      hsa_signal_t signal) {                                 \
    HALSIM_ENTER();                                          \
    return Load(signal);                                     \
  }
HALSIM_LOAD(scacquire)
HALSIM_LOAD(relaxed)
HALSIM_LOAD(acquire)

#define HALSIM_VOID_OP(op, fn, suffix)                                  \
  HALSIM_EXPORT void hsa_signal_##op##_##suffix(hsa_signal_t signal,    \
                                                hsa_signal_value_t v) { \
    HALSIM_ENTER();                                                     \
    fn(signal, v);                                                      \
  }
HALSIM_VOID_OP(store, Store, relaxed)
HALSIM_VOID_OP(store, Store, screlease)
HALSIM_VOID_OP(store, Store, release)
HALSIM_VOID_OP(silent_store, Store, relaxed)
HALSIM_VOID_OP(silent_store, Store, screlease)
#define HALSIM_ALL_ORDERS(X, op, fn) \
  X(op, fn, scacq_screl)             \
  X(op, fn, scacquire)               \
  X(op, fn, relaxed)                 \
  X(op, fn, screlease)
HALSIM_ALL_ORDERS(HALSIM_VOID_OP, add, Add)
HALSIM_ALL_ORDERS(HALSIM_VOID_OP, subtract, Sub)

#define HALSIM_BIT_OP(op, expr, suffix)                                 \
  HALSIM_EXPORT void hsa_signal_##op##_##suffix(hsa_signal_t signal,    \
                                                hsa_signal_value_t v) { \
    HALSIM_ENTER();                                                     \
    Rmw(signal, [v](hsa_signal_value_t old) { return expr; });          \
  }
HALSIM_ALL_ORDERS(HALSIM_BIT_OP, and, old& v)
HALSIM_ALL_ORDERS(HALSIM_BIT_OP, or, old | v)
HALSIM_ALL_ORDERS(HALSIM_BIT_OP, xor, old ^ v)

#define HALSIM_EXCHANGE(op, unused, suffix)                      \
  HALSIM_EXPORT hsa_signal_value_t hsa_signal_exchange_##suffix( \
      hsa_signal_t signal, hsa_signal_value_t v) {               \
    HALSIM_ENTER();                                              \
    return Rmw(signal, [v](hsa_signal_value_t) { return v; });   \
  }
HALSIM_ALL_ORDERS(HALSIM_EXCHANGE, exchange, unused)

#define HALSIM_CAS(op, unused, suffix)                         \
  HALSIM_EXPORT hsa_signal_value_t hsa_signal_cas_##suffix(    \
      hsa_signal_t signal, hsa_signal_value_t expected,        \
      hsa_signal_value_t v) {                                  \
    HALSIM_ENTER();                                            \
    return Rmw(signal, [expected, v](hsa_signal_value_t old) { \
      return old == expected ? v : old;                        \
    });                                                        \
  }
HALSIM_ALL_ORDERS(HALSIM_CAS, cas, unused)

#define HALSIM_WAIT(suffix)                                                  \
  HALSIM_EXPORT hsa_signal_value_t hsa_signal_wait_##suffix(                 \
      hsa_signal_t signal, hsa_signal_condition_t condition,                 \
      hsa_signal_value_t compare_value, uint64_t timeout_hint,               \
      hsa_wait_state_t wait_state_hint) {                                    \
    (void)wait_state_hint;                                                   \
    /* No HostCall guard: a blocked host is quiet (the engine counts it). */ \
    return Wait(signal, condition, compare_value, timeout_hint);             \
  }
HALSIM_WAIT(scacquire)
HALSIM_WAIT(relaxed)
HALSIM_WAIT(acquire)

HALSIM_EXPORT hsa_status_t hsa_amd_signal_async_handler(
    hsa_signal_t signal, hsa_signal_condition_t cond, hsa_signal_value_t value,
    hsa_amd_signal_handler handler, void* arg) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  Signal* s = SignalOf(signal);
  engine::Cond c;
  if (!s) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  if (!handler || !ToEngineCond(cond, &c))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  engine::Queue* queue;
  {
    std::lock_guard<std::mutex> lock(s->handlers_mutex);
    if (!s->handlers) s->handlers = E().CreateQueue();
    queue = s->handlers;
  }
  // A zero-time op that waits for the condition, then the handler as an
  // engine host function (held while host functions are paused, counted in
  // halsim_host_functions_*). One that asks to be called again
  // re-registers itself.
  struct Registration {
    static void Add(Signal* s, engine::Queue* queue, engine::Cond c,
                    hsa_signal_value_t value, hsa_amd_signal_handler handler,
                    void* arg) {
      engine::Op op;
      op.name = "hsa_async_handler_wait";
      engine::Wait wait;
      wait.signal = s->signal;
      wait.cond = c;
      wait.value = static_cast<uint64_t>(value);
      wait.is_signed = true;
      op.waits.push_back(std::move(wait));
      op.zero_time = true;
      E().Enqueue(queue, std::move(op));
      E().EnqueueHostFunction(queue, [=] {
        const auto now =
            static_cast<hsa_signal_value_t>(E().SignalValue(s->signal));
        if (handler(now, arg)) Add(s, queue, c, value, handler, arg);
      });
    }
  };
  Registration::Add(s, queue, c, value, handler, arg);
  return HSA_STATUS_SUCCESS;
}
