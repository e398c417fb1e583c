#include "drivers/sim/sim_range.h"

#include <typeinfo>

#include "drivers/sim/sim_allocator.h"
#include "hal/utils/buffer_ref_resolve.h"

namespace hal::sim {

StatusOr<SimRange> ResolveSimRange(const BufferRef& ref, BindingTable table,
                                   DeviceSize length, const char* what) {
  HAL_ASSIGN_OR_RETURN(ResolvedRef r,
                       utils::ResolveBufferRef(ref, table, length, what));
  // SimBuffer is final: a type check is enough (no dynamic_cast per binding).
  if (typeid(*r.buffer) != typeid(SimBuffer)) [[unlikely]] {
    return InvalidArgumentError("%s: buffer does not belong to a sim device",
                                what);
  }
  auto* buffer = static_cast<SimBuffer*>(r.buffer);
  uint8_t* base = buffer->host_storage();
  // An empty buffer is committed without memory (base stays null).
  HAL_RETURN_IF_ERROR(
      utils::CheckCommitted(r, base || buffer->committed(), what));
  return SimRange{base ? base + r.offset : nullptr, r.length};
}

}  // namespace hal::sim
