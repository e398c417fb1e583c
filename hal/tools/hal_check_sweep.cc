#include "hal/tools/hal_check_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/core/fault_plan.h"
#include "sim/core/sim_random.h"

extern char** environ;

namespace hal::tools {

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

std::string RunSetup::RunUri(uint64_t run_seed,
                             const std::string& faults) const {
  hal::DeviceUri u = base;
  if (!backend->seed_param.empty()) {
    u.params[backend->seed_param] = std::to_string(run_seed);
    std::stringstream items(faults);
    for (std::string item; std::getline(items, item, ',');) {
      auto eq = item.find('=');
      if (eq != std::string::npos) {
        u.params[item.substr(0, eq)] = item.substr(eq + 1);
      }
    }
  }
  return u.ToString();
}

std::string RunSetup::EnvPrefix(uint64_t run_seed) const {
  std::string out;
  if (!seed_env.empty()) {
    out += seed_env + "=" + std::to_string(run_seed) + " ";
  }
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

std::string RunSetup::Replay(uint64_t run_seed,
                             const std::string& extra) const {
  return EnvPrefix(run_seed) + ShellQuote(program) + " " +
         ShellQuote("--device=" + RunUri(run_seed)) + extra;
}

std::string SwarmPlan(uint64_t seed, const std::vector<std::string>& faults) {
  hal::sim::SimRandom random(seed ^ 0x5157A4D5EEDull);
  std::string plan;
  auto add = [&plan](const std::string& name, uint64_t value) {
    if (!plan.empty()) plan += ",";
    plan += name + "=" + std::to_string(value);
  };
  static const uint64_t kRates[] = {100, 1000, 10000, 50000};
  // BUGGIFY in the drivers' own code (hal/buggify.h), half of the seeds.
  if (random.Below(2) == 0) add("buggify", seed);
  for (const std::string& name : faults) {
    if (random.Below(2) == 0) continue;
    if (name == "lose_device_at") {
      add(name, 1000000 + random.Below(49000000));
    } else if (name == "late_signal_ppm") {
      add(name, kRates[random.Below(4)]);
      add("late_signal_us", 10 + random.Below(1000));
    } else {
      add(name, kRates[random.Below(4)]);
    }
  }
  return plan;
}

namespace {

volatile sig_atomic_t g_child_group = 0;

void KillChildAndExit(int sig) {
  if (g_child_group > 0) kill(-g_child_group, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The last `n` non-empty lines of `text`.
std::vector<std::string> TailLines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  for (const std::string& line : Lines(text)) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  return lines;
}

// The failure block of the child's table: from the first "FAILED: " line to
// the trace hash or RESULT line.
std::vector<std::string> FailureLines(const std::string& text) {
  std::vector<std::string> lines;
  bool in_block = false;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("FAILED: ", 0) == 0) in_block = true;
    if (line.rfind("trace hash: ", 0) == 0 || line.rfind("RESULT: ", 0) == 0) {
      in_block = false;
    }
    if (in_block) lines.push_back(line);
  }
  return lines;
}

struct ChildResult {
  std::string outcome;  // ok, FAIL, CRASH, HANG, ERROR, nothing ran
  std::string detail;
  int exit_code = -1;  // when it exited
  double secs = 0;
  std::string log;  // stdout and stderr
};

// Runs this program with `args` (after argv[0]) and the environment with
// `env` ("NAME=VALUE", replacing any NAME) in its own process group; kills
// the group after `timeout_s`.
ChildResult RunChild(const RunSetup& run, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, double timeout_s) {
  ChildResult result;
  char log_path[] = "/tmp/hal-check-seed-XXXXXX";
  int log_fd = mkostemp(log_path, O_CLOEXEC);
  if (log_fd < 0) {
    result.outcome = "ERROR";
    result.detail = std::string("mkstemp: ") + std::strerror(errno);
    return result;
  }
  // Everything the child needs is built here: between fork and exec it
  // calls only async-signal-safe functions (the parent may have threads,
  // e.g. a vendor-API simulator's, holding the allocator's lock).
  std::vector<std::string> all = {run.program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const std::string& kv : env) {
      const size_t n = kv.find('=') + 1;
      if (std::strncmp(*e, kv.c_str(), n) == 0) replaced = true;
    }
    if (!replaced) env_strings.push_back(*e);
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
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
  int status = 0;
  if (pid < 0) {
    result.outcome = "ERROR";
    result.detail = std::string("fork: ") + std::strerror(errno);
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
      result.outcome = "HANG";
      char buf[64];
      std::snprintf(buf, sizeof(buf), "still running after %g s", timeout_s);
      result.detail = buf;
    } else if (status != -1 && WIFSIGNALED(status)) {
      result.outcome = "CRASH";
      result.detail = std::string("signal ") +
                      std::to_string(WTERMSIG(status)) + " (" +
                      strsignal(WTERMSIG(status)) + ")";
    } else if (status == -1 || !WIFEXITED(status)) {
      result.outcome = "ERROR";
      result.detail = "lost the child";
    } else {
      result.exit_code = WEXITSTATUS(status);
      switch (WEXITSTATUS(status)) {
        case 0:
          result.outcome = "ok";
          break;
        case kExitFail:
          result.outcome = "FAIL";
          break;
        case kExitNothingRan:
          result.outcome = "nothing ran";
          break;
        default:
          result.outcome = "ERROR";
          result.detail = "exit status " + std::to_string(WEXITSTATUS(status));
      }
    }
  }
  result.secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  result.log = text.str();
  close(log_fd);
  unlink(log_path);
  return result;
}

// A swarm run's verdict: tests may fail from the planned faults; the seed
// fails on a crash, a hang, an oracle report or a wait that timed out.
std::string SwarmVerdict(const ChildResult& r) {
  // A planned allocation fault may hit the device's own creation: the run
  // cannot start, which is what the fault asked for.
  if (r.exit_code == kExitNoDevice &&
      r.log.find("RESOURCE_EXHAUSTED") != std::string::npos) {
    return "ok";
  }
  if (r.outcome == "CRASH" || r.outcome == "HANG" || r.outcome == "ERROR") {
    return r.outcome;
  }
  if (r.log.find("an oracle reported") != std::string::npos) return "ORACLE";
  if (r.log.find("liveness:") != std::string::npos ||
      r.log.find("semaphore wait timed out") != std::string::npos ||
      r.log.find("semaphores timed out") != std::string::npos) {
    return "LIVENESS";
  }
  return r.outcome == "nothing ran" ? r.outcome : "ok";
}

// The log lines behind an ORACLE or LIVENESS verdict, each with the test
// that was running (at most `n`).
std::vector<std::string> VerdictLines(const std::string& log, size_t n) {
  std::vector<std::string> out;
  std::string test;
  for (const std::string& line : Lines(log)) {
    if (line.rfind("[ RUN      ] ", 0) == 0) test = line.substr(13);
    if (line.find("an oracle reported") != std::string::npos ||
        line.find("timed out") != std::string::npos) {
      size_t start = line.find_first_not_of(' ');
      std::string entry = test + ": " + line.substr(start);
      if (!out.empty() && out.back() == entry) continue;  // gtest's echo
      out.push_back(entry);
      if (out.size() == n) break;
    }
  }
  return out;
}

bool Failing(const std::string& verdict) {
  return verdict != "ok" && verdict != "nothing ran";
}

// The arguments and environment of a run of `seed` under `plan` (a swarm
// plan or "").
void RunArgs(const RunSetup& run, uint64_t seed, const std::string& plan,
             const std::vector<std::string>& flags,
             std::vector<std::string>* args, std::vector<std::string>* env) {
  // "buggify=N" is HAL_BUGGIFY for the child; the rest is the simulator's.
  std::string faults, buggify;
  std::stringstream items(plan);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.rfind("buggify=", 0) == 0) {
      buggify = item.substr(8);
    } else {
      faults += (faults.empty() ? "" : ",") + item;
    }
  }
  *args = {"--device=" + run.RunUri(seed, faults), "--verbose"};
  args->insert(args->end(), flags.begin(), flags.end());
  env->clear();
  if (!run.seed_env.empty()) {
    env->push_back(run.seed_env + "=" + std::to_string(seed));
    if (!faults.empty()) env->push_back("HALSIM_FAULTS=" + faults);
  }
  if (!buggify.empty()) env->push_back("HAL_BUGGIFY=" + buggify);
}

std::string FlagsText(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) out += " " + ShellQuote(f);
  return out;
}

// --- Determinism. ---

std::vector<std::string> SortedFiles(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first difference between the traces of two runs (directories of
// per-test traces, or one file each), or "" when they are equal.
std::string FirstTraceDifference(const std::string& a, const std::string& b) {
  std::vector<std::string> files_a = SortedFiles(a), files_b = SortedFiles(b);
  if (files_a.empty() && files_b.empty()) {
    return "no trace was written (does the device keep one?)";
  }
  for (size_t i = 0; i < std::max(files_a.size(), files_b.size()); ++i) {
    if (i >= files_a.size() || i >= files_b.size() ||
        files_a[i] != files_b[i]) {
      return "the runs traced different devices: " +
             (i < files_a.size() ? files_a[i] : "(none)") + " vs " +
             (i < files_b.size() ? files_b[i] : "(none)");
    }
    std::vector<std::string> la = Lines(ReadFile(a + "/" + files_a[i]));
    std::vector<std::string> lb = Lines(ReadFile(b + "/" + files_b[i]));
    for (size_t k = 0; k < std::max(la.size(), lb.size()); ++k) {
      const std::string x = k < la.size() ? la[k] : "(end of trace)";
      const std::string y = k < lb.size() ? lb[k] : "(end of trace)";
      if (x != y) {
        return files_a[i] + " line " + std::to_string(k + 1) +
               " differs:\n      run 1: " + x + "\n      run 2: " + y;
      }
    }
  }
  return "";
}

void RemoveTree(const std::string& dir) {
  for (const std::string& f : SortedFiles(dir)) {
    unlink((dir + "/" + f).c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace

int SweepSeeds(const RunSetup& run, const SweepOptions& options) {
  signal(SIGINT, KillChildAndExit);
  signal(SIGTERM, KillChildAndExit);
  signal(SIGHUP, KillChildAndExit);
  const bool swarm = options.mode == SweepMode::kSwarm;
  const bool twice = options.mode == SweepMode::kDeterminism;
  // 0 when the range is all of uint64
  const uint64_t count = options.last - options.first + 1;
  std::map<std::string, std::vector<uint64_t>> bad;  // outcome -> seeds
  uint64_t nothing_ran = 0, done = 0;
  for (uint64_t seed = options.first;; ++seed) {
    ++done;
    const std::string plan =
        swarm ? SwarmPlan(seed, run.backend->swarm_faults) : "";
    std::vector<std::string> args, env;
    RunArgs(run, seed, plan, options.gtest_flags, &args, &env);
    std::string outcome, detail;
    ChildResult r;
    if (twice) {
      char dir[] = "/tmp/hal-check-traces-XXXXXX";
      if (!mkdtemp(dir)) {
        std::perror("hal-check: mkdtemp");
        return kExitFail;
      }
      const std::string runs[2] = {std::string(dir) + "/1",
                                   std::string(dir) + "/2"};
      for (const std::string& out : runs) {
        mkdir(out.c_str(), 0700);
        std::vector<std::string> run_env = env;
        if (!run.backend->trace_param.empty()) {
          run_env.push_back("HAL_CHECK_TRACE_DIR=" + out);
        } else {
          run_env.push_back("HALSIM_TRACE=" + out + "/process.trace");
        }
        r = RunChild(run, args, run_env, options.timeout_s);
        if (r.outcome == "CRASH" || r.outcome == "HANG" ||
            r.outcome == "ERROR") {
          break;
        }
      }
      if (r.outcome == "CRASH" || r.outcome == "HANG" || r.outcome == "ERROR") {
        outcome = r.outcome;
        detail = r.detail;
      } else {
        detail = FirstTraceDifference(runs[0], runs[1]);
        outcome = detail.empty() ? "same" : "DIFFERS";
        if (r.outcome == "nothing ran") outcome = r.outcome;
      }
      RemoveTree(runs[0]);
      RemoveTree(runs[1]);
      rmdir(dir);
    } else {
      r = RunChild(run, args, env, options.timeout_s);
      outcome = swarm ? SwarmVerdict(r) : r.outcome;
      detail = r.detail;
    }
    if (outcome == "nothing ran") ++nothing_ran;
    std::printf(
        "[%" PRIu64 "/%" PRIu64 "] seed %" PRIu64 " %s (%.1f s)%s%s%s%s\n",
        done, count, seed, outcome.c_str(), r.secs,
        detail.empty() || outcome == "DIFFERS" ? "" : ": ",
        outcome == "DIFFERS" ? "" : detail.c_str(), swarm ? " plan: " : "",
        swarm ? (plan.empty() ? "(no faults)" : plan.c_str()) : "");
    const bool failed =
        outcome != "ok" && outcome != "same" && outcome != "nothing ran";
    if (failed) {
      bad[outcome].push_back(seed);
      if (outcome == "DIFFERS") {
        std::printf("    %s\n", detail.c_str());
      } else {
        // What failed, or what was running when it crashed or hung.
        std::vector<std::string> lines =
            outcome == "ORACLE" || outcome == "LIVENESS"
                ? VerdictLines(r.log, 6)
                : FailureLines(r.log);
        if (lines.empty() || (outcome != "FAIL" && outcome != "ORACLE" &&
                              outcome != "LIVENESS")) {
          lines = TailLines(r.log, 8);
        }
        for (const auto& l : lines) std::printf("    %s\n", l.c_str());
      }
      const std::string mode = swarm   ? " --swarm="
                               : twice ? " --determinism="
                                       : "";
      hal::tools::RunSetup base = run;
      std::string replay =
          mode.empty()
              ? run.Replay(seed, FlagsText(options.gtest_flags))
              : run.EnvPrefix(seed) + ShellQuote(run.program) + " " +
                    ShellQuote("--device=" + run.base.ToString()) + mode +
                    std::to_string(seed) + ".." + std::to_string(seed) +
                    FlagsText(options.gtest_flags);
      std::printf("  replay the seed: %s\n", replay.c_str());
      if (swarm) {
        std::printf("  shrink it: %s\n",
                    (run.EnvPrefix(seed) + ShellQuote(run.program) + " " +
                     ShellQuote("--device=" + run.base.ToString()) +
                     " --swarm --minimize=" + std::to_string(seed) +
                     FlagsText(options.gtest_flags))
                        .c_str());
      }
    }
    std::fflush(stdout);
    if (seed == options.last) break;  // last may be UINT64_MAX
  }
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

int MinimizeSwarmSeed(const RunSetup& run, uint64_t seed,
                      const SweepOptions& options) {
  signal(SIGINT, KillChildAndExit);
  signal(SIGTERM, KillChildAndExit);
  signal(SIGHUP, KillChildAndExit);
  auto verdict_of = [&](const std::string& plan,
                        const std::vector<std::string>& flags,
                        ChildResult* out) {
    std::vector<std::string> args, env;
    RunArgs(run, seed, plan, flags, &args, &env);
    *out = RunChild(run, args, env, options.timeout_s);
    return SwarmVerdict(*out);
  };
  std::vector<std::string> items;
  {
    std::stringstream in(SwarmPlan(seed, run.backend->swarm_faults));
    for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  ChildResult r;
  const std::string target = verdict_of(join(items), options.gtest_flags, &r);
  std::printf("seed %" PRIu64 ": %s with plan %s\n", seed, target.c_str(),
              items.empty() ? "(no faults)" : join(items).c_str());
  if (!Failing(target)) {
    std::printf("hal-check: swarm seed %" PRIu64
                " does not fail; nothing to shrink\n",
                seed);
    return 0;
  }
  // The tests that failed, or that were running when it crashed or hung.
  std::vector<std::string> tests;
  std::string running;
  for (const std::string& line : Lines(r.log)) {
    if (line.rfind("[ RUN      ] ", 0) == 0) running = line.substr(13);
    if (line.rfind("[       OK ] ", 0) == 0) running.clear();
    if (line.rfind("[  FAILED  ] ", 0) == 0 &&
        line.find(" ms)") != std::string::npos) {
      std::string t = line.substr(13, line.find(' ', 13) - 13);
      if (std::find(tests.begin(), tests.end(), t) == tests.end()) {
        tests.push_back(t);
      }
    }
  }
  if (!running.empty()) tests.insert(tests.begin(), running);
  // Drop each plan item that the failure does not need.
  for (size_t i = 0; i < items.size();) {
    std::vector<std::string> fewer = items;
    fewer.erase(fewer.begin() + static_cast<long>(i));
    if (verdict_of(join(fewer), options.gtest_flags, &r) == target) {
      std::printf("  without %s: still %s\n", items[i].c_str(), target.c_str());
      items = fewer;
    } else {
      ++i;
    }
  }
  // One test alone, when one reproduces it.
  std::vector<std::string> flags = options.gtest_flags;
  for (const std::string& test : tests) {
    std::vector<std::string> one = options.gtest_flags;
    one.erase(std::remove_if(one.begin(), one.end(),
                             [](const std::string& f) {
                               return f.rfind("--gtest_filter=", 0) == 0;
                             }),
              one.end());
    one.push_back("--gtest_filter=" + test);
    if (verdict_of(join(items), one, &r) == target) {
      std::printf("  %s alone: still %s\n", test.c_str(), target.c_str());
      flags = one;
      break;
    }
  }
  const std::string plan = join(items);
  std::vector<std::string> args, env;
  RunArgs(run, seed, plan, flags, &args, &env);
  std::string command = run.EnvPrefix(seed);
  for (const std::string& kv : env) {
    if (kv.rfind(run.seed_env + "=", 0) == 0 && !run.seed_env.empty()) continue;
    const size_t eq = kv.find('=');
    command += kv.substr(0, eq + 1) + ShellQuote(kv.substr(eq + 1)) + " ";
  }
  command +=
      ShellQuote(run.program) + " " + ShellQuote(args[0]) + FlagsText(flags);
  std::printf(
      "minimized (%s; tests may fail from the faults, the %s is the "
      "finding):\n  %s\n",
      plan.empty() ? "no faults needed" : ("plan " + plan).c_str(),
      target.c_str(), command.c_str());
  return kExitFail;
}

}  // namespace hal::tools
