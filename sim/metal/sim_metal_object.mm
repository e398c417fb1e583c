// HalSimMTLObject (sim_metal_object.h): retain, release and the zombies.
#include "sim/metal/sim_metal_object.h"

#include <deque>
#include <mutex>

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

namespace {
constexpr size_t kMaxZombies = 4096;
std::mutex& ZombieMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::deque<HalSimMTLObject*>& Zombies() {
  static auto* z = new std::deque<HalSimMTLObject*>();
  return *z;
}
}  // namespace

@implementation HalSimMTLObject
- (instancetype)init {
  if ((self = [super init])) {
    refs_ = new std::atomic<long>(1);
    CountAlloc(object_getClassName(self));
  }
  return self;
}
- (id)retain {
  if (zombie_) {
    Violation("retain of a released %s", object_getClassName(self));
    return self;
  }
  refs_->fetch_add(1);
  return self;
}
- (NSUInteger)retainCount {
  return zombie_ ? 0 : (NSUInteger)refs_->load();
}
- (oneway void)release {
  if (zombie_) {
    Violation("over-release of a %s (released more often than retained)",
              object_getClassName(self));
    return;
  }
  if (refs_->fetch_sub(1) != 1) return;
  // The teardown frees memory or a queue through the engine.
  HALSIM_METAL_ENTER();
  zombie_ = YES;
  CountFree(object_getClassName(self));
  [self simTeardown];
  HalSimMTLObject* evict = nil;
  {
    std::lock_guard<std::mutex> lock(ZombieMutex());
    Zombies().push_back(self);
    if (Zombies().size() > kMaxZombies) {
      evict = Zombies().front();
      Zombies().pop_front();
    }
  }
  if (evict) [evict simFree];
}
- (void)simFree {
  delete refs_;
  refs_ = nullptr;
  [super release];
}
- (void)simTeardown {
}
@end
