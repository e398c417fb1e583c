// Generated from hal/cts/kernels/*.c with the MSL macro layer of hal_kernel.h.
#include <metal_stdlib>
using namespace metal;

