// Unit tests of what the CUDA and HIP skins share (sim/skin/skin_stream.h),
// with no vendor header: the handle table, the error tables, device queries and
// primary scopes, stream work through the engine, launch checks and the
// host-callback rule.
#include <gtest/gtest.h>

#include <cstring>

#include "sim/skin/skin_stream.h"

namespace hal::sim::skin {
namespace {

LibraryOptions TestOptions(const char* prefix) {
  return {.log_prefix = prefix,
          .api = "TEST",
          .env_alias = "HALSIM_SKIN_TEST_",
          .devices_env = nullptr,
          .kernel_dir = nullptr,
          .callback_rule = "tests forbid API calls in host callbacks"};
}

// An initialised library that steps as soon as work is ready (never
// destroyed, as a skin's).
StreamLibrary& Lib() {
  static StreamLibrary* lib = [] {
    auto* l = new StreamLibrary(TestOptions("skin_test"));
    EXPECT_EQ(l->Init(0), Code::kOk);
    l->engine().SetSettleNs(0);
    return l;
  }();
  return *lib;
}

// Holds `stream` until `gate` (a new one by default, returned) is raised to
// 1.
engine::SignalPtr HoldStream(StreamLibrary& lib, Stream* stream,
                             engine::SignalPtr gate = nullptr) {
  if (!gate) gate = lib.engine().CreateSignal(0);
  engine::Op hold;
  hold.name = "hold";
  hold.zero_time = true;
  hold.waits.push_back({gate, engine::Cond::kGe, 1});
  EXPECT_EQ(lib.engine().Enqueue(stream->queue, std::move(hold)),
            engine::Error::kOk);
  return gate;
}

// The vendor-object reuse oracle: an event recorded again, or destroyed,
// while its record is pending is a rule violation (counted, reported), and
// still done as the vendor API does it.
TEST(SkinQueue, ReusingAnEventInUseIsAViolation) {
  StreamLibrary& lib = Lib();
  Scope* scope = lib.device(0);
  Stream* stream = NewStream(lib, scope);
  engine::SignalPtr gate = HoldStream(lib, stream);
  Event* event = lib.New<Event>(lib.engine(), scope);
  const uint64_t before = lib.violations();
  EXPECT_EQ(RecordEvent(lib, event, stream, &scope->domain, "record"),
            Code::kOk);
  EXPECT_EQ(lib.violations(), before) << "a first record is no reuse";
  EXPECT_EQ(RecordEvent(lib, event, stream, &scope->domain, "record"),
            Code::kOk);
  EXPECT_EQ(lib.violations(), before + 1) << "recorded while pending";
  EXPECT_EQ(DestroyEvent(lib, event, "destroy"), Code::kOk);
  EXPECT_EQ(lib.violations(), before + 2) << "destroyed while pending";
  lib.engine().UpdateSignal(gate, engine::SignalOp::kSet, 1);
  EXPECT_EQ(SynchronizeStream(lib, stream), Code::kOk);
  // Once the record completed, both are fine.
  Event* done = lib.New<Event>(lib.engine(), scope);
  EXPECT_EQ(RecordEvent(lib, done, stream, &scope->domain, "record"),
            Code::kOk);
  EXPECT_EQ(SynchronizeEvent(done), Code::kOk);
  EXPECT_EQ(RecordEvent(lib, done, stream, &scope->domain, "record"),
            Code::kOk);
  EXPECT_EQ(SynchronizeEvent(done), Code::kOk);
  EXPECT_EQ(DestroyEvent(lib, done, "destroy"), Code::kOk);
  EXPECT_EQ(lib.violations(), before + 2);
  EXPECT_EQ(DestroyStream(lib, stream), Code::kOk);
}

// An event recorded on two streams ends in the state of its last record,
// whichever completes first: the earlier record completing last does not
// move it back (CUDA and HIP: a query reflects the most recent record).
TEST(SkinQueue, AnEarlierRecordCompletingLastDoesNotMoveTheEventBack) {
  StreamLibrary& lib = Lib();
  Scope* scope = lib.device(0);
  Stream* slow = NewStream(lib, scope);
  Stream* fast = NewStream(lib, scope);
  engine::SignalPtr gate = HoldStream(lib, slow);
  Event* event = lib.New<Event>(lib.engine(), scope);
  EXPECT_EQ(RecordEvent(lib, event, slow, &scope->domain, "record"), Code::kOk);
  EXPECT_EQ(QueryEvent(event), Code::kNotReady);
  EXPECT_EQ(RecordEvent(lib, event, fast, &scope->domain, "record"),
            Code::kOk);  // a reported reuse, done anyway
  EXPECT_EQ(SynchronizeStream(lib, fast), Code::kOk);
  EXPECT_EQ(QueryEvent(event), Code::kOk) << "the last record completed";
  lib.engine().UpdateSignal(gate, engine::SignalOp::kSet, 1);
  EXPECT_EQ(SynchronizeStream(lib, slow), Code::kOk);
  EXPECT_EQ(QueryEvent(event), Code::kOk)
      << "the earlier record completing last moved the event back";
  EXPECT_EQ(SynchronizeEvent(event), Code::kOk);
  // A wait enqueued now orders after the last record: it does not block.
  EXPECT_EQ(StreamWaitEvent(lib, slow, event, "wait"), Code::kOk);
  EXPECT_EQ(SynchronizeStream(lib, slow), Code::kOk);
  EXPECT_EQ(DestroyEvent(lib, event, "destroy"), Code::kOk);
  EXPECT_EQ(DestroyStream(lib, slow), Code::kOk);
  EXPECT_EQ(DestroyStream(lib, fast), Code::kOk);
}

TEST(SkinHandles, DestroyedForeignAndMistypedHandlesAreRefused) {
  StreamLibrary& lib = Lib();
  const uint64_t live = lib.live_objects();
  Stream* stream = NewStream(lib, lib.device(0));
  Event* event = lib.New<Event>(lib.engine(), lib.device(0));
  EXPECT_EQ(lib.live_objects(), live + 2);
  EXPECT_EQ(lib.Find<Stream>(stream), stream);
  EXPECT_EQ(lib.Find<Event>(stream), nullptr) << "a stream is not an event";
  int foreign = 0;
  EXPECT_EQ(lib.Find<Stream>(&foreign), nullptr);
  EXPECT_EQ(lib.Find<Stream>(nullptr), nullptr);
  EXPECT_EQ(DestroyStream(lib, &foreign), Code::kInvalidHandle);
  EXPECT_EQ(DestroyStream(lib, stream), Code::kOk);
  EXPECT_EQ(lib.Find<Stream>(stream), nullptr);
  EXPECT_EQ(DestroyStream(lib, stream), Code::kInvalidHandle) << "twice";
  EXPECT_EQ(lib.Destroy<Stream>(event), Code::kInvalidHandle);
  EXPECT_EQ(lib.Destroy<Event>(event), Code::kOk);
  EXPECT_EQ(lib.live_objects(), live);
  EXPECT_EQ(DestroyGraph(lib, event), Code::kInvalidValue);
}

enum class Vendor { kOk = 0, kBad = 7, kGone = 9, kUnknown = 99 };
const ErrorRow<Vendor> kRows[] = {
    HALSIM_ERROR_ROW(kOk, Vendor::kOk, "fine"),
    HALSIM_ERROR_ROW(kInvalidValue, Vendor::kBad, "bad"),
    HALSIM_ERROR_ROW(kNone, Vendor::kGone, "gone"),
    HALSIM_ERROR_ROW(kNone, Vendor::kUnknown, "unknown"),
};

TEST(SkinErrors, OneTableMapsCodesNamesAndTexts) {
  EXPECT_EQ(ToVendor(kRows, Code::kInvalidValue), Vendor::kBad);
  EXPECT_EQ(ToVendor(kRows, Code::kNotFound), Vendor::kUnknown);
  EXPECT_EQ(FromEngine(engine::Error::kBusy), Code::kNotReady);
  const char* s = nullptr;
  EXPECT_EQ(ErrorText(kRows, Vendor::kGone, /*name=*/true, &s), Code::kOk);
  EXPECT_STREQ(s, "Vendor::kGone");
  EXPECT_EQ(ErrorText(kRows, Vendor::kBad, /*name=*/false, &s), Code::kOk);
  EXPECT_STREQ(s, "bad");
  EXPECT_EQ(ErrorText(kRows, static_cast<Vendor>(3), true, &s),
            Code::kInvalidValue);
  const AttributeRow<int> attributes[] = {{1, 64}};
  int value = 0;
  EXPECT_EQ(Attribute(attributes, 1, &value), Code::kOk);
  EXPECT_EQ(value, 64);
  EXPECT_EQ(Attribute(attributes, 2, &value), Code::kInvalidValue);
}

TEST(SkinDevices, QueriesAndPrimaryScopes) {
  static StreamLibrary* fresh =
      new StreamLibrary(TestOptions("skin_test_fresh"));
  int count = -1;
  EXPECT_EQ(fresh->DeviceCount(&count), Code::kNotInitialized);
  EXPECT_EQ(fresh->Init(1), Code::kInvalidValue);

  StreamLibrary& lib = Lib();
  EXPECT_EQ(lib.DeviceCount(&count), Code::kOk);
  EXPECT_EQ(count, 1);
  int ordinal = -1;
  EXPECT_EQ(lib.GetDevice(1, &ordinal), Code::kInvalidDevice);
  EXPECT_EQ(lib.GetDevice(0, nullptr), Code::kInvalidValue);
  char name[8];
  EXPECT_EQ(lib.DeviceName(0, name, sizeof(name), "dev %d"), Code::kOk);
  EXPECT_STREQ(name, "dev 0");
  char uuid[16];
  EXPECT_EQ(lib.DeviceUuid(0, "TEST", uuid), Code::kOk);
  EXPECT_EQ(std::memcmp(uuid, "TEST", 4), 0);

  Scope* scope = nullptr;
  EXPECT_EQ(lib.RetainScope(0, &scope), Code::kOk);
  EXPECT_EQ(scope, lib.device(0));
  scope->domain.Fail(engine::Error::kLaunchFailed);
  EXPECT_EQ(lib.ReleaseScope(0), Code::kOk);
  EXPECT_FALSE(scope->domain.failed()) << "the last release clears it";
  EXPECT_EQ(lib.ReleaseScope(0), Code::kInvalidContext);
}

// The race checker sees every range a stream op touches: a copy's source
// and its target, a fill's target. Two unordered streams, both released by
// one gate, overlap in virtual time; a write meeting any access of the
// other stream is a race, two reads are not.
TEST(SkinQueue, UnorderedStreamsRaceOnEveryRangeAStreamOpTouches) {
  StreamLibrary& lib = Lib();
  Scope* scope = lib.device(0);
  constexpr uint64_t kBytes = 1 << 16;
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  ASSERT_EQ(Allocate(lib, &a, kBytes, engine::MemoryKind::kDevice, 256),
            Code::kOk);
  ASSERT_EQ(Allocate(lib, &b, kBytes, engine::MemoryKind::kDevice, 256),
            Code::kOk);
  ASSERT_EQ(Allocate(lib, &c, kBytes, engine::MemoryKind::kDevice, 256),
            Code::kOk);
  // kKernelA: a kernel launch whose binding is `a` (the ranges a launch
  // declares, Engine::KernelBindingRanges; its work does nothing).
  enum class Kind { kFillA, kCopyAToB, kCopyAToC, kKernelA };
  struct Case {
    const char* what;
    Kind first, second;
    bool race;
  };
  const Case cases[] = {
      {"fill of a copy's source", Kind::kCopyAToB, Kind::kFillA, true},
      {"copy's source under a fill", Kind::kFillA, Kind::kCopyAToB, true},
      {"two copies into one target", Kind::kCopyAToB, Kind::kCopyAToB, true},
      {"two copies reading one source", Kind::kCopyAToB, Kind::kCopyAToC,
       false},
      {"a fill of a kernel's binding", Kind::kKernelA, Kind::kFillA, true},
      {"a copy from a kernel's binding", Kind::kCopyAToB, Kind::kKernelA, true},
      {"two kernels on one binding", Kind::kKernelA, Kind::kKernelA, true},
  };
  auto issue = [&](Stream* stream, Kind kind) {
    switch (kind) {
      case Kind::kFillA:
        return FillAsync(lib, stream, Address(a), 0x5a5a5a5au, 4, kBytes / 4);
      case Kind::kCopyAToB:
        return CopyAsync(lib, stream, Address(b), Address(a), kBytes);
      case Kind::kCopyAToC:
        return CopyAsync(lib, stream, Address(c), Address(a), kBytes);
      case Kind::kKernelA:
        return EnqueueKernel(
            lib, stream,
            KernelLaunch{nullptr,
                         lib.engine().KernelBindingRanges({Address(a)})});
    }
    return Code::kInvalidValue;
  };
  for (const Case& k : cases) {
    for (bool same_stream : {false, true}) {
      Stream* s1 = NewStream(lib, scope);
      Stream* s2 = same_stream ? s1 : NewStream(lib, scope);
      // One gate for both: both streams start at one virtual time.
      engine::SignalPtr gate = HoldStream(lib, s1);
      if (!same_stream) HoldStream(lib, s2, gate);
      const uint64_t before = lib.engine().counters().races;
      EXPECT_EQ(issue(s1, k.first), Code::kOk);
      EXPECT_EQ(issue(s2, k.second), Code::kOk);
      lib.engine().UpdateSignal(gate, engine::SignalOp::kSet, 1);
      EXPECT_EQ(SynchronizeStream(lib, s1), Code::kOk);
      EXPECT_EQ(SynchronizeStream(lib, s2), Code::kOk);
      const bool raced = lib.engine().counters().races > before;
      const bool want = k.race && !same_stream;
      EXPECT_EQ(raced, want) << k.what
                             << (same_stream ? " on one stream (ordered)"
                                             : " on two unordered streams");
      EXPECT_EQ(DestroyStream(lib, s1), Code::kOk);
      if (!same_stream) {
        EXPECT_EQ(DestroyStream(lib, s2), Code::kOk);
      }
    }
  }
  for (void* p : {a, b, c}) {
    EXPECT_EQ(lib.engine().Free(Address(p), /*host=*/false),
              engine::Error::kOk);
  }
}

TEST(SkinQueue, FillCopyRecordAndMisuse) {
  StreamLibrary& lib = Lib();
  Scope* scope = lib.device(0);
  Stream* stream = NewStream(lib, scope);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(Allocate(lib, &a, 64, engine::MemoryKind::kDevice, 256), Code::kOk);
  ASSERT_EQ(Allocate(lib, &b, 64, engine::MemoryKind::kHost, 4096), Code::kOk);
  void* none = &a;
  EXPECT_EQ(Allocate(lib, &none, 0, engine::MemoryKind::kDevice, 256, true),
            Code::kOk);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(FillAsync(lib, stream, Address(a) + 1, 0, 4, 1),
            Code::kInvalidValue)
      << "misaligned";
  EXPECT_EQ(FillAsync(lib, nullptr, Address(a), 0, 4, 1), Code::kInvalidHandle);
  EXPECT_EQ(FillAsync(lib, stream, Address(a), 0x01020304u, 4, 16), Code::kOk);
  EXPECT_EQ(CopyAsync(lib, stream, Address(b), Address(a), 64), Code::kOk);
  Event* event = lib.New<Event>(lib.engine(), scope);
  EXPECT_EQ(RecordEvent(lib, event, stream, &scope->domain, "record"),
            Code::kOk);
  EXPECT_EQ(SynchronizeEvent(event), Code::kOk);
  EXPECT_EQ(QueryEvent(event), Code::kOk);
  EXPECT_EQ(SynchronizeStream(lib, stream), Code::kOk);
  const uint32_t word = 0x01020304u;
  EXPECT_EQ(std::memcmp(static_cast<char*>(b) + 60, &word, 4), 0);
  EXPECT_EQ(CheckHostPointer(lib, static_cast<char*>(b) + 8), Code::kOk);
  EXPECT_EQ(CheckHostPointer(lib, a), Code::kInvalidValue);
  EXPECT_EQ(FreeAsync(lib, Address(b), stream), Code::kInvalidValue)
      << "host memory is not freed in stream order";
  EXPECT_EQ(FreeAsync(lib, Address(a), stream), Code::kOk);
  EXPECT_EQ(SynchronizeStream(lib, stream), Code::kOk);
  EXPECT_EQ(lib.engine().Free(Address(b), /*host=*/true), engine::Error::kOk);
  EXPECT_EQ(lib.Destroy<Event>(event), Code::kOk);
  EXPECT_EQ(DestroyStream(lib, stream), Code::kOk);
}

TEST(SkinLaunch, LimitsBlockSizeAndParameters) {
  StreamLibrary& lib = Lib();
  hal_sim_kernel_info info = {HAL_SIM_KERNEL_ABI_VERSION, 1, 0, {64, 1, 1}};
  Function f;
  f.name = "k";
  f.kernel.name = "k";
  f.kernel.info = &info;
  const LaunchLimits limits = {{100, 10, 10}, 0, 1024, 1024};
  const uint32_t one[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  const uint32_t big[3] = {101, 1, 1}, wrong[3] = {32, 2, 1};
  void* buffer = nullptr;
  void* params[] = {&buffer};
  KernelLaunch launch;
  Scope* scope = lib.device(0);
  EXPECT_EQ(LaunchWork(lib, limits, scope, &f, big, block, 0, params, &launch),
            Code::kInvalidValue);
  EXPECT_EQ(LaunchWork(lib, limits, scope, &f, one, wrong, 0, params, &launch),
            Code::kInvalidValue)
      << "not the native build's block size";
  EXPECT_EQ(
      LaunchWork(lib, limits, scope, &f, one, block, 2048, params, &launch),
      Code::kInvalidValue);
  EXPECT_EQ(LaunchWork(lib, limits, scope, &f, one, block, 0, nullptr, &launch),
            Code::kInvalidValue)
      << "a binding without parameters";
  EXPECT_FALSE(launch.work);
  EXPECT_EQ(LaunchWork(lib, limits, scope, &f, one, block, 0, params, &launch),
            Code::kOk);
  EXPECT_TRUE(launch.work);
  const LaunchLimits items = {{100, 10, 10}, 64 * 50, 1024, 1024};
  const uint32_t many[3] = {51, 1, 1};
  EXPECT_EQ(LaunchWork(lib, items, scope, &f, many, block, 0, params, &launch),
            Code::kInvalidValue)
      << "grid x block past the work-item limit";
}

Code Api(const char* name) {
  HALSIM_SKIN_ENTER(Lib(), name, [](Code c) { return c; });
  return Code::kOk;
}

TEST(SkinRules, ApiCallsFromHostCallbacksAreViolations) {
  StreamLibrary& lib = Lib();
  Stream* stream = NewStream(lib, lib.device(0));
  const uint64_t before = lib.engine().counters().host_callback_violations;
  Code inner = Code::kNone;
  EXPECT_EQ(Api("outside"), Code::kOk);
  EXPECT_EQ(LaunchHostFunction(lib, stream, [&] { inner = Api("inside"); }),
            Code::kOk);
  EXPECT_EQ(SynchronizeStream(lib, stream), Code::kOk);
  EXPECT_EQ(inner, Code::kNotPermitted);
  EXPECT_EQ(lib.engine().counters().host_callback_violations, before + 1);
  EXPECT_EQ(DestroyStream(lib, stream), Code::kOk);
}

}  // namespace
}  // namespace hal::sim::skin
