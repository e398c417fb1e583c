// MetalSemaphore (metal_semaphore.h): the HAL payload and the shared event
// follow each other.
#include "drivers/metal/metal_semaphore.h"

namespace hal::metal {

MetalSemaphore::MetalSemaphore(id<MTLSharedEvent> event, uint64_t initial)
    : Semaphore(initial),
      event_([event retain]),
      token_(std::make_shared<SemaphoreToken>()) {
  token_->semaphore = this;
  if (initial) [event_ setSignaledValue:initial];
}

void MetalSemaphore::NoteCommittedSignal(uint64_t value) {
  uint64_t v = pending_signal_.load();
  while (v < value && !pending_signal_.compare_exchange_weak(v, value)) {
  }
}

MetalSemaphore::~MetalSemaphore() {
  {
    std::lock_guard<std::recursive_mutex> lock(token_->mutex);
    token_->semaphore = nullptr;
  }
  [event_ release];
}

void MetalSemaphore::OnSignaled(uint64_t value) {
  if ([event_ signaledValue] < value) [event_ setSignaledValue:value];
}

// Releases every encoded wait on the event: the operations behind them
// find the failed wait in their completion handler and fail their
// signals with its status.
void MetalSemaphore::OnFailed(const Status&) {
  [event_ setSignaledValue:UINT64_MAX];
}

MetalSemaphore* AsMetal(Semaphore* s) {
  return dynamic_cast<MetalSemaphore*>(s);
}

}  // namespace hal::metal
