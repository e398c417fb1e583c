/* The AMDGPU driver's device library as one translation unit: a code
 * object carries one metadata note (NT_AMDGPU_METADATA) that lists every
 * kernel, so the library's sources are compiled together for gfx90a (and
 * the same way natively for the simulator) rather than linked from
 * separate objects, whose notes would not merge.
 */
#include "drivers/amdgpu/device/amdgpu_blit_kernels.c"
#include "drivers/amdgpu/device/amdgpu_dispatch_patch.c"
