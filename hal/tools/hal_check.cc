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
// CRASH (a signal) or HANG (the time limit), each with its replay command.
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

#include "hal/cts/cts.h"
#include "hal/driver.h"
#include "hal/uri.h"

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
constexpr int kExitFail = 1, kExitUsage = 2, kExitNoDevice = 3,
              kExitNothingRan = 4;

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

// Single-quotes `s` for a POSIX shell.
std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        !std::strchr("-_./=:,+@%", c)) {
      plain = false;
    }
  }
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

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

// How this run is seeded and replayed.
struct RunSetup {
  std::string program;  // argv[0]
  const hal::cts::Backend* backend = nullptr;
  hal::DeviceUri base;  // the URI without the seed parameter
  uint64_t seed = 0;
  std::string seed_env;    // HALSIM_SEED when the seed is not in the URI
  std::string seed_alias;  // HALSIM_<DRIVER>_SEED, read when it is unset

  // The device URI of the whole run (with the run seed).
  std::string RunUri(uint64_t run_seed) const {
    hal::DeviceUri u = base;
    if (!backend->seed_param.empty()) {
      u.params[backend->seed_param] = std::to_string(run_seed);
    }
    return u.ToString();
  }
  // Environment variables a replay needs: the seed variable and every HAL_*
  // and HALSIM_* variable set now (libraries, fault plans, self-tests).
  std::string EnvPrefix(uint64_t run_seed) const {
    std::string out;
    if (!seed_env.empty())
      out += seed_env + "=" + std::to_string(run_seed) + " ";
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq == std::string::npos) continue;
      std::string name = kv.substr(0, eq);
      if (name == seed_env || name == seed_alias) continue;
      if (name.rfind("HAL_", 0) != 0 && name.rfind("HALSIM_", 0) != 0) continue;
      out += name + "=" + ShellQuote(kv.substr(eq + 1)) + " ";
    }
    return out;
  }
  std::string Replay(uint64_t run_seed, const std::string& extra) const {
    return EnvPrefix(run_seed) + ShellQuote(program) + " " +
           ShellQuote("--device=" + RunUri(run_seed)) + extra;
  }
  std::string ReplayTest(const std::string& test) const {
    return Replay(seed, " " + ShellQuote("--gtest_filter=" + test));
  }
};

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

// ---------------------------------------------------------------------------
// --seeds

volatile sig_atomic_t g_child_group = 0;

void KillChildAndExit(int sig) {
  if (g_child_group > 0) kill(-g_child_group, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

// The last `n` non-empty lines of the file at `path`.
std::vector<std::string> TailLines(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  return lines;
}

// The failure block of the child's table: from the first "FAILED: " line to
// the trace hash or RESULT line.
std::vector<std::string> FailureLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  bool in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("FAILED: ", 0) == 0) in_block = true;
    if (line.rfind("trace hash: ", 0) == 0 || line.rfind("RESULT: ", 0) == 0) {
      in_block = false;
    }
    if (in_block) lines.push_back(line);
  }
  return lines;
}

// Runs this program once per seed in [first, last]; returns the exit status.
int SweepSeeds(RunSetup run, uint64_t first, uint64_t last, double timeout_s,
               const std::vector<std::string>& passed_flags) {
  signal(SIGINT, KillChildAndExit);
  signal(SIGTERM, KillChildAndExit);
  signal(SIGHUP, KillChildAndExit);
  const uint64_t count = last - first + 1;  // 0 when the range is all of uint64
  char log_path[] = "/tmp/hal-check-seed-XXXXXX";
  int log_fd = mkostemp(log_path, O_CLOEXEC);
  if (log_fd < 0) {
    std::perror("hal-check: mkstemp");
    return kExitFail;
  }
  std::map<std::string, std::vector<uint64_t>> bad;  // outcome -> seeds
  uint64_t nothing_ran = 0, done = 0;
  for (uint64_t seed = first;; ++seed) {
    ++done;
    if (ftruncate(log_fd, 0) != 0 || lseek(log_fd, 0, SEEK_SET) != 0) {
      std::perror("hal-check: truncating the seed's log");
    }
    std::vector<std::string> args = {
        run.program, "--device=" + run.RunUri(seed), "--verbose"};
    args.insert(args.end(), passed_flags.begin(), passed_flags.end());
    // Everything the child needs is built here: between fork and exec it
    // calls only async-signal-safe functions (the parent may have threads,
    // e.g. a vendor-API simulator's, holding the allocator's lock).
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    std::string seed_kv = run.seed_env + "=" + std::to_string(seed);
    for (char** e = environ; *e; ++e) {
      if (!run.seed_env.empty() &&
          std::strncmp(*e, seed_kv.c_str(), run.seed_env.size() + 1) == 0) {
        continue;
      }
      env_strings.push_back(*e);
    }
    if (!run.seed_env.empty()) env_strings.push_back(seed_kv);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    auto start = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      if (devnull >= 0) dup2(devnull, 0);
      dup2(log_fd, 1);
      dup2(log_fd, 2);
      execve("/proc/self/exe", argv.data(), envp.data());
      _exit(127);
    }
    if (devnull >= 0) close(devnull);
    std::string outcome;
    std::string detail;
    int status = 0;
    if (pid < 0) {
      outcome = "ERROR";
      detail = std::string("fork: ") + std::strerror(errno);
    } else {
      setpgid(pid, pid);  // also here: no race with the kill below
      g_child_group = pid;
      bool hung = false;
      for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
          status = -1;
          break;
        }
        double elapsed = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        if (!hung && elapsed > timeout_s) {
          hung = true;
          kill(-pid, SIGKILL);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(hung ? 1 : 20));
      }
      g_child_group = 0;
      if (hung) {
        outcome = "HANG";
        char buf[64];
        std::snprintf(buf, sizeof(buf), "still running after %g s", timeout_s);
        detail = buf;
      } else if (status != -1 && WIFSIGNALED(status)) {
        outcome = "CRASH";
        detail = std::string("signal ") + std::to_string(WTERMSIG(status)) +
                 " (" + strsignal(WTERMSIG(status)) + ")";
      } else if (status == -1 || !WIFEXITED(status)) {
        outcome = "ERROR";
        detail = "lost the child";
      } else {
        switch (WEXITSTATUS(status)) {
          case 0:
            outcome = "ok";
            break;
          case kExitFail:
            outcome = "FAIL";
            break;
          case kExitNothingRan:
            outcome = "nothing ran";
            ++nothing_ran;
            break;
          default:
            outcome = "ERROR";
            detail = "exit status " + std::to_string(WEXITSTATUS(status));
        }
      }
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("[%" PRIu64 "/%" PRIu64 "] seed %" PRIu64 " %s (%.1f s)%s%s\n",
                done, count, seed, outcome.c_str(), secs,
                detail.empty() ? "" : ": ", detail.c_str());
    if (outcome != "ok" && outcome != "nothing ran") {
      bad[outcome].push_back(seed);
      // What failed, or what was running when it crashed or hung.
      std::vector<std::string> lines = FailureLines(log_path);
      if (outcome != "FAIL" || lines.empty()) lines = TailLines(log_path, 8);
      for (const auto& l : lines) std::printf("    %s\n", l.c_str());
      std::string flags;
      for (const auto& f : passed_flags) flags += " " + ShellQuote(f);
      std::printf("  replay the seed: %s\n", run.Replay(seed, flags).c_str());
    }
    std::fflush(stdout);
    if (seed == last) break;  // last may be UINT64_MAX
  }
  close(log_fd);
  unlink(log_path);
  uint64_t failed = 0;
  for (const auto& [outcome, seeds] : bad) failed += seeds.size();
  std::printf("hal-check: %" PRIu64 " of %" PRIu64 " seed(s) failed", failed,
              done);
  for (const auto& [outcome, seeds] : bad) {
    std::printf("; %s:", outcome.c_str());
    for (uint64_t s : seeds) std::printf(" %" PRIu64, s);
  }
  std::printf("\n");
  if (failed == 0 && nothing_ran == done) {
    std::printf(
        "hal-check: nothing ran in any seed (filter or skips)\nRESULT: FAIL\n");
    return kExitNothingRan;
  }
  std::printf(failed ? "RESULT: FAIL\n" : "RESULT: PASS\n");
  return failed ? kExitFail : 0;
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
  double seed_timeout = 300;
  std::vector<std::string> gtest_flags;
  std::vector<char*> gtest_args = {argv[0]};
  hal::cts::RegisterBuiltinBackends();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) {
      uri = arg.substr(9);
    } else if (arg.rfind("--seeds=", 0) == 0) {
      seeds = arg.substr(8);
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

  if (!seeds.empty()) {
    uint64_t first = 0, last = 0;
    auto dots = seeds.find("..");
    if (dots == std::string::npos || !ParseU64(seeds.substr(0, dots), &first) ||
        !ParseU64(seeds.substr(dots + 2), &last) || first > last) {
      return Usage(
          ("--seeds wants A..B with A <= B, got '" + seeds + "'").c_str());
    }
    if (!run.seed_env.empty())
      setenv(run.seed_env.c_str(), std::to_string(first).c_str(), 1);
    if (int rc = CheckDevice(run.RunUri(first))) return rc;
    if (json_stdout || !json_path.empty()) {
      return Usage("--json reports one run; it does not go with --seeds");
    }
    return SweepSeeds(run, first, last, seed_timeout, gtest_flags);
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
  return ok ? 0 : kExitFail;
}
