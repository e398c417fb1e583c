// hal-check's own tests (HalCheckSelfTest.*): a test that fails, one that
// crashes, one that hangs, and so on, so that CTest can check what hal-check
// reports for each (hal/tools/CMakeLists.txt, unit.tools.hal_check.*).
//
// They run only with HAL_CHECK_SELF_TEST set in the environment: hal-check
// filters them out otherwise, and each also skips itself.
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

#define SELF_TEST_ONLY()                                           \
  do {                                                             \
    if (!std::getenv("HAL_CHECK_SELF_TEST")) {                     \
      GTEST_SKIP() << "hal-check self-test (HAL_CHECK_SELF_TEST)"; \
    }                                                              \
  } while (0)

[[noreturn]] void Crash() {
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

[[noreturn]] void Hang() {
  for (;;) pause();
}

TEST(HalCheckSelfTest, Passes) { SELF_TEST_ONLY(); }

TEST(HalCheckSelfTest, Fails) {
  SELF_TEST_ONLY();
  ADD_FAILURE() << "this self-test fails on purpose";
}

TEST(HalCheckSelfTest, Skips) {
  SELF_TEST_ONLY();
  GTEST_SKIP() << "this self-test skips on purpose";
}

TEST(HalCheckSelfTest, Crashes) {
  SELF_TEST_ONLY();
  Crash();
}

TEST(HalCheckSelfTest, Hangs) {
  SELF_TEST_ONLY();
  Hang();
}

// By the run seed: 0 passes, 1 fails, 2 crashes, 3 hangs (mod 4), so that one
// --seeds sweep shows each outcome.
TEST(HalCheckSelfTest, BySeed) {
  SELF_TEST_ONLY();
  switch (GetContext().seed % 4) {
    case 0:
      break;
    case 1:
      ADD_FAILURE() << "seed " << GetContext().seed << " fails on purpose";
      break;
    case 2:
      Crash();
    case 3:
      Hang();
  }
}

// By the swarm's fault plan (the device URI's fault parameters): a plan with
// op_fail_ppm reports what an oracle would, one with slow_ppm what a wait
// that never ended would, and any other plan (or none) fails the test as a
// fault may (tolerated by --swarm). So a swarm sweep shows ORACLE and
// LIVENESS seeds, and --minimize finds the one plan item each needs.
TEST(HalCheckSelfTest, ByFaultPlan) {
  SELF_TEST_ONLY();
  const std::string& uri = GetContext().uri;
  if (uri.find("op_fail_ppm") != std::string::npos) {
    ADD_FAILURE() << "an oracle reported 1 new self-test finding during this "
                     "test (on purpose)";
  } else if (uri.find("slow_ppm") != std::string::npos) {
    ADD_FAILURE() << "DEADLINE_EXCEEDED: semaphore wait timed out: payload 0 "
                     "< 1 (on purpose)";
  } else if (uri.find("_ppm") != std::string::npos ||
             uri.find("lose_device_at") != std::string::npos) {
    ADD_FAILURE() << "an injected fault failed this self-test (tolerated)";
  }
}

// A helper that cannot read must fail the test, not hand back fewer bytes
// than asked for: the caller indexes them (undefined behaviour, and under
// UBSan the end of the whole run).
class HalCheckSelfTestDevice : public CtsTest {};

TEST_F(HalCheckSelfTestDevice, ReadBackOutOfRangeFailsCleanly) {
  SELF_TEST_ONLY();
  Ref<Buffer> buffer = NewDeviceBuffer(16);
  ASSERT_TRUE(buffer);
  Bytes got = ReadBack(buffer.get(), 8, 4096);
  volatile uint8_t first = got[0];
  volatile uint8_t last = got[4095];
  (void)first;
  (void)last;
}

}  // namespace
}  // namespace hal::cts
