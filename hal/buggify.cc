#include "hal/buggify.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hal {
namespace internal {

std::atomic<int> g_buggify_state{-1};

namespace {

constexpr int kSites = static_cast<int>(BuggifySite::kCount);
uint64_t g_seed = 0;
std::atomic<uint64_t> g_evaluations[kSites];
std::atomic<uint64_t> g_fired[kSites];

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t NameHash(const char* name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* p = name; *p; ++p) {
    h ^= static_cast<unsigned char>(*p);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

int BuggifyEnabledSlow() {
  const char* env = std::getenv("HAL_BUGGIFY");
  int state = 0;
  if (env && *env) {
    char* end = nullptr;
    g_seed = std::strtoull(env, &end, 10);
    state = *end == '\0' ? 1 : 0;
    if (state) {
      std::fprintf(stderr,
                   "hal: BUGGIFY on (HAL_BUGGIFY=%s); active sites:", env);
      for (int i = 0; i < kSites; ++i) {
        if (Mix(g_seed ^ NameHash(kBuggifySites[i])) % 4 == 0) {
          std::fprintf(stderr, " %s", kBuggifySites[i]);
        }
      }
      std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr,
                   "hal: HAL_BUGGIFY=%s is not a seed (a decimal number); "
                   "BUGGIFY stays off\n",
                   env);
    }
  }
  int expected = -1;
  g_buggify_state.compare_exchange_strong(expected, state);
  return g_buggify_state.load();
}

bool BuggifyFires(int site) {
  const uint64_t name = NameHash(kBuggifySites[site]);
  if (Mix(g_seed ^ name) % 4 != 0) return false;  // not active this run
  const uint64_t n =
      g_evaluations[site].fetch_add(1, std::memory_order_relaxed);
  if (Mix(g_seed ^ name ^ Mix(n + 1)) % 4 != 0) return false;
  g_fired[site].fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace internal

uint64_t BuggifyFired(BuggifySite site) {
  return internal::g_fired[static_cast<int>(site)].load();
}

}  // namespace hal
