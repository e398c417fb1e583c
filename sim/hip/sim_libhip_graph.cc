// The HIP skin's graphs, over engine graphs through sim/skin/skin_graph.cc
// (which says how they are ordered and launched).
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

HALSIM_EXPORT hipError_t hipGraphCreate(hipGraph_t* out, unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipGraphCreate", dev);
  if (!out || flags != 0) return hipErrorInvalidValue;
  return ToHip(skin::Hand(L().New<skin::Graph>(dev), out));
}

HALSIM_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
  HALSIM_ENTER_INIT("hipGraphDestroy");
  return ToHip(skin::DestroyGraph(L(), graph));
}

HALSIM_EXPORT hipError_t hipGraphAddEmptyNode(hipGraphNode_t* out,
                                              hipGraph_t graph,
                                              const hipGraphNode_t* deps,
                                              size_t num_deps) {
  HALSIM_ENTER_DEVICE("hipGraphAddEmptyNode", dev);
  return ToHip(skin::AddNode(AsGraph(graph), deps, num_deps, nullptr, out));
}

HALSIM_EXPORT hipError_t hipGraphAddKernelNode(hipGraphNode_t* out,
                                               hipGraph_t hgraph,
                                               const hipGraphNode_t* deps,
                                               size_t num_deps,
                                               const hipKernelNodeParams* p) {
  HALSIM_ENTER_DEVICE("hipGraphAddKernelNode", dev);
  skin::Graph* graph = AsGraph(hgraph);
  if (!p || !graph) return hipErrorInvalidValue;
  // `func` is a module function (hipModuleGetFunction); parameters are
  // copied now, as HIP does.
  const uint32_t grid[3] = {p->gridDim.x, p->gridDim.y, p->gridDim.z};
  const uint32_t block[3] = {p->blockDim.x, p->blockDim.y, p->blockDim.z};
  hal::sim::skin::KernelLaunch launch;
  hipError_t r =
      KernelOp(graph->scope, static_cast<hipFunction_t>(p->func), grid, block,
               p->sharedMemBytes, p->kernelParams, p->extra, &launch);
  if (r != hipSuccess) return r;
  return ToHip(
      skin::AddKernelNode(graph, deps, num_deps, std::move(launch), out));
}

HALSIM_EXPORT hipError_t hipGraphAddMemsetNode(hipGraphNode_t* out,
                                               hipGraph_t graph,
                                               const hipGraphNode_t* deps,
                                               size_t num_deps,
                                               const hipMemsetParams* p) {
  HALSIM_ENTER_DEVICE("hipGraphAddMemsetNode", dev);
  if (!p) return hipErrorInvalidValue;
  return ToHip(skin::AddFillNode(L(), AsGraph(graph), deps, num_deps,
                                 reinterpret_cast<uintptr_t>(p->dst), p->value,
                                 p->elementSize, p->width, p->height, out));
}

HALSIM_EXPORT hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* out,
                                                 hipGraph_t hgraph,
                                                 const hipGraphNode_t* deps,
                                                 size_t num_deps, void* dst,
                                                 const void* src, size_t count,
                                                 hipMemcpyKind kind) {
  HALSIM_ENTER_DEVICE("hipGraphAddMemcpyNode1D", dev);
  skin::Graph* graph = AsGraph(hgraph);
  if (!graph || ((!dst || !src) && count) || kind < hipMemcpyHostToHost ||
      kind > hipMemcpyDefault) {
    return hipErrorInvalidValue;
  }
  return ToHip(skin::AddCopyNode(L(), graph, deps, num_deps,
                                 reinterpret_cast<uintptr_t>(dst),
                                 reinterpret_cast<uintptr_t>(src), count, out));
}

HALSIM_EXPORT hipError_t hipGraphAddHostNode(hipGraphNode_t* out,
                                             hipGraph_t graph,
                                             const hipGraphNode_t* deps,
                                             size_t num_deps,
                                             const hipHostNodeParams* p) {
  HALSIM_ENTER_DEVICE("hipGraphAddHostNode", dev);
  if (!p || !p->fn) return hipErrorInvalidValue;
  // As a stream callback: no HIP calls from inside.
  return ToHip(skin::AddHostNode(
      AsGraph(graph), deps, num_deps,
      [fn = p->fn, data = p->userData] { fn(data); }, out));
}

HALSIM_EXPORT hipError_t hipGraphInstantiateWithFlags(
    hipGraphExec_t* out, hipGraph_t graph, unsigned long long flags) {
  HALSIM_ENTER_DEVICE("hipGraphInstantiateWithFlags", dev);
  if (!out) return hipErrorInvalidValue;
  skin::GraphExec* exec = nullptr;
  hipError_t r = ToHip(skin::Instantiate(L(), AsGraph(graph), flags, &exec));
  if (r == hipSuccess) skin::Hand(exec, out);
  return r;
}

HALSIM_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t hexec,
                                        hipStream_t hstream) {
  HALSIM_ENTER_DEVICE("hipGraphLaunch", dev);
  return ToHip(skin::LaunchGraph(L(), hexec, AsStream(hstream)));
}

HALSIM_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t hexec) {
  HALSIM_ENTER_INIT("hipGraphExecDestroy");
  return ToHip(skin::DestroyGraphExec(L(), hexec));
}
