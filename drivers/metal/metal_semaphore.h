// MetalSemaphore: a HAL timeline semaphore over a MTLSharedEvent.
// Objective-C++ only: included from drivers/metal/*.mm, never from plain
// C++.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#include <atomic>
#include <memory>
#include <mutex>

#import "Metal/Metal.h"
#include "hal/semaphore.h"

namespace hal::metal {

// What a listener block holds of its semaphore: a block that never fires
// (its command buffer failed) stays with the event, which the semaphore
// holds, so a reference would be a cycle. The semaphore clears it when it
// goes; a block that fires holds the lock while it signals.
struct SemaphoreToken {
  std::recursive_mutex mutex;
  Semaphore* semaphore;
};

// Host signals set the event's signaledValue; a failure raises it to
// UINT64_MAX so that every wait encoded on it is released.
class MetalSemaphore final : public Semaphore {
 public:
  MetalSemaphore(id<MTLSharedEvent> event, uint64_t initial);
  id<MTLSharedEvent> event() const { return event_; }
  const std::shared_ptr<SemaphoreToken>& token() const { return token_; }
  // The highest value that work committed already will signal.
  uint64_t pending_signal() const { return pending_signal_.load(); }
  // Raises pending_signal() to `value` (never lowers it). Any thread.
  void NoteCommittedSignal(uint64_t value);

 protected:
  ~MetalSemaphore() override;
  void OnSignaled(uint64_t value) override;
  void OnFailed(const Status&) override;

 private:
  id<MTLSharedEvent> event_;  // retained
  std::shared_ptr<SemaphoreToken> token_;
  std::atomic<uint64_t> pending_signal_{0};
};

// `s` as a MetalSemaphore, or nullptr for a semaphore of another driver.
MetalSemaphore* AsMetal(Semaphore* s);

}  // namespace hal::metal
