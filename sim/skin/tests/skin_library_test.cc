// Unit tests of the edge every simulated library shares
// (sim/skin/skin_library.h): kinds and live counts, the handle table, the
// one report format for broken rules and leaks, the configuration
// variables, and the control ABI over a library (skin_control.h).
#include "sim/skin/skin_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "sim/skin/skin_control.h"

namespace hal::sim::skin {
namespace {

LibraryOptions Options(const char* prefix) {
  LibraryOptions options{.log_prefix = prefix,
                         .api = "Test",
                         .env_alias = "HALSIM_EDGE_TEST_",
                         .devices_env = "HALSIM_EDGE_TEST_DEVICES"};
  options.kinds = {"widget", "gadget"};
  return options;
}

Library& Lib() {
  static Library* lib = new Library(Options("edge_test"));
  return *lib;
}

struct Widget {
  static constexpr int kKind = 0;
  int value = 0;
};

TEST(SkinLibrary, KindsCountLiveObjectsAndNewNamesGetNewIds) {
  Library& lib = *new Library(Options("edge_kinds"));
  EXPECT_EQ(lib.KindId("widget"), 0);
  EXPECT_EQ(lib.KindId("gadget"), 1);
  const int sprocket = lib.KindId("sprocket");
  EXPECT_EQ(sprocket, 2);
  EXPECT_EQ(lib.KindId("sprocket"), sprocket);
  EXPECT_EQ(lib.live_objects(), 0u);
  lib.CountCreated(sprocket);
  lib.CountCreated(1);
  EXPECT_EQ(lib.live_objects(), 2u);
  testing::internal::CaptureStderr();
  lib.ReportLeaks();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "edge_kinds: 2 Test handles leaked at exit (1 gadget, 1 "
            "sprocket); seed=0\n");
  lib.CountDestroyed(sprocket);
  lib.CountDestroyed(1);
  testing::internal::CaptureStderr();
  lib.ReportLeaks();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(SkinLibrary, HandleTableRefusesDestroyedForeignAndMistypedHandles) {
  Library& lib = Lib();
  const uint64_t live = lib.live_objects();
  Widget* w = lib.New<Widget>();
  EXPECT_EQ(lib.live_objects(), live + 1);
  EXPECT_EQ(lib.Find<Widget>(w), w);
  EXPECT_FALSE(lib.Live(1, w));  // a widget is not a gadget
  int foreign = 0;
  EXPECT_EQ(lib.Find<Widget>(&foreign), nullptr);
  EXPECT_EQ(lib.Find<Widget>(nullptr), nullptr);
  EXPECT_TRUE(lib.Delete<Widget>(w));
  EXPECT_FALSE(lib.Delete<Widget>(w));
  EXPECT_EQ(lib.live_objects(), live);
}

TEST(SkinLibrary, ViolationsAreCountedAndNameTheSeed) {
  Library& lib = Lib();
  ASSERT_EQ(control::ResetSchedule(lib, 42), 0);
  const uint64_t before = lib.violations();
  testing::internal::CaptureStderr();
  lib.Violation("doThing", "a %s twice", "widget");
  lib.Violation(nullptr, "no call");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "edge_test: Test rule violated: doThing: a widget twice; seed=42 "
            "(rerun with HALSIM_SEED=42)\n"
            "edge_test: Test rule violated: no call; seed=42 (rerun with "
            "HALSIM_SEED=42)\n");
  EXPECT_EQ(lib.violations(), before + 2);
}

TEST(SkinLibrary, HostCallbackViolationIsCountedByTheEngine) {
  Library& lib = Lib();
  const uint64_t before = lib.engine().counters().host_callback_violations;
  testing::internal::CaptureStderr();
  EXPECT_EQ(lib.HostCallbackViolation("doThing"), Code::kNotPermitted);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "edge_test: doThing called from a host callback"),
            std::string::npos);
  EXPECT_EQ(lib.engine().counters().host_callback_violations, before + 1);
}

TEST(SkinLibrary, PlainVariableWinsOverTheVendorAlias) {
  Library& lib = Lib();
  ::setenv("HALSIM_EDGE_TEST_PROBE", "alias", 1);
  std::string used;
  ASSERT_NE(lib.GetEnv("PROBE", &used), nullptr);
  EXPECT_STREQ(lib.GetEnv("PROBE"), "alias");
  EXPECT_EQ(used, "HALSIM_EDGE_TEST_PROBE");
  ::setenv("HALSIM_PROBE", "plain", 1);
  EXPECT_STREQ(lib.GetEnv("PROBE", &used), "plain");
  EXPECT_EQ(used, "HALSIM_PROBE");
  ::unsetenv("HALSIM_PROBE");
  ::unsetenv("HALSIM_EDGE_TEST_PROBE");
  EXPECT_EQ(lib.GetEnv("PROBE"), nullptr);
}

TEST(SkinLibrary, DeviceCountVariable) {
  Library& lib = Lib();
  ::unsetenv("HALSIM_EDGE_TEST_DEVICES");
  EXPECT_EQ(lib.ConfiguredDeviceCount(1, 1, 8), 1);
  ::setenv("HALSIM_EDGE_TEST_DEVICES", "3", 1);
  EXPECT_EQ(lib.ConfiguredDeviceCount(1, 1, 8), 3);
  testing::internal::CaptureStderr();
  ::setenv("HALSIM_EDGE_TEST_DEVICES", "9", 1);
  EXPECT_EQ(lib.ConfiguredDeviceCount(1, 1, 8), -1);
  ::setenv("HALSIM_EDGE_TEST_DEVICES", "2x", 1);
  EXPECT_EQ(lib.ConfiguredDeviceCount(1, 1, 8), -1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "HALSIM_EDGE_TEST_DEVICES=9: want 1..8"),
            std::string::npos);
  ::unsetenv("HALSIM_EDGE_TEST_DEVICES");
}

TEST(SkinLibrary, MalformedFaultPlanIsRefused) {
  Library& lib = *new Library(Options("edge_faults"));
  ::setenv("HALSIM_EDGE_TEST_FAULTS", "no_such_fault=1", 1);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(lib.ApplyEnvironment());
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "edge_faults: malformed HALSIM_EDGE_TEST_FAULTS"),
            std::string::npos);
  ::unsetenv("HALSIM_EDGE_TEST_FAULTS");
  EXPECT_TRUE(lib.ApplyEnvironment());
  testing::internal::CaptureStderr();
  EXPECT_EQ(control::SetFaults(lib, "no_such_fault=1"), -1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("refused"),
            std::string::npos);
  EXPECT_EQ(control::SetFaults(lib, ""), 0);
}

TEST(SkinLibrary, SeedFromTheEnvironmentUnlessTheScheduleWasReset) {
  ::setenv("HALSIM_EDGE_TEST_SEED", "17", 1);
  Library& lib = *new Library(Options("edge_seed"));
  EXPECT_TRUE(lib.ApplyEnvironment());
  EXPECT_EQ(lib.engine().seed(), 17u);
  Library& reset = *new Library(Options("edge_seed_reset"));
  ASSERT_EQ(control::ResetSchedule(reset, 5), 0);
  EXPECT_TRUE(reset.ApplyEnvironment());
  EXPECT_EQ(reset.engine().seed(), 5u);
  ::unsetenv("HALSIM_EDGE_TEST_SEED");
}

}  // namespace
}  // namespace hal::sim::skin
