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
  HAL_RETURN_IF_ERROR(CheckNotFreed(*buffer->allocated_buffer(), what));
  // CommandBuffer::ResolveRef's arithmetic, its checks done above (not a
  // call: that would resolve both ranges again). The ranges fit, so nothing
  // overflows: each offset is at most its buffer's length, within the
  // allocation.
  const DeviceSize base = ref.is_slot() ? table[ref.slot].offset : 0;
  return ResolvedRef{buffer->allocated_buffer(),
                     buffer->byte_offset() + base + ref.offset,
                     length != kWholeBuffer ? length : resolved};
}

Status NotCommittedError(const ResolvedRef& ref, const char* what) {
  HAL_RETURN_IF_ERROR(CheckNotFreed(*ref.buffer, what));
  return FailedPreconditionError(
      "%s: buffer memory is not committed (%s); order the use after its "
      "queue_alloca with a semaphore",
      what, BufferStateName(ref.buffer->state()));
}

}  // namespace hal::utils
