// MetalExecutable and MetalExecutableCache (metal_executable.h).
#include "drivers/metal/metal_executable.h"

namespace hal::metal {

MetalExecutable::MetalExecutable(ExecutableData& data,
                                 std::vector<uint32_t> constants)
    : Executable(data.format, std::move(data.functions), std::move(constants)) {
}

MetalExecutable::~MetalExecutable() {
  @autoreleasepool {
    for (id p : pipelines) [p release];
  }
}

MetalExecutableCache::MetalExecutableCache(id<MTLDevice> device)
    : device_([device retain]) {}

MetalExecutableCache::~MetalExecutableCache() { [device_ release]; }

bool MetalExecutableCache::CanPrepareFormatImpl(ExecutableFormat format) const {
  return format == ExecutableFormat::kMetalMsl;
}

StatusOr<Ref<Executable>> MetalExecutableCache::PrepareImpl(
    ExecutableData data, std::vector<uint32_t> constants) {
  if (!constants.empty()) {
    // MTLFunctionConstantValues would carry them; nothing here can check
    // that they reach a kernel (docs/drivers/metal.md).
    return UnimplementedError("Metal: specialization constants (MSL function "
                              "constants) are not implemented "
                              "(docs/drivers/metal.md, 'What is not done')");
  }
  @autoreleasepool {
    std::vector<id<MTLLibrary>> libraries;
    auto release_all = [&] {
      for (id l : libraries) [l release];
    };
    for (size_t i = 0; i < data.modules.size(); ++i) {
      const std::vector<uint8_t>& code = data.modules[i].code;
      NSString* source =
          [[[NSString alloc] initWithBytes:code.data()
                                    length:code.size()
                                  encoding:NSUTF8StringEncoding] autorelease];
      NSError* error = nil;
      id<MTLLibrary> library = source ? [device_ newLibraryWithSource:source
                                                              options:nil
                                                                error:&error]
                                      : nil;
      if (!library) {
        release_all();
        return InvalidArgumentError(
            "Metal: newLibraryWithSource: rejected module %zu: %s", i,
            error ? [[error localizedDescription] UTF8String]
                  : "not UTF-8 text");
      }
      libraries.push_back(library);
    }
    Ref<MetalExecutable> executable = Ref<MetalExecutable>::Adopt(
        new MetalExecutable(data, std::move(constants)));
    for (const FunctionInfo& f : executable->functions()) {
      id<MTLFunction> function = [libraries[f.module_ordinal]
          newFunctionWithName:[NSString stringWithUTF8String:f.name.c_str()]];
      if (!function) {
        release_all();
        return InvalidArgumentError("Metal: module %u has no kernel '%s'",
                                    f.module_ordinal, f.name.c_str());
      }
      NSError* error = nil;
      id<MTLComputePipelineState> pipeline =
          [device_ newComputePipelineStateWithFunction:function error:&error];
      [function release];
      if (!pipeline) {
        release_all();
        return InvalidArgumentError(
            "Metal: newComputePipelineStateWithFunction: failed for '%s': %s",
            f.name.c_str(),
            error ? [[error localizedDescription] UTF8String] : "");
      }
      executable->pipelines.push_back(pipeline);
    }
    release_all();
    return Ref<Executable>(std::move(executable));
  }
}

}  // namespace hal::metal
