// Semaphore and queue-operation sequences on the simulator, asserting the
// model's invariants: a payload never goes down; a signal not above the
// payload is INVALID_ARGUMENT and changes nothing; the first failure wins
// and keeps its code; waits on reached values succeed; a host call never
// starts before its waits are reached; destroying the device never hangs.
#include <atomic>
#include <memory>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hal/device.h"
#include "hal/driver.h"
#include "hal/semaphore.h"

namespace {
using namespace hal;
using hal::fuzz::CheckStatus;
using hal::fuzz::FuzzInput;

constexpr StatusCode kCodes[] = {StatusCode::kDataLoss, StatusCode::kAborted,
                                 StatusCode::kUnavailable,
                                 StatusCode::kCancelled};

struct Observed {
  uint64_t payload = 0;  // highest payload seen
  bool failed = false;
  StatusCode code = StatusCode::kOk;
};

void Observe(Semaphore* sem, Observed& o) {
  StatusOr<uint64_t> q = sem->Query();
  if (!q.ok()) {
    HAL_FUZZ_CHECK(!o.failed || q.status().code() == o.code,
                   "failure code changed from %s to %s", StatusCodeName(o.code),
                   q.status().ToString().c_str());
    o.failed = true;
    o.code = q.status().code();
    return;
  }
  HAL_FUZZ_CHECK(!o.failed, "a failed semaphore recovered");
  HAL_FUZZ_CHECK(*q >= o.payload, "payload went down from %llu to %llu",
                 (unsigned long long)o.payload, (unsigned long long)*q);
  o.payload = *q;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  bool threaded = in.Bool();
  Ref<Device> device =
      DefaultDriverRegistry()
          .CreateDevice(threaded ? "sim://?queues=3&mode=threaded&seed=3"
                                 : "sim://?queues=3&seed=3")
          .value();
  int count = 1 + in.Below(4);
  std::vector<Ref<Semaphore>> sems;
  std::vector<Observed> seen(count);
  for (int i = 0; i < count; ++i) {
    sems.push_back(device->CreateSemaphore(in.Below(3)).value());
    Observe(sems[i].get(), seen[i]);
  }
  auto violations = std::make_shared<std::atomic<int>>(0);
  auto gen_points = [&](std::vector<SemaphorePoint>& out, bool signal) {
    int n = in.Below(3);
    for (int i = 0; i < n; ++i) {
      int s = in.Below(count);
      uint64_t v = in.Below(4) == 0 ? in.U64() : seen[s].payload + in.Below(6);
      if (signal && v == 0) v = 1;
      out.push_back({sems[s].get(), v});
    }
  };
  while (!in.empty()) {
    int s = in.Below(count);
    Semaphore* sem = sems[s].get();
    switch (in.Below(7)) {
      case 0: {  // host signal
        Observe(sem, seen[s]);
        uint64_t v = in.Bool() ? seen[s].payload + in.Below(4) : in.U64();
        Status st = sem->Signal(v);
        CheckStatus(st, "Signal");
        if (st.ok()) {
          HAL_FUZZ_CHECK(
              v > seen[s].payload, "a signal to %llu below %llu succeeded",
              (unsigned long long)v, (unsigned long long)seen[s].payload);
        } else if (st.code() == StatusCode::kInvalidArgument) {
          StatusOr<uint64_t> q = sem->Query();
          HAL_FUZZ_CHECK(!q.ok() || *q >= v,
                         "INVALID_ARGUMENT for a signal above the payload");
        }
        Observe(sem, seen[s]);
        break;
      }
      case 1: {  // host fail
        StatusCode code = kCodes[in.Below(4)];
        Observe(sem, seen[s]);
        bool was_failed = seen[s].failed;
        sem->Fail(Status(code, "fuzz"));
        Observe(sem, seen[s]);
        if (!was_failed) {
          // It may have failed meanwhile from a queue operation.
          HAL_FUZZ_CHECK(seen[s].failed, "Fail did not fail the semaphore");
        }
        break;
      }
      case 2:
      case 3: {  // queue operation
        std::vector<SemaphorePoint> wait, signal;
        gen_points(wait, false);
        gen_points(signal, true);
        QueueAffinity affinity = in.U8();
        Status st;
        if (in.Bool()) {
          std::vector<std::pair<Ref<Semaphore>, uint64_t>> waits;
          for (auto& p : wait)
            waits.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
          st = device->QueueHostCall(affinity, wait, signal,
                                     [waits, violations]() -> Status {
                                       for (auto& [w, v] : waits) {
                                         StatusOr<uint64_t> q = w->Query();
                                         if (q.ok() && *q < v)
                                           violations->fetch_add(1);
                                       }
                                       return OkStatus();
                                     });
        } else {
          st = device->QueueBarrier(affinity, wait, signal);
        }
        CheckStatus(st, "queue operation");
        break;
      }
      case 4: {  // wait with a short timeout or poll
        uint64_t v =
            in.Bool() ? seen[s].payload : seen[s].payload + in.Below(4);
        Observe(sem, seen[s]);
        bool reached = !seen[s].failed && seen[s].payload >= v;
        Status st = sem->Wait(
            v, in.Bool() ? Timeout::Immediate()
                         : Timeout::After(std::chrono::microseconds(200)));
        CheckStatus(st, "Wait");
        if (reached) {
          // Reached before the call: only a failure since may change that.
          HAL_FUZZ_CHECK(st.ok() || st.code() != StatusCode::kDeadlineExceeded,
                         "wait for a reached value timed out");
        }
        Observe(sem, seen[s]);
        if (st.ok())
          HAL_FUZZ_CHECK(seen[s].failed || seen[s].payload >= v,
                         "wait OK below value");
        break;
      }
      case 5: {  // multi-wait
        std::vector<SemaphorePoint> points;
        gen_points(points, false);
        Status st = WaitSemaphores(in.Bool() ? WaitMode::kAll : WaitMode::kAny,
                                   points, Timeout::Immediate());
        CheckStatus(st, "WaitSemaphores");
        if (points.empty()) HAL_FUZZ_CHECK(st.ok(), "empty wait list");
        break;
      }
      case 6:
        Observe(sem, seen[s]);
        break;
    }
  }
  for (int i = 0; i < count; ++i) Observe(sems[i].get(), seen[i]);
  device.reset();  // must not hang; cancels what still waits
  HAL_FUZZ_CHECK(violations->load() == 0,
                 "%d host call(s) started before their waits were reached",
                 violations->load());
  return 0;
}
