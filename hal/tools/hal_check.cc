// hal-check: runs the conformance suite on one device and prints a table of
// areas (gtest suites) with passed/failed/skipped counts.
//
//   hal-check --device=sim://?queues=4 [--json[=FILE]] [--gtest_filter=...]
//   hal-check --device=sim://?queues=4 --seeds=0..999 [--gtest_filter=...]
//
// --seeds=A..B runs the suite once per seed (each in its own process) and
// prints the failing seeds; shard a long sweep by giving each machine its own
// range. The seed goes to `seed=N` in the URI for the simulator (sim://) and
// to the environment variable HALSIM_<SCHEME>_SEED for a driver over a
// vendor-API simulator (cuda:// -> HALSIM_CUDA_SEED, read by
// libhalsim_cuda.so).
//
// Exit status: 0 when every test passed or was skipped and every expected
// failure failed; 1 otherwise; 2 for bad arguments.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hal/cts/cts.h"
#include "hal/driver.h"
#include "hal/uri.h"

namespace {

struct AreaCounts {
  int passed = 0, failed = 0, skipped = 0, xfail = 0, xpass = 0;
  std::vector<std::string> failures;
};

class TableListener : public ::testing::EmptyTestEventListener {
 public:
  explicit TableListener(const hal::cts::Backend* backend) : backend_(backend) {}

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
        a.failures.push_back(full);
      }
    } else if (expected_fail) {
      ++a.xpass;
      a.failures.push_back(full + " (expected to fail, passed)");
    } else {
      ++a.passed;
    }
  }

  const std::map<std::string, AreaCounts>& areas() const { return areas_; }

 private:
  const hal::cts::Backend* backend_;
  std::map<std::string, AreaCounts> areas_;
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

std::string ToJson(const std::string& uri, const std::string& driver,
                   const std::map<std::string, AreaCounts>& areas, bool ok) {
  std::ostringstream o;
  o << "{\n  \"device\": \"" << JsonEscape(uri) << "\",\n  \"driver\": \""
    << JsonEscape(driver) << "\",\n  \"ok\": " << (ok ? "true" : "false")
    << ",\n  \"areas\": [";
  bool first = true;
  for (const auto& [name, a] : areas) {
    o << (first ? "\n" : ",\n") << "    {\"area\": \"" << JsonEscape(name)
      << "\", \"passed\": " << a.passed << ", \"failed\": " << a.failed
      << ", \"skipped\": " << a.skipped << ", \"expected_failures\": " << a.xfail
      << ", \"unexpected_passes\": " << a.xpass << ", \"failures\": [";
    for (size_t i = 0; i < a.failures.size(); ++i) {
      o << (i ? ", " : "") << "\"" << JsonEscape(a.failures[i]) << "\"";
    }
    o << "]}";
    first = false;
  }
  o << "\n  ]\n}\n";
  return o.str();
}

void PrintTable(std::ostream& out, const std::string& uri,
                const std::map<std::string, AreaCounts>& areas, bool ok) {
  char line[160];
  out << "\nhal-check: " << uri << "\n";
  std::snprintf(line, sizeof(line), "%-16s %7s %7s %8s %6s %6s\n", "area",
                "passed", "failed", "skipped", "xfail", "xpass");
  out << line;
  AreaCounts total;
  for (const auto& [name, a] : areas) {
    std::snprintf(line, sizeof(line), "%-16s %7d %7d %8d %6d %6d\n", name.c_str(),
                  a.passed, a.failed, a.skipped, a.xfail, a.xpass);
    out << line;
    total.passed += a.passed;
    total.failed += a.failed;
    total.skipped += a.skipped;
    total.xfail += a.xfail;
    total.xpass += a.xpass;
  }
  std::snprintf(line, sizeof(line), "%-16s %7d %7d %8d %6d %6d\n", "total",
                total.passed, total.failed, total.skipped, total.xfail,
                total.xpass);
  out << line;
  for (const auto& [name, a] : areas) {
    for (const auto& f : a.failures) out << "FAILED: " << f << "\n";
  }
  out << (ok ? "RESULT: PASS\n" : "RESULT: FAIL\n");
}

// Runs this program once per seed in [first, last]; returns the exit status.
int SweepSeeds(const std::string& uri, uint64_t first, uint64_t last,
               const std::vector<std::string>& gtest_flags) {
  auto parsed = hal::DeviceUri::Parse(uri);
  std::vector<uint64_t> failing;
  const bool in_uri = parsed->driver == "sim";
  std::string seed_env = "HALSIM_";
  for (char c : parsed->driver) seed_env += static_cast<char>(std::toupper(c));
  seed_env += "_SEED";
  for (uint64_t seed = first; seed <= last; ++seed) {
    hal::DeviceUri u = *parsed;
    if (in_uri) u.params["seed"] = std::to_string(seed);
    std::string device = "--device=" + u.ToString();
    std::string replay = in_uri ? "" : seed_env + "=" + std::to_string(seed) + " ";
    std::vector<std::string> args = {"/proc/self/exe", device};
    args.insert(args.end(), gtest_flags.begin(), gtest_flags.end());
    pid_t pid = fork();
    if (pid == 0) {
      if (!in_uri) setenv(seed_env.c_str(), std::to_string(seed).c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) {
        dup2(devnull, 1);
        dup2(devnull, 2);
      }
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      failing.push_back(seed);
      std::printf("seed %llu: FAIL (replay: %shal-check '%s')\n",
                  (unsigned long long)seed, replay.c_str(), device.c_str());
      std::fflush(stdout);
    }
    if (seed == last) break;  // last may be UINT64_MAX
  }
  std::printf("hal-check: %zu of %llu seed(s) failed", failing.size(),
              (unsigned long long)(last - first + 1));
  for (size_t i = 0; i < failing.size(); ++i) {
    std::printf("%s%llu", i ? ", " : ": ", (unsigned long long)failing[i]);
  }
  std::printf("\n");
  return failing.empty() ? 0 : 1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: hal-check [--device=URI] [--json[=FILE]] [--seeds=A..B] "
               "[--list-backends] [gtest flags]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string uri;
  std::string json_path;
  bool json_stdout = false;
  std::string seeds;
  std::vector<std::string> gtest_flags;
  std::vector<char*> gtest_args = {argv[0]};
  hal::cts::RegisterBuiltinBackends();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) {
      uri = arg.substr(9);
    } else if (arg.rfind("--seeds=", 0) == 0) {
      seeds = arg.substr(8);
    } else if (arg == "--json") {
      json_stdout = true;
    } else if (arg.rfind("--json=", 0) == 0) {
      json_path = arg.substr(7);
    } else if (arg == "--list-backends") {
      for (const auto& b : hal::cts::Backends()) {
        std::printf("%s\t%s\n", b.name.c_str(), b.default_uri.c_str());
      }
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    } else if (arg.rfind("--gtest_", 0) == 0) {
      gtest_args.push_back(argv[i]);
      gtest_flags.push_back(arg);
    } else {
      std::fprintf(stderr, "hal-check: unknown argument '%s'\n", argv[i]);
      return Usage();
    }
  }
  if (uri.empty()) uri = "sim";
  auto parsed = hal::DeviceUri::Parse(uri);
  if (!parsed.ok()) {
    std::fprintf(stderr, "hal-check: %s\n", parsed.status().ToString().c_str());
    return 2;
  }
  const hal::cts::Backend* backend = hal::cts::FindBackend(parsed->driver);
  if (!backend) {
    std::fprintf(stderr,
                 "hal-check: no conformance backend for driver '%s' in this "
                 "build (see --list-backends)\n",
                 parsed->driver.c_str());
    return 2;
  }
  if (!seeds.empty()) {
    unsigned long long first = 0, last = 0;
    char tail = 0;
    if (std::sscanf(seeds.c_str(), "%llu..%llu%c", &first, &last, &tail) != 2 ||
        first > last) {
      std::fprintf(stderr, "hal-check: --seeds wants A..B with A <= B, got '%s'\n",
                   seeds.c_str());
      return 2;
    }
    return SweepSeeds(uri, first, last, gtest_flags);
  }
  hal::cts::SetContext({backend, uri});

  int gtest_argc = static_cast<int>(gtest_args.size());
  gtest_args.push_back(nullptr);  // argv[argc] must be null
  ::testing::InitGoogleTest(&gtest_argc, gtest_args.data());
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  auto* table = new TableListener(backend);
  listeners.Append(table);
  if (json_stdout) delete listeners.Release(listeners.default_result_printer());

  // The exit status comes from the table below, which knows expected failures.
  int gtest_result = RUN_ALL_TESTS();
  (void)gtest_result;

  bool ok = true;
  for (const auto& [name, a] : table->areas()) {
    if (a.failed || a.xpass) ok = false;
  }
  std::string json = ToJson(uri, backend->name, table->areas(), ok);
  if (json_stdout) {
    std::cout << json;
  } else {
    PrintTable(std::cout, uri, table->areas(), ok);
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << json;
    if (!f) {
      std::fprintf(stderr, "hal-check: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return ok ? 0 : 1;
}
