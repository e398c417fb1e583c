// GNUstep's GSVersionMacros.h includes <objc/blocks_runtime.h> (libobjc2's
// header); with GCC's Objective-C runtime the blocks runtime is
// libBlocksRuntime, whose header is <Block.h>.
#pragma once
#include <Block.h>
