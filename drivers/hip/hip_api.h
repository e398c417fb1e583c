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
  Status StreamCreate(gpu::GpuStream* out) override;
  Status StreamDestroy(gpu::GpuStream stream) override;
  Status StreamWaitEvent(gpu::GpuStream stream,
                         gpu::GpuEventHandle event) override;
  Status StreamSynchronize(gpu::GpuStream stream) override;
  Status EventCreate(gpu::GpuEventHandle* out) override;
  Status EventDestroy(gpu::GpuEventHandle event) override;
  Status EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) override;
  Status EventQuery(gpu::GpuEventHandle event, bool* ready) override;
  Status EventSynchronize(gpu::GpuEventHandle event) override;
  Status LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                        void* user_data) override;
  Status MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) override;
  Status MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) override;
  Status MemFreeDevice(gpu::GpuDevicePtr ptr) override;
  Status MemAllocHost(size_t size, void** out) override;
  Status MemFreeHost(void* ptr) override;
  Status MemHostRegister(void* ptr, size_t size) override;
  Status MemHostUnregister(void* ptr) override;
  Status HostDevicePointer(void* host, gpu::GpuDevicePtr* out) override;
  bool SupportsAsyncAlloc() const override { return pool_ != nullptr; }
  Status MemAllocAsync(size_t size, gpu::GpuStream stream,
                       gpu::GpuDevicePtr* out) override;
  Status MemFreeAsync(gpu::GpuDevicePtr ptr, gpu::GpuStream stream) override;
  Status MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src, size_t size,
                     gpu::GpuStream stream) override;
  Status MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                     size_t pattern_length, size_t count,
                     gpu::GpuStream stream) override;
  ExecutableFormat module_format() const override {
    return ExecutableFormat::kHipHsaco;
  }
  bool SupportsModules() const override;
  Status ModuleLoad(std::span<const uint8_t> image,
                    gpu::GpuModule* out) override;
  Status ModuleUnload(gpu::GpuModule module) override;
  Status ModuleGetFunction(gpu::GpuModule module, const char* name,
                           gpu::GpuFunction* out) override;
  Status LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t shared_memory,
                      gpu::GpuStream stream, void** params) override;
  bool SupportsGraphs() const override;
  Status GraphCreate(gpu::GpuGraph* out) override;
  Status GraphDestroy(gpu::GpuGraph graph) override;
  Status GraphAddEmptyNode(gpu::GpuGraph graph,
                           std::span<const gpu::GpuGraphNode> deps,
                           gpu::GpuGraphNode* out) override;
  Status GraphAddKernelNode(gpu::GpuGraph graph,
                            std::span<const gpu::GpuGraphNode> deps,
                            gpu::GpuFunction function, const uint32_t grid[3],
                            const uint32_t block[3], uint32_t shared_memory,
                            void** params, gpu::GpuGraphNode* out) override;
  Status GraphAddMemsetNode(gpu::GpuGraph graph,
                            std::span<const gpu::GpuGraphNode> deps,
                            gpu::GpuDevicePtr dst, uint32_t pattern,
                            size_t pattern_length, size_t count,
                            gpu::GpuGraphNode* out) override;
  Status GraphAddMemcpyNode(gpu::GpuGraph graph,
                            std::span<const gpu::GpuGraphNode> deps,
                            gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                            size_t size, gpu::GpuGraphNode* out) override;
  Status GraphAddHostNode(gpu::GpuGraph graph,
                          std::span<const gpu::GpuGraphNode> deps,
                          gpu::GpuHostFn fn, void* user_data,
                          gpu::GpuGraphNode* out) override;
  Status GraphInstantiate(gpu::GpuGraph graph, gpu::GpuGraphExec* out) override;
  Status GraphLaunch(gpu::GpuGraphExec exec, gpu::GpuStream stream) override;
  Status GraphExecDestroy(gpu::GpuGraphExec exec) override;

 private:
  HipApi(std::shared_ptr<const HipSymbols> syms, hipDevice_t device)
      : syms_(std::move(syms)), device_(device) {}
  Status Initialize();

  std::shared_ptr<const HipSymbols> syms_;
  hipDevice_t device_;
  hipMemPool_t pool_ = nullptr;  // the device's default pool, when supported
};

}  // namespace hal::hip
