// The thin per-API layer under the shared GPU-stream machinery.
//
// CUDA and HIP (and any API with streams, binary events and host functions)
// implement GpuApi once; everything above it (drivers/gpu/: devices, timeline
// semaphores over events, pending queue actions, stream command buffers,
// allocators) is written once against it. Every method converts the API's
// result into a Status in one place (the implementation), with the API's
// error name in the message.
//
// Handles are opaque pointers (CUstream, CUevent, ...). Device pointers are
// 64-bit integers (CUdeviceptr, hipDeviceptr_t); with unified addressing the
// host pointers of host-local and registered memory have a device address
// too (HostDevicePointer).
//
// Thread safety: every method may be called from any thread; each makes the
// device's context current for its own duration. None may be called from a
// host function launched with LaunchHostFunc (the API forbids it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "hal/executable.h"
#include "hal/status.h"

namespace hal::gpu {

using GpuStream = void*;
using GpuEventHandle = void*;
using GpuModule = void*;
using GpuFunction = void*;
using GpuDevicePtr = uint64_t;
using GpuHostFn = void (*)(void* user_data);
using GpuGraph = void*;
using GpuGraphNode = void*;
using GpuGraphExec = void*;

class GpuApi {
 public:
  virtual ~GpuApi() = default;

  // "cuda", "hip": used in messages.
  virtual const char* name() const = 0;

  // Non-blocking streams (no implicit sync with the legacy default stream).
  virtual Status StreamCreate(GpuStream* out) = 0;
  virtual Status StreamDestroy(GpuStream stream) = 0;
  // Later work on `stream` waits for the work `event` captured when it was
  // last recorded (nothing if it never was).
  virtual Status StreamWaitEvent(GpuStream stream, GpuEventHandle event) = 0;
  virtual Status StreamSynchronize(GpuStream stream) = 0;

  // Events without timing.
  virtual Status EventCreate(GpuEventHandle* out) = 0;
  virtual Status EventDestroy(GpuEventHandle event) = 0;
  virtual Status EventRecord(GpuEventHandle event, GpuStream stream) = 0;
  // OK + *ready=false while pending; an error when the work it captured
  // failed (the API's asynchronous error).
  virtual Status EventQuery(GpuEventHandle event, bool* ready) = 0;
  virtual Status EventSynchronize(GpuEventHandle event) = 0;

  // `fn` runs on an API thread after the work before it on `stream`, and
  // blocks the work after it. It must not call the API.
  virtual Status LaunchHostFunc(GpuStream stream, GpuHostFn fn,
                                void* user_data) = 0;

  // Memory. Sizes are > 0 (callers handle empty buffers).
  virtual Status MemAllocDevice(size_t size, GpuDevicePtr* out) = 0;
  // As MemAllocDevice, for the queues of `queue_affinity` (placement hint).
  virtual Status MemAllocDeviceFor(size_t size, uint64_t queue_affinity,
                                   GpuDevicePtr* out) {
    return MemAllocDevice(size, out);
  }
  virtual Status MemAllocManaged(size_t size, GpuDevicePtr* out) = 0;
  virtual Status MemFreeDevice(GpuDevicePtr ptr) = 0;  // device and managed
  virtual Status MemAllocHost(size_t size, void** out) = 0;
  virtual Status MemFreeHost(void* ptr) = 0;
  virtual Status MemHostRegister(void* ptr, size_t size) = 0;
  virtual Status MemHostUnregister(void* ptr) = 0;
  // The device address of pinned (allocated or registered) host memory.
  virtual Status HostDevicePointer(void* host, GpuDevicePtr* out) = 0;
  // Stream-ordered allocation from the device's memory pool. UNIMPLEMENTED
  // when the API or device has no pools (SupportsAsyncAlloc is false).
  virtual bool SupportsAsyncAlloc() const = 0;
  virtual Status MemAllocAsync(size_t size, GpuStream stream,
                               GpuDevicePtr* out) = 0;
  virtual Status MemFreeAsync(GpuDevicePtr ptr, GpuStream stream) = 0;

  // Stream-ordered transfers (addresses are unified).
  virtual Status MemcpyAsync(GpuDevicePtr dst, GpuDevicePtr src, size_t size,
                             GpuStream stream) = 0;
  // `pattern_length` is 1, 2 or 4; `count` is in patterns; `dst` is aligned
  // to the pattern length.
  virtual Status MemsetAsync(GpuDevicePtr dst, uint32_t pattern,
                             size_t pattern_length, size_t count,
                             GpuStream stream) = 0;

  // Modules and kernel launches (executables and dispatch). The module
  // format is the API's (PTX for CUDA, HSACO for HIP); SupportsModules is
  // false when the library lacks the entry points, and then the others are
  // UNIMPLEMENTED.
  virtual ExecutableFormat module_format() const = 0;
  virtual bool SupportsModules() const = 0;
  // `image` is the module as the executable file holds it (PTX text without
  // its terminating NUL, which the implementation adds).
  virtual Status ModuleLoad(std::span<const uint8_t> image, GpuModule* out) = 0;
  virtual Status ModuleUnload(GpuModule module) = 0;
  // NOT_FOUND-like API errors when the module has no such kernel.
  virtual Status ModuleGetFunction(GpuModule module, const char* name,
                                   GpuFunction* out) = 0;
  // At prepare time: INVALID_ARGUMENT unless `function` takes at most
  // `bindings` pointers then `constants` 32-bit values (what LaunchKernel's
  // params hold).
  virtual Status CheckFunctionParams(GpuFunction, uint32_t bindings,
                                     uint32_t constants) {
    return OkStatus();
  }
  // Enqueues `function` over a grid of `grid` blocks of `block` threads with
  // `shared_memory` bytes of dynamic shared memory. `params` holds one
  // pointer per kernel parameter, read during the call.
  virtual Status LaunchKernel(GpuFunction function, const uint32_t grid[3],
                              const uint32_t block[3], uint32_t shared_memory,
                              GpuStream stream, void** params) = 0;
  // As LaunchKernel, with the grid read from device memory when the launch
  // runs (after the work before it on `stream`): three uint32 (x, y, z) at
  // `grid`, with no host round trip (Level Zero:
  // zeCommandListAppendLaunchKernelIndirect). A zero count launches nothing;
  // the count is the device's to check (not against kMaxWorkgroupCount).
  // SupportsIndirectLaunch is false when the API has no such launch (CUDA,
  // HIP; the default): then this is UNIMPLEMENTED and LaunchGpuDispatch
  // reads the count on the host instead (gpu_executable.h).
  virtual bool SupportsIndirectLaunch() const { return false; }
  virtual Status LaunchKernelIndirect(GpuFunction function, GpuDevicePtr grid,
                                      const uint32_t block[3],
                                      uint32_t shared_memory, GpuStream stream,
                                      void** params) {
    return UnimplementedError("%s: no indirect kernel launch", name());
  }

  // Graphs (CUgraph, hipGraph_t): nodes with explicit dependencies,
  // instantiated once and launched on a stream as one unit of stream work.
  // SupportsGraphs is false when the library lacks the entry points, and then
  // the others are UNIMPLEMENTED. A node runs after every node in `deps`
  // (all of the same graph); nodes without dependencies may start at once.
  // Node parameters are copied when the node is added.
  virtual bool SupportsGraphs() const = 0;
  virtual Status GraphCreate(GpuGraph* out) = 0;
  virtual Status GraphDestroy(GpuGraph graph) = 0;
  virtual Status GraphAddEmptyNode(GpuGraph graph,
                                   std::span<const GpuGraphNode> deps,
                                   GpuGraphNode* out) = 0;
  // As LaunchKernel, as a node.
  virtual Status GraphAddKernelNode(
      GpuGraph graph, std::span<const GpuGraphNode> deps, GpuFunction function,
      const uint32_t grid[3], const uint32_t block[3], uint32_t shared_memory,
      void** params, GpuGraphNode* out) = 0;
  // As MemsetAsync, as a node.
  virtual Status GraphAddMemsetNode(GpuGraph graph,
                                    std::span<const GpuGraphNode> deps,
                                    GpuDevicePtr dst, uint32_t pattern,
                                    size_t pattern_length, size_t count,
                                    GpuGraphNode* out) = 0;
  // As MemcpyAsync, as a node. Host operands must be pinned (allocated or
  // registered) host memory, given by their device address.
  virtual Status GraphAddMemcpyNode(GpuGraph graph,
                                    std::span<const GpuGraphNode> deps,
                                    GpuDevicePtr dst, GpuDevicePtr src,
                                    size_t size, GpuGraphNode* out) = 0;
  // `fn` runs on an API thread when the node runs; it must not call the API.
  virtual Status GraphAddHostNode(GpuGraph graph,
                                  std::span<const GpuGraphNode> deps,
                                  GpuHostFn fn, void* user_data,
                                  GpuGraphNode* out) = 0;
  // The executable graph is independent of `graph`, which may be destroyed.
  virtual Status GraphInstantiate(GpuGraph graph, GpuGraphExec* out) = 0;
  // Runs the whole graph as stream work: after the work before it on
  // `stream` (and after earlier launches of `exec`), before the work after.
  virtual Status GraphLaunch(GpuGraphExec exec, GpuStream stream) = 0;
  // An in-flight launch still completes (its resources are freed after).
  virtual Status GraphExecDestroy(GpuGraphExec exec) = 0;
};

}  // namespace hal::gpu

// The GpuApi methods every implementation defines, declared as overrides in
// one list (cuda_api.h and hip_api.h expand it in their class), so that no
// implementation header repeats the interface. name(), module_format() and
// SupportsAsyncAlloc() are each implementation's own inline definitions.
// clang-format off
#define HAL_GPU_API_OVERRIDES \
  ::hal::Status StreamCreate(::hal::gpu::GpuStream* out) override; \
  ::hal::Status StreamDestroy(::hal::gpu::GpuStream stream) override; \
  ::hal::Status StreamWaitEvent(::hal::gpu::GpuStream stream, ::hal::gpu::GpuEventHandle event) override; \
  ::hal::Status StreamSynchronize(::hal::gpu::GpuStream stream) override; \
  ::hal::Status EventCreate(::hal::gpu::GpuEventHandle* out) override; \
  ::hal::Status EventDestroy(::hal::gpu::GpuEventHandle event) override; \
  ::hal::Status EventRecord(::hal::gpu::GpuEventHandle event, ::hal::gpu::GpuStream stream) override; \
  ::hal::Status EventQuery(::hal::gpu::GpuEventHandle event, bool* ready) override; \
  ::hal::Status EventSynchronize(::hal::gpu::GpuEventHandle event) override; \
  ::hal::Status LaunchHostFunc(::hal::gpu::GpuStream stream, ::hal::gpu::GpuHostFn fn, void* user_data) override; \
  ::hal::Status MemAllocDevice(size_t size, ::hal::gpu::GpuDevicePtr* out) override; \
  ::hal::Status MemAllocManaged(size_t size, ::hal::gpu::GpuDevicePtr* out) override; \
  ::hal::Status MemFreeDevice(::hal::gpu::GpuDevicePtr ptr) override; \
  ::hal::Status MemAllocHost(size_t size, void** out) override; \
  ::hal::Status MemFreeHost(void* ptr) override; \
  ::hal::Status MemHostRegister(void* ptr, size_t size) override; \
  ::hal::Status MemHostUnregister(void* ptr) override; \
  ::hal::Status HostDevicePointer(void* host, ::hal::gpu::GpuDevicePtr* out) override; \
  ::hal::Status MemAllocAsync(size_t size, ::hal::gpu::GpuStream stream, ::hal::gpu::GpuDevicePtr* out) override; \
  ::hal::Status MemFreeAsync(::hal::gpu::GpuDevicePtr ptr, ::hal::gpu::GpuStream stream) override; \
  ::hal::Status MemcpyAsync(::hal::gpu::GpuDevicePtr dst, ::hal::gpu::GpuDevicePtr src, size_t size, ::hal::gpu::GpuStream stream) override; \
  ::hal::Status MemsetAsync(::hal::gpu::GpuDevicePtr dst, uint32_t pattern, size_t pattern_length, size_t count, ::hal::gpu::GpuStream stream) override; \
  bool SupportsModules() const override; \
  ::hal::Status ModuleLoad(std::span<const uint8_t> image, ::hal::gpu::GpuModule* out) override; \
  ::hal::Status ModuleUnload(::hal::gpu::GpuModule module) override; \
  ::hal::Status ModuleGetFunction(::hal::gpu::GpuModule module, const char* name, ::hal::gpu::GpuFunction* out) override; \
  ::hal::Status LaunchKernel(::hal::gpu::GpuFunction function, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_memory, ::hal::gpu::GpuStream stream, void** params) override; \
  bool SupportsGraphs() const override; \
  ::hal::Status GraphCreate(::hal::gpu::GpuGraph* out) override; \
  ::hal::Status GraphDestroy(::hal::gpu::GpuGraph graph) override; \
  ::hal::Status GraphAddEmptyNode(::hal::gpu::GpuGraph graph, std::span<const ::hal::gpu::GpuGraphNode> deps, ::hal::gpu::GpuGraphNode* out) override; \
  ::hal::Status GraphAddKernelNode(::hal::gpu::GpuGraph graph, std::span<const ::hal::gpu::GpuGraphNode> deps, ::hal::gpu::GpuFunction function, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_memory, void** params, ::hal::gpu::GpuGraphNode* out) override; \
  ::hal::Status GraphAddMemsetNode(::hal::gpu::GpuGraph graph, std::span<const ::hal::gpu::GpuGraphNode> deps, ::hal::gpu::GpuDevicePtr dst, uint32_t pattern, size_t pattern_length, size_t count, ::hal::gpu::GpuGraphNode* out) override; \
  ::hal::Status GraphAddMemcpyNode(::hal::gpu::GpuGraph graph, std::span<const ::hal::gpu::GpuGraphNode> deps, ::hal::gpu::GpuDevicePtr dst, ::hal::gpu::GpuDevicePtr src, size_t size, ::hal::gpu::GpuGraphNode* out) override; \
  ::hal::Status GraphAddHostNode(::hal::gpu::GpuGraph graph, std::span<const ::hal::gpu::GpuGraphNode> deps, ::hal::gpu::GpuHostFn fn, void* user_data, ::hal::gpu::GpuGraphNode* out) override; \
  ::hal::Status GraphInstantiate(::hal::gpu::GpuGraph graph, ::hal::gpu::GpuGraphExec* out) override; \
  ::hal::Status GraphLaunch(::hal::gpu::GpuGraphExec exec, ::hal::gpu::GpuStream stream) override; \
  ::hal::Status GraphExecDestroy(::hal::gpu::GpuGraphExec exec) override;
// clang-format on
