// hal-check: runs the conformance suite on one device and prints a table of
// areas (gtest suites) with passed/failed/skipped counts, the run's seed and
// trace hash, and a replay command per failure. `hal-check --help` lists the
// options and exit statuses (kHelp below).
//
// Seeds: a run has one seed, printed first (`seed: N`). For the simulator it
// is `seed=N` in the URI (drawn when absent) and each test's device gets the
// seed derived from it and the test's name (hal::cts::DeriveTestSeed), so a
// failing test replays alone. For a driver over a simulated vendor library
// it is HALSIM_SEED (sim/core/halsim_control.h; the older per-driver
// HALSIM_<DRIVER>_SEED is read as an alias), drawn and set when absent.
//
// --seeds=A..B runs the suite once per seed, each in its own child process
// and process group with a time limit, and reports every seed as ok, FAIL,
// CRASH (a signal) or HANG (the time limit), each with its replay command;
// --swarm, --determinism and --minimize are sweeps too
// (hal_check_sweep.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hal/coverage.h"
#include "hal/cts/cts.h"
#include "hal/driver.h"
#include "hal/tools/hal_check_sweep.h"
#include "hal/uri.h"
#include "hal/wait_graph.h"

extern char** environ;

namespace {

constexpr char kHelp[] = R"(usage: hal-check [options] [gtest flags]

Runs the HAL conformance suite (hal/cts/) on one device and prints one line
with the run's seed, a table of areas, each failure with its replay command,
the run's trace hash (where the driver has one) and RESULT: PASS or FAIL.

  --device=URI        the device to test (default: sim). Simulator
                      parameters: docs/simulator.md.
  --seeds=A..B        run the suite once per seed in [A, B], each in its own
                      process; report each seed as ok, FAIL, CRASH or HANG
                      with its replay command. Shard a long sweep by range.
  --seed-timeout=S    with --seeds: a seed still running after S seconds is
                      killed (with its process group) and reported as HANG
                      (default: 300).
  --swarm=A..B        as --seeds, each seed also drawing a fault plan from
                      the one fault grammar (printed; the seed alone replays
                      it). Tests may fail from the faults; a seed fails
                      only on CRASH, HANG, ORACLE (a simulator oracle
                      reported: race, broken vendor rule, late wake-up) or
                      LIVENESS (a wait timed out: something neither reached
                      its value nor failed).
  --swarm --minimize=S  shrinks swarm seed S: drops the plan items and tests
                      the failure does not need; prints the command.
  --determinism=A..B  runs each seed twice with traces on and reports the
                      first trace line that differs, with both lines.
  --coverage          after the table, how often each rare state that
                      applies to the driver was reached (hal/coverage.h).
  --coverage=require  the same, and the run fails when one never was.
  --json              print the result as JSON instead of the table.
  --json=FILE         also write the JSON to FILE.
  --verbose           also print gtest's own output (every test, every
                      failure message in full).
  --list-backends     list the drivers this build can test, with their
                      default URIs.
  --gtest_filter=...  and other --gtest_* flags: passed to gtest.
  --help, -h          this text.

The seed: `seed=N` in a sim:// URI, or HALSIM_SEED in the environment for
a driver over a simulated vendor library (HALSIM_<DRIVER>_SEED is an older
alias); drawn at random when absent. Each test's device is seeded from the run seed
and the test's name, so `--gtest_filter=Suite.Test` with the same run seed
replays one test.

Exit status:
  0  every test that ran passed (and every expected failure failed)
  1  a test failed (or an expected failure passed); with --seeds, a seed
     failed, crashed or hung
  2  bad argument, or a bad device URI parameter (e.g. queues=0)
  3  the device cannot be created (no driver library, HAL_<DRIVER>_LIBRARY
     pointing nowhere, a malformed HALSIM_* variable)
  4  nothing ran: the filter matched no test, or every test was skipped
)";

constexpr char kSelfTestEnv[] = "HAL_CHECK_SELF_TEST";
using hal::tools::kExitFail;
using hal::tools::kExitNoDevice;
using hal::tools::kExitNothingRan;
using hal::tools::kExitUsage;
using hal::tools::RunSetup;
using hal::tools::ShellQuote;

struct Failure {
  std::string test;
  std::string message;  // the first failure's location and text
};

struct AreaCounts {
  int passed = 0, failed = 0, skipped = 0, xfail = 0, xpass = 0;
  std::vector<Failure> failures;
};

class TableListener : public ::testing::EmptyTestEventListener {
 public:
  explicit TableListener(const hal::cts::Backend* backend)
      : backend_(backend) {}

  void OnTestStart(const ::testing::TestInfo&) override {
    first_failure_.clear();
  }

  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed() && first_failure_.empty()) {
      std::ostringstream o;
      if (r.file_name()) o << r.file_name() << ":" << r.line_number() << ": ";
      o << r.summary();
      first_failure_ = o.str();
    }
    if (r.skipped() && skip_reason_.empty()) skip_reason_ = r.message();
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    std::string full = std::string(info.test_suite_name()) + "." + info.name();
    AreaCounts& a = areas_[info.test_suite_name()];
    const auto* result = info.result();
    bool expected_fail = backend_->expected_failures.count(full) != 0;
    if (result->Skipped()) {
      ++a.skipped;
    } else if (result->Failed()) {
      if (expected_fail) {
        ++a.xfail;
      } else {
        ++a.failed;
        a.failures.push_back({full, first_failure_});
      }
    } else if (expected_fail) {
      ++a.xpass;
      a.failures.push_back({full, "expected to fail, passed"});
    } else {
      ++a.passed;
    }
  }

  const std::map<std::string, AreaCounts>& areas() const { return areas_; }
  const std::string& skip_reason() const { return skip_reason_; }

 private:
  const hal::cts::Backend* backend_;
  std::map<std::string, AreaCounts> areas_;
  std::string first_failure_;
  std::string skip_reason_;
};

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

struct Totals {
  int passed = 0, failed = 0, skipped = 0, xfail = 0, xpass = 0;
  int ran() const { return passed + failed + xfail + xpass; }
};

Totals Sum(const std::map<std::string, AreaCounts>& areas) {
  Totals t;
  for (const auto& [name, a] : areas) {
    t.passed += a.passed;
    t.failed += a.failed;
    t.skipped += a.skipped;
    t.xfail += a.xfail;
    t.xpass += a.xpass;
  }
  return t;
}

std::string ToJson(const RunSetup& run,
                   const std::map<std::string, AreaCounts>& areas, bool ok,
                   const std::string& nothing_ran) {
  const auto& trace = hal::cts::GetRunTraceHash();
  std::ostringstream o;
  o << "{\n  \"device\": \"" << JsonEscape(run.RunUri(run.seed))
    << "\",\n  \"driver\": \"" << JsonEscape(run.backend->name)
    << "\",\n  \"seed\": " << run.seed
    << ",\n  \"ok\": " << (ok ? "true" : "false");
  if (!nothing_ran.empty())
    o << ",\n  \"nothing_ran\": \"" << JsonEscape(nothing_ran) << "\"";
  if (trace.tests) o << ",\n  \"trace_hash\": \"" << Hex(trace.hash) << "\"";
  o << ",\n  \"areas\": [";
  bool first = true;
  for (const auto& [name, a] : areas) {
    o << (first ? "\n" : ",\n") << "    {\"area\": \"" << JsonEscape(name)
      << "\", \"passed\": " << a.passed << ", \"failed\": " << a.failed
      << ", \"skipped\": " << a.skipped
      << ", \"expected_failures\": " << a.xfail
      << ", \"unexpected_passes\": " << a.xpass << ", \"failures\": [";
    for (size_t i = 0; i < a.failures.size(); ++i) {
      o << (i ? ", " : "") << "\"" << JsonEscape(a.failures[i].test) << "\"";
    }
    o << "]}";
    first = false;
  }
  o << "\n  ],\n  \"failures\": [";
  first = true;
  for (const auto& [name, a] : areas) {
    for (const auto& f : a.failures) {
      o << (first ? "\n" : ",\n") << "    {\"test\": \"" << JsonEscape(f.test)
        << "\", \"message\": \"" << JsonEscape(f.message)
        << "\", \"replay\": \"" << JsonEscape(run.ReplayTest(f.test)) << "\"}";
      first = false;
    }
  }
  o << (first ? "]\n}\n" : "\n  ]\n}\n");
  return o.str();
}

// The first `max_lines` lines of `s`, indented.
std::string Indent(const std::string& s, int max_lines) {
  std::istringstream in(s);
  std::string line, out;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (n++ == max_lines) {
      out += "    ... (--verbose for the rest)\n";
      break;
    }
    out += "    " + line + "\n";
  }
  return out;
}

void PrintTable(std::ostream& out, const RunSetup& run,
                const std::map<std::string, AreaCounts>& areas, bool ok,
                const std::string& nothing_ran) {
  char line[160];
  out << "hal-check: " << run.RunUri(run.seed) << "\n";
  std::snprintf(line, sizeof(line), "%-24s %7s %7s %8s %6s %6s\n", "area",
                "passed", "failed", "skipped", "xfail", "xpass");
  out << line;
  for (const auto& [name, a] : areas) {
    std::snprintf(line, sizeof(line), "%-24s %7d %7d %8d %6d %6d\n",
                  name.c_str(), a.passed, a.failed, a.skipped, a.xfail,
                  a.xpass);
    out << line;
  }
  Totals t = Sum(areas);
  std::snprintf(line, sizeof(line), "%-24s %7d %7d %8d %6d %6d\n", "total",
                t.passed, t.failed, t.skipped, t.xfail, t.xpass);
  out << line;
  for (const auto& [name, a] : areas) {
    for (const auto& f : a.failures) {
      out << "FAILED: " << f.test << "\n"
          << Indent(f.message, 6) << "  replay: " << run.ReplayTest(f.test)
          << "\n";
    }
  }
  const auto& trace = hal::cts::GetRunTraceHash();
  if (trace.tests) {
    out << "trace hash: " << Hex(trace.hash) << " (" << trace.tests
        << " test devices; replay the run: " << run.Replay(run.seed, "")
        << ")\n";
  }
  if (!nothing_ran.empty())
    out << "hal-check: nothing ran: " << nothing_ran << "\n";
  out << (ok ? "RESULT: PASS\n" : "RESULT: FAIL\n");
}

// Creates the device once, before any test, so that a bad URI parameter and
// a missing driver are one line each (exit 2 and 3) instead of a failure per
// test. Returns 0 when the device works.
int CheckDevice(const std::string& uri) {
  auto device = hal::DefaultDriverRegistry().CreateDevice(uri);
  if (device.ok()) return 0;
  const hal::Status& s = device.status();
  if (s.code() == hal::StatusCode::kInvalidArgument) {
    std::fprintf(stderr, "hal-check: bad device URI '%s': %s\n", uri.c_str(),
                 s.ToString().c_str());
    return kExitUsage;
  }
  // Drivers' UNAVAILABLE messages usually say which variable to set.
  const char* hint =
      s.message().find("HAL_") != std::string::npos
          ? ""
          : " (hint: is the driver's library installed or named by "
            "HAL_<DRIVER>_LIBRARY, and are the HALSIM_* variables well "
            "formed? hal-info lists the devices)";
  std::fprintf(stderr, "hal-check: cannot create device '%s': %s%s\n",
               uri.c_str(), s.ToString().c_str(), hint);
  return kExitNoDevice;
}

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

int Usage(const char* problem) {
  std::fprintf(stderr, "hal-check: %s (hal-check --help lists the options)\n",
               problem);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::string uri;
  std::string json_path;
  bool json_stdout = false, verbose = false;
  std::string seeds;
  hal::tools::SweepMode mode = hal::tools::SweepMode::kSeeds;
  bool swarm_flag = false;
  std::string minimize;
  int coverage = 0;  // 1: print, 2: require
  double seed_timeout = 300;
  std::vector<std::string> gtest_flags;
  std::vector<char*> gtest_args = {argv[0]};
  hal::cts::RegisterBuiltinBackends();
  // The wait-for graph: liveness and lifetime checks, and a timed-out wait
  // explained (hal/wait_graph.h). HAL_WAIT_GRAPH=0 turns it off.
  {
    const char* graph = std::getenv("HAL_WAIT_GRAPH");
    hal::EnableWaitGraph(!(graph && std::strcmp(graph, "0") == 0));
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) {
      uri = arg.substr(9);
    } else if (arg.rfind("--seeds=", 0) == 0) {
      seeds = arg.substr(8);
    } else if (arg.rfind("--swarm=", 0) == 0) {
      seeds = arg.substr(8);
      mode = hal::tools::SweepMode::kSwarm;
    } else if (arg == "--coverage") {
      coverage = 1;
    } else if (arg == "--coverage=require") {
      coverage = 2;
    } else if (arg == "--swarm") {
      swarm_flag = true;
    } else if (arg.rfind("--minimize=", 0) == 0) {
      minimize = arg.substr(11);
    } else if (arg.rfind("--determinism=", 0) == 0) {
      seeds = arg.substr(14);
      mode = hal::tools::SweepMode::kDeterminism;
    } else if (arg.rfind("--seed-timeout=", 0) == 0) {
      char* end = nullptr;
      seed_timeout = std::strtod(arg.c_str() + 15, &end);
      if (*end || !(seed_timeout > 0)) {
        return Usage(
            ("--seed-timeout wants seconds > 0, got '" + arg.substr(15) + "'")
                .c_str());
      }
    } else if (arg == "--json") {
      json_stdout = true;
    } else if (arg.rfind("--json=", 0) == 0) {
      json_path = arg.substr(7);
    } else if (arg == "--verbose" || arg == "-v") {
      verbose = true;
    } else if (arg == "--list-backends") {
      for (const auto& b : hal::cts::Backends()) {
        std::printf("%s\t%s\n", b.name.c_str(), b.default_uri.c_str());
      }
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (arg.rfind("--gtest_", 0) == 0) {
      gtest_args.push_back(argv[i]);
      gtest_flags.push_back(arg);
    } else {
      return Usage(("unknown argument '" + arg + "'").c_str());
    }
  }
  if (uri.empty()) uri = "sim";
  auto parsed = hal::DeviceUri::Parse(uri);
  if (!parsed.ok()) {
    std::fprintf(stderr, "hal-check: %s\n", parsed.status().ToString().c_str());
    return kExitUsage;
  }
  RunSetup run;
  run.program = argv[0];
  run.backend = hal::cts::FindBackend(parsed->driver);
  if (!run.backend) {
    std::fprintf(stderr,
                 "hal-check: no conformance backend for driver '%s' in this "
                 "build (see --list-backends)\n",
                 parsed->driver.c_str());
    return kExitUsage;
  }
  run.base = *parsed;
  // The run seed: from the URI or the environment, else drawn.
  std::string given;
  if (!run.backend->seed_param.empty()) {
    if (auto it = run.base.params.find(run.backend->seed_param);
        it != run.base.params.end()) {
      given = it->second;
      run.base.params.erase(it);
    }
  } else {
    run.seed_env = "HALSIM_SEED";
    run.seed_alias = "HALSIM_";
    for (char c : run.backend->name) {
      run.seed_alias +=
          static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    run.seed_alias += "_SEED";
    if (const char* env = std::getenv(run.seed_env.c_str())) {
      given = env;
    } else if (const char* alias = std::getenv(run.seed_alias.c_str())) {
      given = alias;
    }
  }
  if (!given.empty()) {
    if (!ParseU64(given, &run.seed)) {
      return Usage(
          ("the seed '" + given + "' is not an unsigned integer").c_str());
    }
  } else {
    std::random_device rd;
    run.seed = ((uint64_t{rd()} << 32) ^ rd()) >> 1;
  }

  if (!minimize.empty() || swarm_flag) {
    uint64_t seed = 0;
    if (!swarm_flag || !ParseU64(minimize, &seed)) {
      return Usage("--minimize=S goes with --swarm and wants a seed");
    }
    if (run.backend->swarm_faults.empty()) {
      return Usage("this driver's backend names no swarm faults");
    }
    if (!run.seed_env.empty())
      setenv(run.seed_env.c_str(), std::to_string(seed).c_str(), 1);
    if (int rc = CheckDevice(run.RunUri(seed))) return rc;
    hal::tools::SweepOptions options;
    options.timeout_s = seed_timeout;
    options.gtest_flags = gtest_flags;
    return hal::tools::MinimizeSwarmSeed(run, seed, options);
  }
  if (!seeds.empty()) {
    hal::tools::SweepOptions options;
    options.mode = mode;
    options.timeout_s = seed_timeout;
    options.gtest_flags = gtest_flags;
    auto dots = seeds.find("..");
    if (dots == std::string::npos ||
        !ParseU64(seeds.substr(0, dots), &options.first) ||
        !ParseU64(seeds.substr(dots + 2), &options.last) ||
        options.first > options.last) {
      return Usage(
          ("a sweep wants A..B with A <= B, got '" + seeds + "'").c_str());
    }
    if (mode == hal::tools::SweepMode::kSwarm &&
        run.backend->swarm_faults.empty()) {
      return Usage("this driver's backend names no swarm faults");
    }
    if (!run.seed_env.empty())
      setenv(run.seed_env.c_str(), std::to_string(options.first).c_str(), 1);
    if (int rc = CheckDevice(run.RunUri(options.first))) return rc;
    if (json_stdout || !json_path.empty()) {
      return Usage("--json reports one run; it does not go with a sweep");
    }
    return hal::tools::SweepSeeds(run, options);
  }

  if (!run.seed_env.empty()) {
    setenv(run.seed_env.c_str(), std::to_string(run.seed).c_str(), 1);
  }
  if (int rc = CheckDevice(run.RunUri(run.seed))) return rc;
  if (!json_stdout) {  // the JSON carries it
    std::printf("seed: %" PRIu64 "\n", run.seed);
    std::fflush(stdout);
  }
  hal::cts::SetContext({run.backend, run.base.ToString(), run.seed});

  int gtest_argc = static_cast<int>(gtest_args.size());
  gtest_args.push_back(nullptr);  // argv[argc] must be null
  ::testing::InitGoogleTest(&gtest_argc, gtest_args.data());
  const std::string user_filter = GTEST_FLAG_GET(filter);
  if (!std::getenv(kSelfTestEnv)) {
    // hal-check's own tests (hal/cts/cts_self_test.cc) run only on request.
    std::string filter = GTEST_FLAG_GET(filter);
    filter += filter.find('-') == std::string::npos ? "-" : ":";
    filter += "HalCheckSelfTest*";
    GTEST_FLAG_SET(filter, filter);
  }
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  auto* table = new TableListener(run.backend);
  listeners.Append(table);
  if (json_stdout || !verbose)
    delete listeners.Release(listeners.default_result_printer());

  // The exit status comes from the table below, which knows expected failures.
  int gtest_result = RUN_ALL_TESTS();
  if (GTEST_FLAG_GET(list_tests)) return gtest_result;  // listed, ran nothing

  Totals totals = Sum(table->areas());
  bool ok = totals.failed == 0 && totals.xpass == 0;
  std::string nothing_ran;
  if (totals.ran() == 0) {
    ok = false;
    if (totals.skipped == 0) {
      nothing_ran = "no test matches the filter '" + user_filter + "'";
    } else {
      nothing_ran =
          "all " + std::to_string(totals.skipped) + " test(s) were skipped";
      if (!table->skip_reason().empty()) {
        std::string reason = table->skip_reason();
        if (auto nl = reason.find('\n'); nl != std::string::npos)
          reason.resize(nl);
        nothing_ran += " (e.g. " + reason + ")";
      }
    }
  }
  std::string json = ToJson(run, table->areas(), ok, nothing_ran);
  if (json_stdout) {
    std::cout << json;
  } else {
    if (verbose) std::cout << "\n";
    PrintTable(std::cout, run, table->areas(), ok, nothing_ran);
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << json;
    if (!f) {
      std::fprintf(stderr, "hal-check: cannot write %s\n", json_path.c_str());
      return kExitFail;
    }
  }
  if (!nothing_ran.empty()) return kExitNothingRan;
  if (coverage) {
    int missing = 0;
    std::printf("coverage (rare states reached, hal/coverage.h):\n");
    for (int i = 0; i < static_cast<int>(hal::CoverageState::kCount); ++i) {
      const auto state = static_cast<hal::CoverageState>(i);
      if (!hal::CoverageApplies(state, run.backend->name.c_str())) continue;
      const uint64_t n = hal::CoverageCount(state);
      std::printf("  %-52s %" PRIu64 "%s\n", hal::kCoverageStates[i].name, n,
                  n ? "" : "  NEVER REACHED");
      if (!n) ++missing;
    }
    if (coverage == 2 && missing) {
      std::printf("hal-check: %d rare state(s) never reached\nRESULT: FAIL\n",
                  missing);
      return kExitFail;
    }
  }
  return ok ? 0 : kExitFail;
}
