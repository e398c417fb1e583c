// The simulated ROCr's barrier packets, written by hand into AQL queues
// (no driver): BARRIER_OR and AMD BARRIER_VALUE with masks and every
// condition; packets without the barrier bit overlapping; and signed signal
// conditions in host waits and handlers.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"
#include "drivers/amdgpu/tests/amdgpu_test_util.h"

namespace hal::amdgpu {
namespace {

constexpr char kSimLibrary[] = HAL_AMDGPU_SIM_LIBRARY;

uint16_t Header(unsigned type) {
  return static_cast<uint16_t>(
      (type << HSA_PACKET_HEADER_TYPE) | (1u << HSA_PACKET_HEADER_BARRIER) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

// Two queues on the first GPU agent: packets under test go on `queue_`;
// a probe on `probe_` shows whether the one under test was ready.
class AmdgpuSimPackets : public ::testing::Test {
 protected:
  void SetUp() override {
    auto syms = LoadHsaSymbols(kSimLibrary);
    ASSERT_TRUE(syms.ok()) << syms.status().ToString();
    syms_ = *syms;
    s_ = syms_.get();
    const hsa_agent_t gpu = FirstAgent(s_, HSA_DEVICE_TYPE_GPU);
    ASSERT_NE(gpu.handle, 0u);
    for (hsa_queue_t** q : {&queue_, &probe_}) {
      ASSERT_EQ(s_->hsa_queue_create(
                    gpu, 64, HSA_QUEUE_TYPE_MULTI,
                    [](hsa_status_t status, hsa_queue_t*, void*) {
                      ADD_FAILURE() << "queue error 0x" << std::hex << status;
                    },
                    nullptr, UINT32_MAX, UINT32_MAX, q),
                HSA_STATUS_SUCCESS);
    }
    for (hsa_signal_t* sig : {&a_, &b_, &done_, &probe_done_}) {
      ASSERT_EQ(s_->hsa_signal_create(1, 0, nullptr, sig), HSA_STATUS_SUCCESS);
    }
  }
  void TearDown() override {
    if (!s_) return;
    for (hsa_queue_t* q : {queue_, probe_}) {
      if (q) {
        EXPECT_EQ(s_->hsa_queue_destroy(q), HSA_STATUS_SUCCESS);
      }
    }
    for (hsa_signal_t sig : {a_, b_, done_, probe_done_}) {
      if (sig.handle) s_->hsa_signal_destroy(sig);
    }
  }

  // Writes `packet` (64 bytes, its header in the first two) the AQL way:
  // body, header, doorbell.
  void Submit(hsa_queue_t* q, const void* packet, uint16_t header) {
    const uint64_t index = s_->hsa_queue_add_write_index_screlease(q, 1);
    auto* slot =
        static_cast<uint8_t*>(q->base_address) + (index % q->size) * 64;
    std::memcpy(slot + 2, static_cast<const uint8_t*>(packet) + 2, 62);
    __atomic_store_n(reinterpret_cast<uint16_t*>(slot), header,
                     __ATOMIC_RELEASE);
    s_->hsa_signal_store_screlease(q->doorbell_signal,
                                   static_cast<hsa_signal_value_t>(index));
  }

  void WaitZero(hsa_signal_t sig) {
    while (s_->hsa_signal_load_scacquire(sig) != 0) {
      s_->hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                    HSA_WAIT_STATE_BLOCKED);
    }
  }

  // Submits `packet` (its completion signal is done_) on queue_, then an
  // empty barrier on probe_, and waits for the probe. The engine starts
  // every ready head together, zero-time ops in queue creation order, so a
  // ready packet under test has completed by then: returns whether it did.
  bool RetiresAtOnce(const void* packet, uint16_t header) {
    s_->hsa_signal_store_screlease(done_, 1);
    s_->hsa_signal_store_screlease(probe_done_, 1);
    Submit(queue_, packet, header);
    hsa_barrier_and_packet_t probe = {};
    probe.completion_signal = probe_done_;
    Submit(probe_, &probe, Header(HSA_PACKET_TYPE_BARRIER_AND));
    WaitZero(probe_done_);
    return s_->hsa_signal_load_scacquire(done_) == 0;
  }

  std::shared_ptr<const HsaSymbols> syms_;
  const HsaSymbols* s_ = nullptr;
  hsa_queue_t* queue_ = nullptr;
  hsa_queue_t* probe_ = nullptr;
  hsa_signal_t a_ = {}, b_ = {}, done_ = {}, probe_done_ = {};
};

// AQL's freedom, taken: a packet without the barrier bit starts once the
// packet before it started (so it may finish first, and the race checker
// sees the two together); with the bit it waits for every packet before
// it. A driver that drops the bit where it needs order shows as a race or
// as work finishing early.
TEST_F(AmdgpuSimPackets, PacketsWithoutTheBarrierBitOverlapThePacketBefore) {
  for (bool barrier_bit : {true, false}) {
    s_->hsa_signal_store_screlease(a_, 1);
    s_->hsa_signal_store_screlease(b_, 1);
    hsa_barrier_and_packet_t hold = {};
    hold.dep_signal[0] = a_;
    hold.completion_signal = b_;
    Submit(queue_, &hold, Header(HSA_PACKET_TYPE_BARRIER_AND));
    hsa_barrier_and_packet_t next = {};
    next.completion_signal = done_;
    uint16_t header = Header(HSA_PACKET_TYPE_BARRIER_AND);
    if (!barrier_bit) header &= ~(1u << HSA_PACKET_HEADER_BARRIER);
    EXPECT_EQ(RetiresAtOnce(&next, header), !barrier_bit)
        << (barrier_bit ? "a packet with the barrier bit ran beside the "
                          "blocked packet before it"
                        : "a packet without the barrier bit waited for the "
                          "packet before it");
    EXPECT_EQ(s_->hsa_signal_load_scacquire(b_), 1) << "the hold ran early";
    s_->hsa_signal_store_screlease(a_, 0);
    WaitZero(b_);
    WaitZero(done_);
  }
  // The read index passes completed packets only: the overtaking packet's
  // slot is free once the one before it completed too.
  EXPECT_EQ(s_->hsa_queue_load_read_index_scacquire(queue_),
            s_->hsa_queue_load_write_index_relaxed(queue_));
}

// BARRIER_OR: satisfied once any dependency is 0; null handles are ignored
// (they do not count as satisfied); with only null handles it does not
// wait.
TEST_F(AmdgpuSimPackets, BarrierOrWaitsForAnyDependency) {
  hsa_barrier_or_packet_t p = {};
  p.dep_signal[1] = a_;
  p.dep_signal[3] = b_;
  p.completion_signal = done_;
  const uint16_t header = Header(HSA_PACKET_TYPE_BARRIER_OR);
  EXPECT_FALSE(RetiresAtOnce(&p, header)) << "a = b = 1";
  s_->hsa_signal_store_screlease(b_, 0);
  WaitZero(done_);  // b = 0 alone is enough
  EXPECT_EQ(s_->hsa_signal_load_scacquire(a_), 1);

  s_->hsa_signal_store_screlease(b_, 1);
  EXPECT_FALSE(RetiresAtOnce(&p, header)) << "both back at 1";
  s_->hsa_signal_store_screlease(a_, 0);
  WaitZero(done_);  // a = 0 alone too

  hsa_barrier_or_packet_t only_null = {};
  only_null.completion_signal = done_;
  EXPECT_TRUE(RetiresAtOnce(&only_null, header));

  // A null handle is not a satisfied dependency.
  s_->hsa_signal_store_screlease(a_, 1);
  hsa_barrier_or_packet_t null_and_a = {};
  null_and_a.dep_signal[0] = a_;
  null_and_a.completion_signal = done_;
  EXPECT_FALSE(RetiresAtOnce(&null_and_a, header));
  s_->hsa_signal_store_screlease(a_, 0);
  WaitZero(done_);
}

// AMD BARRIER_VALUE: (value & mask) cond compare, for every condition, with
// a mask other than all ones, and signed (HSA signal values are int64).
TEST_F(AmdgpuSimPackets, BarrierValueMasksAndConditions) {
  struct Case {
    const char* what;
    hsa_signal_condition_t cond;
    int64_t mask, compare;
    bool holds;        // with the signal at kValue
    int64_t released;  // a signal value at which a held packet proceeds
  };
  constexpr int64_t kValue = 0x12345678;
  const Case cases[] = {
      {"EQ held", HSA_SIGNAL_CONDITION_EQ, 0xff00, 0x5600, true, 0},
      {"EQ waits", HSA_SIGNAL_CONDITION_EQ, 0xff00, 0x5700, false, 0x5700},
      {"NE held", HSA_SIGNAL_CONDITION_NE, 0xff, 0x79, true, 0},
      {"NE waits", HSA_SIGNAL_CONDITION_NE, 0xff, 0x78, false, 0x79},
      {"LT held", HSA_SIGNAL_CONDITION_LT, 0xf0, 0x71, true, 0},
      {"LT waits", HSA_SIGNAL_CONDITION_LT, 0xf0, 0x70, false, 0x60},
      {"GTE held", HSA_SIGNAL_CONDITION_GTE, 0xf000, 0x5000, true, 0},
      {"GTE waits", HSA_SIGNAL_CONDITION_GTE, 0xf000, 0x6000, false, 0x6000},
      // All ones: the whole value; and the upper half of it alone.
      {"EQ all ones", HSA_SIGNAL_CONDITION_EQ, -1, kValue, true, 0},
      {"EQ upper bits", HSA_SIGNAL_CONDITION_EQ, 0x7fffffff00000000, 0, true,
       0},
  };
  const uint16_t header = Header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
  // A BARRIER_VALUE packet on a_ that decrements done_.
  auto packet = [&](hsa_signal_condition_t cond, int64_t mask,
                    int64_t compare) {
    hsa_amd_barrier_value_packet_t p = {};
    p.header.AmdFormat = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;
    p.signal = a_;
    p.value = compare;
    p.mask = mask;
    p.cond = cond;
    p.completion_signal = done_;
    return p;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    s_->hsa_signal_store_screlease(a_, kValue);
    hsa_amd_barrier_value_packet_t p = packet(c.cond, c.mask, c.compare);
    EXPECT_EQ(RetiresAtOnce(&p, header), c.holds);
    if (!c.holds) {
      s_->hsa_signal_store_screlease(a_, c.released);
      WaitZero(done_);
    }
  }
  // Signed: -2 < 0 and -2 >= -3 (unsigned, both would be wrong); masked to
  // its low byte, -2 is 0xfe.
  struct Signed {
    hsa_signal_condition_t cond;
    int64_t mask, compare;
  };
  const Signed signed_cases[] = {
      {HSA_SIGNAL_CONDITION_LT, -1, 0},
      {HSA_SIGNAL_CONDITION_GTE, -1, -3},
      {HSA_SIGNAL_CONDITION_EQ, 0xff, 0xfe},
  };
  for (const Signed& c : signed_cases) {
    s_->hsa_signal_store_screlease(a_, -2);
    hsa_amd_barrier_value_packet_t p = packet(c.cond, c.mask, c.compare);
    EXPECT_TRUE(RetiresAtOnce(&p, header)) << "condition " << c.cond;
  }
}

// Host waits and async handlers compare signed values too: -1 < 0.
TEST_F(AmdgpuSimPackets, HostWaitsAndHandlersCompareSigned) {
  s_->hsa_signal_store_screlease(a_, -1);
  // These hold at once; compared unsigned they would block for ever.
  EXPECT_EQ(s_->hsa_signal_wait_scacquire(a_, HSA_SIGNAL_CONDITION_LT, 0,
                                          UINT64_MAX, HSA_WAIT_STATE_BLOCKED),
            -1);
  EXPECT_EQ(s_->hsa_signal_wait_scacquire(a_, HSA_SIGNAL_CONDITION_GTE, -3,
                                          UINT64_MAX, HSA_WAIT_STATE_BLOCKED),
            -1);
  static std::atomic<int> ran;
  ran = 0;
  s_->hsa_signal_store_screlease(b_, 5);
  ASSERT_EQ(s_->hsa_amd_signal_async_handler(
                b_, HSA_SIGNAL_CONDITION_LT, 0,
                [](hsa_signal_value_t, void*) {
                  ran = 1;
                  return false;
                },
                nullptr),
            HSA_STATUS_SUCCESS);
  s_->hsa_signal_store_screlease(b_, -7);
  for (int i = 0; i < 10000 && ran.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ran.load(), 1) << "the handler for b < 0 did not run at b = -7";
}

// The vendor-object reuse rule: destroying a signal that a queued packet
// still waits on (a dependency) or will signal (its completion) is a
// reported rule violation, and the signal stays usable by those packets.
TEST_F(AmdgpuSimPackets, DestroyingASignalAQueuedPacketUsesIsAViolation) {
  void* lib = dlopen(kSimLibrary, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto violations =
      reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_rule_violations"));
  ASSERT_NE(violations, nullptr);
  hsa_signal_t dep = {}, completion = {};
  ASSERT_EQ(s_->hsa_signal_create(1, 0, nullptr, &dep), HSA_STATUS_SUCCESS);
  ASSERT_EQ(s_->hsa_signal_create(1, 0, nullptr, &completion),
            HSA_STATUS_SUCCESS);
  hsa_barrier_and_packet_t p = {};
  p.dep_signal[2] = dep;
  p.completion_signal = completion;
  const uint64_t before = violations();
  Submit(queue_, &p, Header(HSA_PACKET_TYPE_BARRIER_AND));
  EXPECT_EQ(s_->hsa_signal_destroy(dep), HSA_STATUS_SUCCESS);
  EXPECT_EQ(violations(), before + 1) << "a dependency of a queued packet";
  EXPECT_EQ(s_->hsa_signal_destroy(completion), HSA_STATUS_SUCCESS);
  EXPECT_EQ(violations(), before + 2) << "the completion of a queued packet";
  // Both stayed valid for the packet: it still runs when released.
  s_->hsa_signal_store_screlease(dep, 0);
  WaitZero(completion);
  // Unused now: destroyed without a report.
  EXPECT_EQ(s_->hsa_signal_destroy(dep), HSA_STATUS_SUCCESS);
  EXPECT_EQ(s_->hsa_signal_destroy(completion), HSA_STATUS_SUCCESS);
  EXPECT_EQ(violations(), before + 2);
  dlclose(lib);
}

}  // namespace
}  // namespace hal::amdgpu
