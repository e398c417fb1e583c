// The CUDA skin's graphs, over engine graphs through sim/skin/skin_graph.cc
// (which says how they are ordered and launched).
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

namespace {

// A node's context must be the graph's.
CUresult CheckContext(skin::Graph* graph, CUcontext hctx) {
  if (!graph || !hctx) return CUDA_ERROR_INVALID_VALUE;
  return reinterpret_cast<skin::Scope*>(hctx) == graph->scope
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_CONTEXT;
}

// The address a 1D CUDA_MEMCPY3D operand names, or 0 for forms the
// simulator does not have (arrays, 2D/3D offsets).
uintptr_t MemcpyOperand(CUmemorytype type, const void* host, CUdeviceptr device,
                        CUarray array, size_t x, size_t y, size_t z) {
  if (array || y || z) return 0;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      return host ? reinterpret_cast<uintptr_t>(host) + x : 0;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      return device ? static_cast<uintptr_t>(device) + x : 0;
    default:
      return 0;
  }
}

}  // namespace

HALSIM_EXPORT CUresult cuGraphCreate(CUgraph* phgraph, unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuGraphCreate", ctx);
  if (!phgraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return Cu(skin::Hand(L().New<skin::Graph>(ctx), phgraph));
}

HALSIM_EXPORT CUresult cuGraphDestroy(CUgraph hgraph) {
  HALSIM_ENTER_INIT("cuGraphDestroy");
  return Cu(skin::DestroyGraph(L(), hgraph));
}

HALSIM_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phnode, CUgraph hgraph,
                                           const CUgraphNode* deps,
                                           size_t num_deps) {
  HALSIM_ENTER_CONTEXT("cuGraphAddEmptyNode", ctx);
  return Cu(skin::AddNode(AsGraph(hgraph), deps, num_deps, nullptr, phnode));
}

HALSIM_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* phnode, CUgraph hgraph,
                                            const CUgraphNode* deps,
                                            size_t num_deps,
                                            const CUDA_KERNEL_NODE_PARAMS* p) {
  HALSIM_ENTER_CONTEXT("cuGraphAddKernelNode", ctx);
  skin::Graph* graph = AsGraph(hgraph);
  if (!p || !graph) return CUDA_ERROR_INVALID_VALUE;
  if (!p->func) return CUDA_ERROR_NOT_SUPPORTED;  // CUkernel handles
  // Parameters are copied now, as CUDA does.
  const uint32_t grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  const uint32_t block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  hal::sim::skin::KernelLaunch launch;
  CUresult r = KernelOp(graph->scope, p->func, grid, block, p->sharedMemBytes,
                        p->kernelParams, p->extra, &launch);
  if (r != CUDA_SUCCESS) return r;
  return Cu(
      skin::AddKernelNode(graph, deps, num_deps, std::move(launch), phnode));
}

HALSIM_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* phnode, CUgraph hgraph,
                                            const CUgraphNode* deps,
                                            size_t num_deps,
                                            const CUDA_MEMSET_NODE_PARAMS* p,
                                            CUcontext hctx) {
  HALSIM_ENTER_CONTEXT("cuGraphAddMemsetNode", ctx);
  skin::Graph* graph = AsGraph(hgraph);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckContext(graph, hctx); r != CUDA_SUCCESS) return r;
  return Cu(skin::AddFillNode(L(), graph, deps, num_deps, uintptr_t{p->dst},
                              p->value, p->elementSize, p->width, p->height,
                              phnode));
}

HALSIM_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phnode, CUgraph hgraph,
                                            const CUgraphNode* deps,
                                            size_t num_deps,
                                            const CUDA_MEMCPY3D* p,
                                            CUcontext hctx) {
  HALSIM_ENTER_CONTEXT("cuGraphAddMemcpyNode", ctx);
  skin::Graph* graph = AsGraph(hgraph);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckContext(graph, hctx); r != CUDA_SUCCESS) return r;
  if (p->Height != 1 || p->Depth != 1) {
    std::fprintf(stderr,
                 "halsim_cuda: only 1D memcpy nodes are simulated (height "
                 "%zu, depth %zu)\n",
                 p->Height, p->Depth);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  uintptr_t src = MemcpyOperand(p->srcMemoryType, p->srcHost, p->srcDevice,
                                p->srcArray, p->srcXInBytes, p->srcY, p->srcZ);
  uintptr_t dst = MemcpyOperand(p->dstMemoryType, p->dstHost, p->dstDevice,
                                p->dstArray, p->dstXInBytes, p->dstY, p->dstZ);
  if (!src || !dst) return CUDA_ERROR_INVALID_VALUE;
  return Cu(skin::AddCopyNode(L(), graph, deps, num_deps, dst, src,
                              p->WidthInBytes, phnode));
}

HALSIM_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phnode, CUgraph hgraph,
                                          const CUgraphNode* deps,
                                          size_t num_deps,
                                          const CUDA_HOST_NODE_PARAMS* p) {
  HALSIM_ENTER_CONTEXT("cuGraphAddHostNode", ctx);
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  // As a host function: no CUDA calls from inside.
  return Cu(skin::AddHostNode(
      AsGraph(hgraph), deps, num_deps,
      [fn = p->fn, data = p->userData] { fn(data); }, phnode));
}

HALSIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phexec,
                                                   CUgraph hgraph,
                                                   unsigned long long flags) {
  HALSIM_ENTER_CONTEXT("cuGraphInstantiateWithFlags", ctx);
  if (!phexec) return CUDA_ERROR_INVALID_VALUE;
  skin::GraphExec* exec = nullptr;
  CUresult r = Cu(skin::Instantiate(L(), AsGraph(hgraph), flags, &exec));
  if (r == CUDA_SUCCESS) skin::Hand(exec, phexec);
  return r;
}

HALSIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hexec, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuGraphLaunch", ctx);
  return Cu(skin::LaunchGraph(L(), hexec, AsStream(hstream)));
}

HALSIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hexec) {
  HALSIM_ENTER_INIT("cuGraphExecDestroy");
  return Cu(skin::DestroyGraphExec(L(), hexec));
}
