// The CUDA implementation of the GPU-stream API layer (drivers/gpu/gpu_api.h):
// one CUdevice and its primary context. Every call pushes the context on the
// calling thread for its duration, so any thread may call in.
#pragma once

#include <cuda.h>

#include <memory>

#include "drivers/cuda/cuda_dynamic_symbols.h"
#include "drivers/gpu/gpu_api.h"

namespace hal::cuda {

class CudaApi final : public gpu::GpuApi {
 public:
  // Retains `device`'s primary context (released on destruction).
  static StatusOr<std::shared_ptr<CudaApi>> Create(
      std::shared_ptr<const CudaSymbols> syms, CUdevice device);
  ~CudaApi() override;

  const CudaSymbols* syms() const { return syms_.get(); }
  CUdevice device() const { return device_; }

  const char* name() const override { return "cuda"; }
  HAL_GPU_API_OVERRIDES
  bool SupportsAsyncAlloc() const override { return pool_ != nullptr; }
  ExecutableFormat module_format() const override {
    return ExecutableFormat::kCudaPtx;
  }

 private:
  CudaApi(std::shared_ptr<const CudaSymbols> syms, CUdevice device)
      : syms_(std::move(syms)), device_(device) {}
  Status Initialize();

  std::shared_ptr<const CudaSymbols> syms_;
  CUdevice device_;
  CUcontext context_ = nullptr;
  CUmemoryPool pool_ = nullptr;  // the device's default pool, when supported
};

}  // namespace hal::cuda
