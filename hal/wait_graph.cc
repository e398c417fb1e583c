#include "hal/wait_graph.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "hal/device.h"

namespace hal {
namespace {

struct Point {
  const Semaphore* semaphore;  // null once destroyed
  uint64_t value;
};

struct Entry {
  uint64_t id;
  const void* device;
  const char* kind;
  QueueAffinity affinity;
  std::vector<Point> waits, signals;
};

struct Graph {
  std::mutex mutex;
  std::vector<Entry> entries;  // submission order
  uint64_t next_id = 1;
  // Short names for semaphores in reports (s1, s2, ...), by first sight.
  std::map<const Semaphore*, uint64_t> names;
  uint64_t next_name = 1;
  bool full = false;  // stopped recording once (reported)
};

std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_lifetime_violations{0};

Graph& G() {
  static Graph* graph = new Graph();  // never destroyed: used by ~Semaphore
  return *graph;
}

// Lock-free (no semaphore mutex): a failed semaphore counts as resolved.
bool Resolved(const Point& p) {
  if (!p.semaphore) return true;
  uint64_t payload;
  if (!p.semaphore->LoadPayload(&payload)) return true;
  return payload >= p.value;
}

bool Finished(const Entry& e) {
  for (const Point& p : e.signals) {
    if (!Resolved(p)) return false;
  }
  return true;
}

bool Runnable(const Entry& e) {
  for (const Point& p : e.waits) {
    if (!Resolved(p)) return false;
  }
  return true;
}

void PruneLocked(Graph& g) {
  std::erase_if(g.entries, [](const Entry& e) { return Finished(e); });
}

std::string NameLocked(Graph& g, const Semaphore* s) {
  if (!s) return "(destroyed)";
  auto [it, added] = g.names.emplace(s, g.next_name);
  if (added) ++g.next_name;
  return "s" + std::to_string(it->second);
}

std::string PayloadText(const Semaphore* s) {
  if (!s) return "gone";
  uint64_t payload;
  if (!s->LoadPayload(&payload)) return "failed";
  return std::to_string(payload);
}

std::string DescribeLocked(Graph& g, const void* device) {
  std::string out;
  char line[160];
  for (const Entry& e : g.entries) {
    if (device && e.device != device) continue;
    std::snprintf(line, sizeof(line), "  op#%" PRIu64 " %s (queues 0x%llx)%s\n",
                  e.id, e.kind, (unsigned long long)e.affinity,
                  Runnable(e) ? " RUNNABLE, not finished" : "");
    out += line;
    for (const Point& p : e.waits) {
      const bool reached = Resolved(p);
      out += "    waits " + NameLocked(g, p.semaphore) +
             " >= " + std::to_string(p.value) + " (payload " +
             PayloadText(p.semaphore) + (reached ? ", reached)" : ")");
      if (!reached) {
        // Which pending operation would get it there.
        std::string by;
        for (const Entry& o : g.entries) {
          for (const Point& q : o.signals) {
            if (q.semaphore == p.semaphore && q.value >= p.value) {
              by = "op#" + std::to_string(o.id) + " " + o.kind;
              break;
            }
          }
          if (!by.empty()) break;
        }
        out += by.empty() ? " <- no pending operation signals it (the host?)"
                          : " <- " + by;
      }
      out += "\n";
    }
    for (const Point& p : e.signals) {
      out += "    signals " + NameLocked(g, p.semaphore) + " -> " +
             std::to_string(p.value) + (Resolved(p) ? " (done)" : "") + "\n";
    }
  }
  return out;
}

}  // namespace

void EnableWaitGraph(bool enabled) { g_enabled.store(enabled); }
bool WaitGraphEnabled() { return g_enabled.load(std::memory_order_relaxed); }

void WaitGraphRecord(const void* device, const char* kind,
                     QueueAffinity affinity, SemaphoreList wait,
                     SemaphoreList signal) {
  if (!WaitGraphEnabled() || signal.empty()) return;
  Entry e{0, device, kind, affinity, {}, {}};
  for (const SemaphorePoint& p : wait)
    e.waits.push_back({p.semaphore, p.value});
  for (const SemaphorePoint& p : signal) {
    e.signals.push_back({p.semaphore, p.value});
  }
  Graph& g = G();
  std::lock_guard<std::mutex> lock(g.mutex);
  e.id = g.next_id++;
  PruneLocked(g);
  if (Finished(e)) return;
  // Pruning walks every entry: past this many pending operations the graph
  // stops growing (checks then cover the operations it holds), so that a
  // program with a huge backlog does not pay quadratic time.
  constexpr size_t kMaxEntries = 16384;
  if (g.entries.size() >= kMaxEntries) {
    if (!g.full) {
      g.full = true;
      std::fprintf(stderr,
                   "hal: wait graph: more than %zu operations pending; later "
                   "ones are not tracked\n",
                   kMaxEntries);
    }
    return;
  }
  g.entries.push_back(std::move(e));
}

void WaitGraphForget(const void* device) {
  Graph& g = G();
  std::lock_guard<std::mutex> lock(g.mutex);
  std::erase_if(g.entries,
                [device](const Entry& e) { return e.device == device; });
}

void WaitGraphSemaphoreDestroyed(const Semaphore* semaphore) {
  if (!WaitGraphEnabled()) return;
  Graph& g = G();
  std::lock_guard<std::mutex> lock(g.mutex);
  PruneLocked(g);
  std::string needed;
  for (Entry& e : g.entries) {
    for (auto* points : {&e.waits, &e.signals}) {
      for (Point& p : *points) {
        if (p.semaphore != semaphore) continue;
        if (!Resolved(p) && needed.empty()) {
          needed = "op#" + std::to_string(e.id) + " " + e.kind + " still " +
                   (points == &e.waits ? "waits on" : "has to signal") +
                   " it (value " + std::to_string(p.value) + ")";
        }
      }
    }
  }
  if (!needed.empty()) {
    g_lifetime_violations.fetch_add(1);
    std::fprintf(stderr,
                 "hal: wait graph: semaphore %s was destroyed while %s: the "
                 "driver released it before the operation finished\n%s",
                 NameLocked(g, semaphore).c_str(), needed.c_str(),
                 DescribeLocked(g, nullptr).c_str());
  }
  for (Entry& e : g.entries) {
    for (auto* points : {&e.waits, &e.signals}) {
      for (Point& p : *points) {
        if (p.semaphore == semaphore) p.semaphore = nullptr;
      }
    }
  }
  g.names.erase(semaphore);
}

uint64_t WaitGraphLifetimeViolations() { return g_lifetime_violations.load(); }

std::string DescribeWaitGraph(const void* device) {
  Graph& g = G();
  std::lock_guard<std::mutex> lock(g.mutex);
  PruneLocked(g);
  return DescribeLocked(g, device);
}

Status CheckWaitGraphLiveness(Device* device, std::chrono::milliseconds bound) {
  if (!WaitGraphEnabled()) return OkStatus();
  const auto deadline = std::chrono::steady_clock::now() + bound;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    {
      Graph& g = G();
      std::lock_guard<std::mutex> lock(g.mutex);
      PruneLocked(g);
      bool stuck = false;
      for (const Entry& e : g.entries) {
        if (e.device == device && Runnable(e)) stuck = true;
      }
      if (!stuck) return OkStatus();
      if (std::chrono::steady_clock::now() >= deadline) {
        return DeadlineExceededError(
            "liveness: an operation whose waits were all reached (or "
            "failed) did not finish within %lld ms; the wait-for graph:\n%s",
            (long long)bound.count(), DescribeLocked(g, device).c_str());
      }
    }
    // Idle or not (blocked work may remain), the device ran what it could.
    device->WaitIdle(Timeout::After(pause)).IgnoreError();
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace hal
