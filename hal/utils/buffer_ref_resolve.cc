#include "hal/utils/buffer_ref_resolve.h"

namespace hal::utils {

namespace {

Status CheckNotFreed(const Buffer& allocated, const char* what) {
  if (allocated.state() == BufferState::kFreed) {
    return FailedPreconditionError("%s: buffer used after its dealloca ran",
                                   what);
  }
  return OkStatus();
}

}  // namespace

StatusOr<ResolvedRef> ResolveBufferRef(const BufferRef& ref, BindingTable table,
                                       DeviceSize length, const char* what) {
  Buffer* buffer = ref.buffer;
  DeviceSize window = 0;
  if (ref.is_slot()) {
    if (ref.slot >= table.size()) {
      return InvalidArgumentError(
          "%s: binding table slot %u is missing (the table has %zu entries)",
          what, ref.slot, table.size());
    }
    const Binding& b = table[ref.slot];
    if (!b.buffer) {
      return InvalidArgumentError("%s: binding table slot %u is empty", what,
                                  ref.slot);
    }
    if (!ResolveRange(b.buffer->byte_length(), b.offset, b.length, &window)) {
      return OutOfRangeError(
          "%s: binding table slot %u range [%llu, +%llu) is outside its "
          "buffer of %llu bytes",
          what, ref.slot, (unsigned long long)b.offset,
          (unsigned long long)b.length,
          (unsigned long long)b.buffer->byte_length());
    }
    buffer = b.buffer;
  } else {
    window = buffer->byte_length();
  }
  DeviceSize resolved = 0;
  if (!ResolveRange(window, ref.offset, ref.length, &resolved) ||
      (length != kWholeBuffer && length > resolved)) {
    const DeviceSize shown = length != kWholeBuffer ? length : ref.length;
    if (ref.is_slot()) {
      return OutOfRangeError(
          "%s: range [%llu, +%llu) is outside binding slot %u of %llu bytes",
          what, (unsigned long long)ref.offset, (unsigned long long)shown,
          ref.slot, (unsigned long long)window);
    }
    return OutOfRangeError(
        "%s: range [%llu, +%llu) is outside the buffer of %llu bytes", what,
        (unsigned long long)ref.offset, (unsigned long long)shown,
        (unsigned long long)window);
  }
  // The ranges fit, so the arithmetic of ResolveRef cannot overflow: each
  // offset is at most its buffer's length, within the allocation.
  ResolvedRef r = CommandBuffer::ResolveRef(ref, table);
  if (length != kWholeBuffer) r.length = length;
  HAL_RETURN_IF_ERROR(CheckNotFreed(*r.buffer, what));
  return r;
}

Status CheckCommitted(const ResolvedRef& ref, bool committed,
                      const char* what) {
  if (committed) return OkStatus();
  HAL_RETURN_IF_ERROR(CheckNotFreed(*ref.buffer, what));
  return FailedPreconditionError(
      "%s: buffer memory is not committed (%s); order the use after its "
      "queue_alloca with a semaphore",
      what, BufferStateName(ref.buffer->state()));
}

}  // namespace hal::utils
