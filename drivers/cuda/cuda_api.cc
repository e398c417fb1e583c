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
CUgraph AsGraph(gpu::GpuGraph g) { return static_cast<CUgraph>(g); }
const CUgraphNode* AsNodes(std::span<const gpu::GpuGraphNode> deps) {
  static_assert(sizeof(CUgraphNode) == sizeof(gpu::GpuGraphNode));
  return reinterpret_cast<const CUgraphNode*>(deps.data());
}
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

bool CudaApi::SupportsGraphs() const {
  return syms_->cuGraphCreate && syms_->cuGraphDestroy &&
         syms_->cuGraphAddEmptyNode && syms_->cuGraphAddKernelNode &&
         syms_->cuGraphAddMemsetNode && syms_->cuGraphAddMemcpyNode &&
         syms_->cuGraphAddHostNode && syms_->cuGraphInstantiateWithFlags &&
         syms_->cuGraphLaunch && syms_->cuGraphExecDestroy;
}

#define HAL_CUDA_NEED_GRAPHS()                                                \
  do {                                                                        \
    if (!SupportsGraphs()) {                                                  \
      return UnimplementedError(                                              \
          "cuda: the library lacks the CUgraph entry points (cuGraphCreate, " \
          "cuGraphAdd*Node, cuGraphInstantiateWithFlags, cuGraphLaunch)");    \
    }                                                                         \
  } while (0)

Status CudaApi::GraphCreate(gpu::GpuGraph* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CUgraph graph = nullptr;
  CU(cuGraphCreate(&graph, 0), "creating a command-buffer graph");
  *out = graph;
  return OkStatus();
}

Status CudaApi::GraphDestroy(gpu::GpuGraph graph) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CU(cuGraphDestroy(AsGraph(graph)), "%s", "");
  return OkStatus();
}

Status CudaApi::GraphAddEmptyNode(gpu::GpuGraph graph,
                                  std::span<const gpu::GpuGraphNode> deps,
                                  gpu::GpuGraphNode* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CUgraphNode node = nullptr;
  CU(cuGraphAddEmptyNode(&node, AsGraph(graph), AsNodes(deps), deps.size()),
     "barrier node after %zu nodes", deps.size());
  *out = node;
  return OkStatus();
}

Status CudaApi::GraphAddKernelNode(
    gpu::GpuGraph graph, std::span<const gpu::GpuGraphNode> deps,
    gpu::GpuFunction function, const uint32_t grid[3], const uint32_t block[3],
    uint32_t shared_memory, void** params, gpu::GpuGraphNode* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CUDA_KERNEL_NODE_PARAMS p = {};
  p.func = static_cast<CUfunction>(function);
  p.gridDimX = grid[0];
  p.gridDimY = grid[1];
  p.gridDimZ = grid[2];
  p.blockDimX = block[0];
  p.blockDimY = block[1];
  p.blockDimZ = block[2];
  p.sharedMemBytes = shared_memory;
  p.kernelParams = params;
  CUgraphNode node = nullptr;
  CU(cuGraphAddKernelNode(&node, AsGraph(graph), AsNodes(deps), deps.size(),
                          &p),
     "kernel node: grid [%u, %u, %u] of blocks [%u, %u, %u]", grid[0], grid[1],
     grid[2], block[0], block[1], block[2]);
  *out = node;
  return OkStatus();
}

Status CudaApi::GraphAddMemsetNode(gpu::GpuGraph graph,
                                   std::span<const gpu::GpuGraphNode> deps,
                                   gpu::GpuDevicePtr dst, uint32_t pattern,
                                   size_t pattern_length, size_t count,
                                   gpu::GpuGraphNode* out) {
  HAL_CUDA_NEED_GRAPHS();
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  HAL_CUDA_SCOPE();
  CUDA_MEMSET_NODE_PARAMS p = {};
  p.dst = dst;
  p.pitch = 0;
  p.value = pattern;
  p.elementSize = static_cast<unsigned int>(pattern_length);
  p.width = count;
  p.height = 1;
  CUgraphNode node = nullptr;
  CU(cuGraphAddMemsetNode(&node, AsGraph(graph), AsNodes(deps), deps.size(), &p,
                          context_),
     "fill node: %zu %zu-byte patterns", count, pattern_length);
  *out = node;
  return OkStatus();
}

Status CudaApi::GraphAddMemcpyNode(gpu::GpuGraph graph,
                                   std::span<const gpu::GpuGraphNode> deps,
                                   gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                                   size_t size, gpu::GpuGraphNode* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  // A 1D copy between unified addresses (device, managed, or pinned host
  // memory through its device address).
  CUDA_MEMCPY3D p = {};
  p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.srcDevice = src;
  p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.dstDevice = dst;
  p.WidthInBytes = size;
  p.Height = 1;
  p.Depth = 1;
  CUgraphNode node = nullptr;
  CU(cuGraphAddMemcpyNode(&node, AsGraph(graph), AsNodes(deps), deps.size(), &p,
                          context_),
     "copy node of %zu bytes", size);
  *out = node;
  return OkStatus();
}

Status CudaApi::GraphAddHostNode(gpu::GpuGraph graph,
                                 std::span<const gpu::GpuGraphNode> deps,
                                 gpu::GpuHostFn fn, void* user_data,
                                 gpu::GpuGraphNode* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CUDA_HOST_NODE_PARAMS p = {};
  p.fn = fn;
  p.userData = user_data;
  CUgraphNode node = nullptr;
  CU(cuGraphAddHostNode(&node, AsGraph(graph), AsNodes(deps), deps.size(), &p),
     "host node");
  *out = node;
  return OkStatus();
}

Status CudaApi::GraphInstantiate(gpu::GpuGraph graph, gpu::GpuGraphExec* out) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CUgraphExec exec = nullptr;
  CU(cuGraphInstantiateWithFlags(&exec, AsGraph(graph), 0),
     "instantiating a command-buffer graph");
  *out = exec;
  return OkStatus();
}

Status CudaApi::GraphLaunch(gpu::GpuGraphExec exec, gpu::GpuStream stream) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CU(cuGraphLaunch(static_cast<CUgraphExec>(exec), AsStream(stream)),
     "launching a command-buffer graph");
  return OkStatus();
}

Status CudaApi::GraphExecDestroy(gpu::GpuGraphExec exec) {
  HAL_CUDA_NEED_GRAPHS();
  HAL_CUDA_SCOPE();
  CU(cuGraphExecDestroy(static_cast<CUgraphExec>(exec)), "%s", "");
  return OkStatus();
}

}  // namespace hal::cuda
