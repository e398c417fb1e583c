#include "drivers/cuda/cuda_api.h"

#include <string>

#include "drivers/cuda/cuda_status.h"

namespace hal::cuda {

namespace {
// Makes a context current on this thread for a scope. CUDA contexts are
// per thread; the HAL calls in from any thread.
class ScopedContext {
 public:
  ScopedContext(const CudaSymbols* syms, CUcontext context) : syms_(syms) {
    pushed_ = syms_->cuCtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    CUcontext ignored;
    if (pushed_) syms_->cuCtxPopCurrent(&ignored);
  }

 private:
  const CudaSymbols* syms_;
  bool pushed_ = false;
};

CUstream AsStream(gpu::GpuStream s) { return static_cast<CUstream>(s); }
CUevent AsEvent(gpu::GpuEventHandle e) { return static_cast<CUevent>(e); }
}  // namespace

#define HAL_CUDA_SCOPE() ScopedContext _scope(syms_.get(), context_)
#define CU(expr, ...) HAL_CUDA_RETURN_IF_ERROR(syms_.get(), expr, __VA_ARGS__)

StatusOr<std::shared_ptr<CudaApi>> CudaApi::Create(
    std::shared_ptr<const CudaSymbols> syms, CUdevice device) {
  std::shared_ptr<CudaApi> api(new CudaApi(std::move(syms), device));
  HAL_RETURN_IF_ERROR(api->Initialize());
  return api;
}

Status CudaApi::Initialize() {
  CU(cuDevicePrimaryCtxRetain(&context_, device_), "device %d", device_);
  if (syms_->cuDeviceGetDefaultMemPool && syms_->cuMemAllocFromPoolAsync &&
      syms_->cuMemFreeAsync) {
    int supported = 0;
    if (syms_->cuDeviceGetAttribute(&supported,
                                    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                    device_) == CUDA_SUCCESS &&
        supported) {
      CU(cuDeviceGetDefaultMemPool(&pool_, device_), "device %d", device_);
    }
  }
  return OkStatus();
}

CudaApi::~CudaApi() {
  if (context_) syms_->cuDevicePrimaryCtxRelease(device_);
}

Status CudaApi::StreamCreate(gpu::GpuStream* out) {
  HAL_CUDA_SCOPE();
  CUstream s = nullptr;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "creating a queue stream");
  *out = s;
  return OkStatus();
}

Status CudaApi::StreamDestroy(gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  CU(cuStreamDestroy(AsStream(stream)), "%s", "");
  return OkStatus();
}

Status CudaApi::StreamWaitEvent(gpu::GpuStream stream,
                                gpu::GpuEventHandle event) {
  HAL_CUDA_SCOPE();
  CU(cuStreamWaitEvent(AsStream(stream), AsEvent(event), CU_EVENT_WAIT_DEFAULT),
     "%s", "");
  return OkStatus();
}

Status CudaApi::StreamSynchronize(gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  CU(cuStreamSynchronize(AsStream(stream)), "%s", "");
  return OkStatus();
}

Status CudaApi::EventCreate(gpu::GpuEventHandle* out) {
  HAL_CUDA_SCOPE();
  CUevent e = nullptr;
  CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "creating a timepoint event");
  *out = e;
  return OkStatus();
}

Status CudaApi::EventDestroy(gpu::GpuEventHandle event) {
  HAL_CUDA_SCOPE();
  CU(cuEventDestroy(AsEvent(event)), "%s", "");
  return OkStatus();
}

Status CudaApi::EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  CU(cuEventRecord(AsEvent(event), AsStream(stream)), "%s", "");
  return OkStatus();
}

Status CudaApi::EventQuery(gpu::GpuEventHandle event, bool* ready) {
  HAL_CUDA_SCOPE();
  CUresult r = CudaInjectedResult("cuEventQuery");
  if (r == CUDA_SUCCESS) r = syms_->cuEventQuery(AsEvent(event));
  if (r == CUDA_ERROR_NOT_READY) {
    *ready = false;
    return OkStatus();
  }
  if (r != CUDA_SUCCESS) {
    return CudaResultToStatus(syms_.get(), r, "cuEventQuery",
                              "device work failed");
  }
  *ready = true;
  return OkStatus();
}

Status CudaApi::EventSynchronize(gpu::GpuEventHandle event) {
  HAL_CUDA_SCOPE();
  CU(cuEventSynchronize(AsEvent(event)), "device work failed");
  return OkStatus();
}

Status CudaApi::LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                               void* user_data) {
  HAL_CUDA_SCOPE();
  CU(cuLaunchHostFunc(AsStream(stream), fn, user_data), "%s", "");
  return OkStatus();
}

Status CudaApi::MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) {
  HAL_CUDA_SCOPE();
  CUdeviceptr p = 0;
  CU(cuMemAlloc(&p, size), "allocating %zu bytes of device memory", size);
  *out = p;
  return OkStatus();
}

Status CudaApi::MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) {
  HAL_CUDA_SCOPE();
  CUdeviceptr p = 0;
  CU(cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL),
     "allocating %zu bytes of managed memory", size);
  *out = p;
  return OkStatus();
}

Status CudaApi::MemFreeDevice(gpu::GpuDevicePtr ptr) {
  HAL_CUDA_SCOPE();
  CU(cuMemFree(ptr), "%s", "");
  return OkStatus();
}

Status CudaApi::MemAllocHost(size_t size, void** out) {
  HAL_CUDA_SCOPE();
  CU(cuMemHostAlloc(out, size, CU_MEMHOSTALLOC_DEVICEMAP),
     "allocating %zu bytes of pinned host memory", size);
  return OkStatus();
}

Status CudaApi::MemFreeHost(void* ptr) {
  HAL_CUDA_SCOPE();
  CU(cuMemFreeHost(ptr), "%s", "");
  return OkStatus();
}

Status CudaApi::MemHostRegister(void* ptr, size_t size) {
  HAL_CUDA_SCOPE();
  CU(cuMemHostRegister(ptr, size, CU_MEMHOSTREGISTER_DEVICEMAP),
     "importing %zu bytes of host memory", size);
  return OkStatus();
}

Status CudaApi::MemHostUnregister(void* ptr) {
  HAL_CUDA_SCOPE();
  CU(cuMemHostUnregister(ptr), "%s", "");
  return OkStatus();
}

Status CudaApi::HostDevicePointer(void* host, gpu::GpuDevicePtr* out) {
  HAL_CUDA_SCOPE();
  CUdeviceptr p = 0;
  CU(cuMemHostGetDevicePointer(&p, host, 0), "%s", "");
  *out = p;
  return OkStatus();
}

Status CudaApi::MemAllocAsync(size_t size, gpu::GpuStream stream,
                              gpu::GpuDevicePtr* out) {
  if (!pool_) {
    return UnimplementedError("CUDA device %d has no memory pools", device_);
  }
  HAL_CUDA_SCOPE();
  CUdeviceptr p = 0;
  CU(cuMemAllocFromPoolAsync(&p, size, pool_, AsStream(stream)),
     "queue_alloca of %zu bytes", size);
  *out = p;
  return OkStatus();
}

Status CudaApi::MemFreeAsync(gpu::GpuDevicePtr ptr, gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  CU(cuMemFreeAsync(ptr, AsStream(stream)), "queue_dealloca");
  return OkStatus();
}

Status CudaApi::MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                            size_t size, gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  CU(cuMemcpyAsync(dst, src, size, AsStream(stream)), "copying %zu bytes",
     size);
  return OkStatus();
}

Status CudaApi::MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                            size_t pattern_length, size_t count,
                            gpu::GpuStream stream) {
  HAL_CUDA_SCOPE();
  switch (pattern_length) {
    case 1:
      CU(cuMemsetD8Async(dst, static_cast<unsigned char>(pattern), count,
                         AsStream(stream)),
         "filling %zu bytes", count);
      break;
    case 2:
      CU(cuMemsetD16Async(dst, static_cast<unsigned short>(pattern), count,
                          AsStream(stream)),
         "filling %zu 2-byte patterns", count);
      break;
    case 4:
      CU(cuMemsetD32Async(dst, pattern, count, AsStream(stream)),
         "filling %zu 4-byte patterns", count);
      break;
    default:
      return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  return OkStatus();
}

bool CudaApi::SupportsModules() const {
  return syms_->cuModuleLoadDataEx && syms_->cuModuleUnload &&
         syms_->cuModuleGetFunction && syms_->cuLaunchKernel;
}

Status CudaApi::ModuleLoad(std::span<const uint8_t> image,
                           gpu::GpuModule* out) {
  if (!SupportsModules()) {
    return UnimplementedError(
        "cuda: the library lacks cuModuleLoadDataEx, cuModuleUnload, "
        "cuModuleGetFunction or cuLaunchKernel");
  }
  // PTX is NUL-terminated text for cuModuleLoadDataEx; the file holds it
  // without the NUL.
  std::string ptx(reinterpret_cast<const char*>(image.data()), image.size());
  // The JIT log names the line of a PTX error.
  char error_log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log,
                    reinterpret_cast<void*>(uintptr_t{sizeof(error_log)})};
  HAL_CUDA_SCOPE();
  CUmodule module = nullptr;
  CU(cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values),
     "loading %zu bytes of PTX%s%s", ptx.size(), error_log[0] ? ": " : "",
     error_log);
  *out = module;
  return OkStatus();
}

Status CudaApi::ModuleUnload(gpu::GpuModule module) {
  HAL_CUDA_SCOPE();
  CU(cuModuleUnload(static_cast<CUmodule>(module)), "%s", "");
  return OkStatus();
}

Status CudaApi::ModuleGetFunction(gpu::GpuModule module, const char* name,
                                  gpu::GpuFunction* out) {
  HAL_CUDA_SCOPE();
  CUfunction function = nullptr;
  CU(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
     "export '%s'", name);
  *out = function;
  return OkStatus();
}

Status CudaApi::LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                             const uint32_t block[3], uint32_t shared_memory,
                             gpu::GpuStream stream, void** params) {
  HAL_CUDA_SCOPE();
  CU(cuLaunchKernel(static_cast<CUfunction>(function), grid[0], grid[1],
                    grid[2], block[0], block[1], block[2], shared_memory,
                    AsStream(stream), params, nullptr),
     "grid [%u, %u, %u] of blocks [%u, %u, %u]", grid[0], grid[1], grid[2],
     block[0], block[1], block[2]);
  return OkStatus();
}

}  // namespace hal::cuda
