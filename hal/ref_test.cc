#include "hal/ref.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace hal {
namespace {

struct Counted : RefCounted {
  explicit Counted(int* d) : destroyed(d) {}
  ~Counted() override { ++*destroyed; }
  int* destroyed;
};

TEST(Ref, AdoptCopyMoveRelease) {
  int destroyed = 0;
  {
    Ref<Counted> a = MakeRef<Counted>(&destroyed);
    EXPECT_EQ(a->ref_count_for_testing(), 1u);
    Ref<Counted> b = a;
    EXPECT_EQ(a->ref_count_for_testing(), 2u);
    Ref<Counted> c = std::move(b);
    EXPECT_FALSE(b);
    EXPECT_EQ(a->ref_count_for_testing(), 2u);
    Ref<RefCounted> base = c;
    EXPECT_EQ(a->ref_count_for_testing(), 3u);
  }
  EXPECT_EQ(destroyed, 1);
}

TEST(Ref, ConcurrentCopiesDestroyOnce) {
  int destroyed = 0;
  {
    Ref<Counted> a = MakeRef<Counted>(&destroyed);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([a] {
        for (int i = 0; i < 10000; ++i) {
          Ref<Counted> copy = a;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(a->ref_count_for_testing(), 1u);
  }
  EXPECT_EQ(destroyed, 1);
}

}  // namespace
}  // namespace hal
