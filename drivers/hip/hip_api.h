// The HIP implementation of the GPU-stream API layer (drivers/gpu/gpu_api.h):
// one hipDevice_t. HIP keeps a current device per thread, so every call
// makes this device current on the calling thread first (hipSetDevice), and
// any thread may call in.
#pragma once

#include <hip/hip_runtime_api.h>

#include <memory>

#include "drivers/gpu/gpu_api.h"
#include "drivers/hip/hip_dynamic_symbols.h"

namespace hal::hip {

class HipApi final : public gpu::GpuApi {
 public:
  // Reads the device's default memory pool when it has one.
  static StatusOr<std::shared_ptr<HipApi>> Create(
      std::shared_ptr<const HipSymbols> syms, hipDevice_t device);
  ~HipApi() override = default;

  const HipSymbols* syms() const { return syms_.get(); }
  hipDevice_t device() const { return device_; }

  const char* name() const override { return "hip"; }
  HAL_GPU_API_OVERRIDES
  bool SupportsAsyncAlloc() const override { return pool_ != nullptr; }
  ExecutableFormat module_format() const override {
    return ExecutableFormat::kHipHsaco;
  }

 private:
  HipApi(std::shared_ptr<const HipSymbols> syms, hipDevice_t device)
      : syms_(std::move(syms)), device_(device) {}
  Status Initialize();

  std::shared_ptr<const HipSymbols> syms_;
  hipDevice_t device_;
  hipMemPool_t pool_ = nullptr;  // the device's default pool, when supported
};

}  // namespace hal::hip
