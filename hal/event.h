// Events: split barriers inside a command buffer (signal in one place, wait
// in a later one). Events order commands of one submission; they are not a
// host-visible synchronization primitive (use semaphores for that).
#pragma once

#include "hal/ref.h"

namespace hal {

class Event : public RefCounted {
 public:
  static Ref<Event> Create() { return Ref<Event>::Adopt(new Event()); }

 protected:
  Event() = default;
};

}  // namespace hal
