#include "drivers/hip/hip_api.h"

#include <memory>

#include "drivers/hip/hip_status.h"

namespace hal::hip {

namespace {

hipStream_t AsStream(gpu::GpuStream s) { return static_cast<hipStream_t>(s); }
hipEvent_t AsEvent(gpu::GpuEventHandle e) { return static_cast<hipEvent_t>(e); }
hipGraph_t AsGraph(gpu::GpuGraph g) { return static_cast<hipGraph_t>(g); }
const hipGraphNode_t* AsNodes(std::span<const gpu::GpuGraphNode> deps) {
  static_assert(sizeof(hipGraphNode_t) == sizeof(gpu::GpuGraphNode));
  return reinterpret_cast<const hipGraphNode_t*>(deps.data());
}
// hipDeviceptr_t is void*: device addresses travel as 64-bit integers.
void* AsPtr(gpu::GpuDevicePtr p) { return reinterpret_cast<void*>(p); }
gpu::GpuDevicePtr AsAddress(void* p) {
  return reinterpret_cast<gpu::GpuDevicePtr>(p);
}

// The hipStreamAddCallback form of a host function: the callback owns its
// copy of (fn, user_data) and frees it after the call. The status HIP
// passes is not needed: a failure reaches the HAL through event queries.
struct HostCallback {
  gpu::GpuHostFn fn;
  void* user_data;
  static void Run(hipStream_t, hipError_t, void* p) {
    std::unique_ptr<HostCallback> call(static_cast<HostCallback*>(p));
    call->fn(call->user_data);
  }
};

}  // namespace

// HIP's current device is per thread: make ours current for the call.
#define HIP(expr, ...) HAL_HIP_RETURN_IF_ERROR(syms_.get(), expr, __VA_ARGS__)
#define HAL_HIP_SCOPE() HIP(hipSetDevice(device_), "device %d", device_)

StatusOr<std::shared_ptr<HipApi>> HipApi::Create(
    std::shared_ptr<const HipSymbols> syms, hipDevice_t device) {
  std::shared_ptr<HipApi> api(new HipApi(std::move(syms), device));
  HAL_RETURN_IF_ERROR(api->Initialize());
  return api;
}

Status HipApi::Initialize() {
  HAL_HIP_SCOPE();
  if (syms_->hipDeviceGetDefaultMemPool && syms_->hipMallocFromPoolAsync &&
      syms_->hipFreeAsync) {
    int supported = 0;
    if (syms_->hipDeviceGetAttribute(&supported,
                                     hipDeviceAttributeMemoryPoolsSupported,
                                     device_) == hipSuccess &&
        supported) {
      HIP(hipDeviceGetDefaultMemPool(&pool_, device_), "device %d", device_);
    }
  }
  return OkStatus();
}

Status HipApi::StreamCreate(gpu::GpuStream* out) {
  HAL_HIP_SCOPE();
  hipStream_t s = nullptr;
  HIP(hipStreamCreateWithFlags(&s, hipStreamNonBlocking),
      "creating a queue stream");
  *out = s;
  return OkStatus();
}

Status HipApi::StreamDestroy(gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  HIP(hipStreamDestroy(AsStream(stream)), "%s", "");
  return OkStatus();
}

Status HipApi::StreamWaitEvent(gpu::GpuStream stream,
                               gpu::GpuEventHandle event) {
  HAL_HIP_SCOPE();
  HIP(hipStreamWaitEvent(AsStream(stream), AsEvent(event), 0), "%s", "");
  return OkStatus();
}

Status HipApi::StreamSynchronize(gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  HIP(hipStreamSynchronize(AsStream(stream)), "%s", "");
  return OkStatus();
}

Status HipApi::EventCreate(gpu::GpuEventHandle* out) {
  HAL_HIP_SCOPE();
  hipEvent_t e = nullptr;
  HIP(hipEventCreateWithFlags(&e, hipEventDisableTiming),
      "creating a timepoint event");
  *out = e;
  return OkStatus();
}

Status HipApi::EventDestroy(gpu::GpuEventHandle event) {
  HAL_HIP_SCOPE();
  HIP(hipEventDestroy(AsEvent(event)), "%s", "");
  return OkStatus();
}

Status HipApi::EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  HIP(hipEventRecord(AsEvent(event), AsStream(stream)), "%s", "");
  return OkStatus();
}

Status HipApi::EventQuery(gpu::GpuEventHandle event, bool* ready) {
  HAL_HIP_SCOPE();
  hipError_t r = HipInjectedError("hipEventQuery");
  if (r == hipSuccess) r = syms_->hipEventQuery(AsEvent(event));
  if (r == hipErrorNotReady) {
    *ready = false;
    return OkStatus();
  }
  if (r != hipSuccess) {
    return HipErrorToStatus(syms_.get(), r, "hipEventQuery",
                            "device work failed");
  }
  *ready = true;
  return OkStatus();
}

Status HipApi::EventSynchronize(gpu::GpuEventHandle event) {
  HAL_HIP_SCOPE();
  HIP(hipEventSynchronize(AsEvent(event)), "device work failed");
  return OkStatus();
}

Status HipApi::LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                              void* user_data) {
  HAL_HIP_SCOPE();
  if (syms_->hipLaunchHostFunc) {
    HIP(hipLaunchHostFunc(AsStream(stream), fn, user_data), "%s", "");
    return OkStatus();
  }
  auto call = std::make_unique<HostCallback>(HostCallback{fn, user_data});
  HIP(hipStreamAddCallback(AsStream(stream), &HostCallback::Run, call.get(), 0),
      "%s", "");
  call.release();  // HostCallback::Run frees it
  return OkStatus();
}

Status HipApi::MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) {
  HAL_HIP_SCOPE();
  void* p = nullptr;
  HIP(hipMalloc(&p, size), "allocating %zu bytes of device memory", size);
  *out = AsAddress(p);
  return OkStatus();
}

Status HipApi::MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) {
  HAL_HIP_SCOPE();
  void* p = nullptr;
  HIP(hipMallocManaged(&p, size, hipMemAttachGlobal),
      "allocating %zu bytes of managed memory", size);
  *out = AsAddress(p);
  return OkStatus();
}

Status HipApi::MemFreeDevice(gpu::GpuDevicePtr ptr) {
  HAL_HIP_SCOPE();
  HIP(hipFree(AsPtr(ptr)), "%s", "");
  return OkStatus();
}

Status HipApi::MemAllocHost(size_t size, void** out) {
  HAL_HIP_SCOPE();
  HIP(hipHostMalloc(out, size, hipHostMallocMapped),
      "allocating %zu bytes of pinned host memory", size);
  return OkStatus();
}

Status HipApi::MemFreeHost(void* ptr) {
  HAL_HIP_SCOPE();
  HIP(hipHostFree(ptr), "%s", "");
  return OkStatus();
}

Status HipApi::MemHostRegister(void* ptr, size_t size) {
  HAL_HIP_SCOPE();
  HIP(hipHostRegister(ptr, size, hipHostRegisterMapped),
      "importing %zu bytes of host memory", size);
  return OkStatus();
}

Status HipApi::MemHostUnregister(void* ptr) {
  HAL_HIP_SCOPE();
  HIP(hipHostUnregister(ptr), "%s", "");
  return OkStatus();
}

Status HipApi::HostDevicePointer(void* host, gpu::GpuDevicePtr* out) {
  HAL_HIP_SCOPE();
  void* p = nullptr;
  HIP(hipHostGetDevicePointer(&p, host, 0), "%s", "");
  *out = AsAddress(p);
  return OkStatus();
}

Status HipApi::MemAllocAsync(size_t size, gpu::GpuStream stream,
                             gpu::GpuDevicePtr* out) {
  if (!pool_) {
    return UnimplementedError("HIP device %d has no memory pools", device_);
  }
  HAL_HIP_SCOPE();
  void* p = nullptr;
  HIP(hipMallocFromPoolAsync(&p, size, pool_, AsStream(stream)),
      "queue_alloca of %zu bytes", size);
  *out = AsAddress(p);
  return OkStatus();
}

Status HipApi::MemFreeAsync(gpu::GpuDevicePtr ptr, gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  HIP(hipFreeAsync(AsPtr(ptr), AsStream(stream)), "queue_dealloca");
  return OkStatus();
}

Status HipApi::MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                           size_t size, gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  HIP(hipMemcpyAsync(AsPtr(dst), AsPtr(src), size, hipMemcpyDefault,
                     AsStream(stream)),
      "copying %zu bytes", size);
  return OkStatus();
}

Status HipApi::MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                           size_t pattern_length, size_t count,
                           gpu::GpuStream stream) {
  HAL_HIP_SCOPE();
  switch (pattern_length) {
    case 1:
      HIP(hipMemsetD8Async(AsPtr(dst), static_cast<unsigned char>(pattern),
                           count, AsStream(stream)),
          "filling %zu bytes", count);
      break;
    case 2:
      HIP(hipMemsetD16Async(AsPtr(dst), static_cast<unsigned short>(pattern),
                            count, AsStream(stream)),
          "filling %zu 2-byte patterns", count);
      break;
    case 4:
      HIP(hipMemsetD32Async(AsPtr(dst), static_cast<int>(pattern), count,
                            AsStream(stream)),
          "filling %zu 4-byte patterns", count);
      break;
    default:
      return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  return OkStatus();
}

bool HipApi::SupportsModules() const {
  return syms_->hipModuleLoadDataEx && syms_->hipModuleUnload &&
         syms_->hipModuleGetFunction && syms_->hipModuleLaunchKernel;
}

Status HipApi::ModuleLoad(std::span<const uint8_t> image, gpu::GpuModule* out) {
  if (!SupportsModules()) {
    return UnimplementedError(
        "hip: the library lacks hipModuleLoadDataEx, hipModuleUnload, "
        "hipModuleGetFunction or hipModuleLaunchKernel");
  }
  // An HSACO code object is an ELF that HIP reads in place (its size comes
  // from its headers); the executable's verifier checked the ELF header.
  HAL_HIP_SCOPE();
  hipModule_t module = nullptr;
  HIP(hipModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr),
      "loading a %zu-byte HSACO code object", image.size());
  *out = module;
  return OkStatus();
}

Status HipApi::ModuleUnload(gpu::GpuModule module) {
  HAL_HIP_SCOPE();
  HIP(hipModuleUnload(static_cast<hipModule_t>(module)), "%s", "");
  return OkStatus();
}

Status HipApi::ModuleGetFunction(gpu::GpuModule module, const char* name,
                                 gpu::GpuFunction* out) {
  HAL_HIP_SCOPE();
  hipFunction_t function = nullptr;
  HIP(hipModuleGetFunction(&function, static_cast<hipModule_t>(module), name),
      "export '%s'", name);
  *out = function;
  return OkStatus();
}

Status HipApi::LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                            const uint32_t block[3], uint32_t shared_memory,
                            gpu::GpuStream stream, void** params) {
  HAL_HIP_SCOPE();
  HIP(hipModuleLaunchKernel(static_cast<hipFunction_t>(function), grid[0],
                            grid[1], grid[2], block[0], block[1], block[2],
                            shared_memory, AsStream(stream), params, nullptr),
      "grid [%u, %u, %u] of blocks [%u, %u, %u]", grid[0], grid[1], grid[2],
      block[0], block[1], block[2]);
  return OkStatus();
}

bool HipApi::SupportsGraphs() const {
  return syms_->hipGraphCreate && syms_->hipGraphDestroy &&
         syms_->hipGraphAddEmptyNode && syms_->hipGraphAddKernelNode &&
         syms_->hipGraphAddMemsetNode && syms_->hipGraphAddMemcpyNode1D &&
         syms_->hipGraphAddHostNode && syms_->hipGraphInstantiateWithFlags &&
         syms_->hipGraphLaunch && syms_->hipGraphExecDestroy;
}

#define HAL_HIP_NEED_GRAPHS()                                                  \
  do {                                                                         \
    if (!SupportsGraphs()) {                                                   \
      return UnimplementedError(                                               \
          "hip: the library lacks the hipGraph entry points (hipGraphCreate, " \
          "hipGraphAdd*Node, hipGraphInstantiateWithFlags, hipGraphLaunch)");  \
    }                                                                          \
  } while (0)

Status HipApi::GraphCreate(gpu::GpuGraph* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  hipGraph_t graph = nullptr;
  HIP(hipGraphCreate(&graph, 0), "creating a command-buffer graph");
  *out = graph;
  return OkStatus();
}

Status HipApi::GraphDestroy(gpu::GpuGraph graph) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  HIP(hipGraphDestroy(AsGraph(graph)), "%s", "");
  return OkStatus();
}

Status HipApi::GraphAddEmptyNode(gpu::GpuGraph graph,
                                 std::span<const gpu::GpuGraphNode> deps,
                                 gpu::GpuGraphNode* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  hipGraphNode_t node = nullptr;
  HIP(hipGraphAddEmptyNode(&node, AsGraph(graph), AsNodes(deps), deps.size()),
      "barrier node after %zu nodes", deps.size());
  *out = node;
  return OkStatus();
}

Status HipApi::GraphAddKernelNode(
    gpu::GpuGraph graph, std::span<const gpu::GpuGraphNode> deps,
    gpu::GpuFunction function, const uint32_t grid[3], const uint32_t block[3],
    uint32_t shared_memory, void** params, gpu::GpuGraphNode* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  // A module function as the node's function, as IREE's HIP driver passes
  // it (never run on AMD hardware here: docs/drivers/hip.md).
  hipKernelNodeParams p = {};
  p.func = function;
  p.gridDim = dim3(grid[0], grid[1], grid[2]);
  p.blockDim = dim3(block[0], block[1], block[2]);
  p.sharedMemBytes = shared_memory;
  p.kernelParams = params;
  hipGraphNode_t node = nullptr;
  HIP(hipGraphAddKernelNode(&node, AsGraph(graph), AsNodes(deps), deps.size(),
                            &p),
      "kernel node: grid [%u, %u, %u] of blocks [%u, %u, %u]", grid[0], grid[1],
      grid[2], block[0], block[1], block[2]);
  *out = node;
  return OkStatus();
}

Status HipApi::GraphAddMemsetNode(gpu::GpuGraph graph,
                                  std::span<const gpu::GpuGraphNode> deps,
                                  gpu::GpuDevicePtr dst, uint32_t pattern,
                                  size_t pattern_length, size_t count,
                                  gpu::GpuGraphNode* out) {
  HAL_HIP_NEED_GRAPHS();
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  HAL_HIP_SCOPE();
  hipMemsetParams p = {};
  p.dst = AsPtr(dst);
  p.elementSize = static_cast<unsigned int>(pattern_length);
  p.height = 1;
  p.pitch = 0;
  p.value = pattern;
  p.width = count;
  hipGraphNode_t node = nullptr;
  HIP(hipGraphAddMemsetNode(&node, AsGraph(graph), AsNodes(deps), deps.size(),
                            &p),
      "fill node: %zu %zu-byte patterns", count, pattern_length);
  *out = node;
  return OkStatus();
}

Status HipApi::GraphAddMemcpyNode(gpu::GpuGraph graph,
                                  std::span<const gpu::GpuGraphNode> deps,
                                  gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                                  size_t size, gpu::GpuGraphNode* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  hipGraphNode_t node = nullptr;
  HIP(hipGraphAddMemcpyNode1D(&node, AsGraph(graph), AsNodes(deps), deps.size(),
                              AsPtr(dst), AsPtr(src), size, hipMemcpyDefault),
      "copy node of %zu bytes", size);
  *out = node;
  return OkStatus();
}

Status HipApi::GraphAddHostNode(gpu::GpuGraph graph,
                                std::span<const gpu::GpuGraphNode> deps,
                                gpu::GpuHostFn fn, void* user_data,
                                gpu::GpuGraphNode* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  hipHostNodeParams p = {};
  p.fn = fn;
  p.userData = user_data;
  hipGraphNode_t node = nullptr;
  HIP(hipGraphAddHostNode(&node, AsGraph(graph), AsNodes(deps), deps.size(),
                          &p),
      "host node");
  *out = node;
  return OkStatus();
}

Status HipApi::GraphInstantiate(gpu::GpuGraph graph, gpu::GpuGraphExec* out) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  hipGraphExec_t exec = nullptr;
  HIP(hipGraphInstantiateWithFlags(&exec, AsGraph(graph), 0),
      "instantiating a command-buffer graph");
  *out = exec;
  return OkStatus();
}

Status HipApi::GraphLaunch(gpu::GpuGraphExec exec, gpu::GpuStream stream) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  HIP(hipGraphLaunch(static_cast<hipGraphExec_t>(exec), AsStream(stream)),
      "launching a command-buffer graph");
  return OkStatus();
}

Status HipApi::GraphExecDestroy(gpu::GpuGraphExec exec) {
  HAL_HIP_NEED_GRAPHS();
  HAL_HIP_SCOPE();
  HIP(hipGraphExecDestroy(static_cast<hipGraphExec_t>(exec)), "%s", "");
  return OkStatus();
}

}  // namespace hal::hip
