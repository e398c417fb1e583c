// The CUDA skin's graphs, over engine graphs (sim/engine/engine_graph.h).
//
// A graph is its nodes in creation order, each with its dependencies (nodes
// of the same graph, so added before it). cuGraphInstantiateWithFlags fixes
// one execution order: a topological order that, among the nodes whose
// dependencies all ran, always takes the one added last (the engine's
// unseeded order; kept so that a seed replays as before). cuGraphLaunch
// enqueues the whole order as one stream op; every node runs with the checks
// of its stream form (op faults, ranges, kernel bounds, sticky errors).
// Launches of one executable graph run one at a time in launch order, as
// CUDA orders them, also across streams.
#include "sim/cuda/sim_libcuda_internal.h"
#include "sim/engine/engine_graph.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {

struct Graph {
  Context* context = nullptr;
  engine::Graph graph;
};

Graph* AsGraph(CUgraph hgraph) { return reinterpret_cast<Graph*>(hgraph); }

// Adds a node after checking the handles and dependencies (CUDA forbids
// duplicate entries).
CUresult AddNode(CUgraphNode* out, CUgraph hgraph, const CUgraphNode* deps,
                 size_t num_deps, engine::Work run, bool host = false) {
  Graph* graph = AsGraph(hgraph);
  if (!out || !graph || (num_deps && !deps)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<const engine::Graph::Node*> nodes(num_deps);
  for (size_t i = 0; i < num_deps; ++i) {
    nodes[i] = reinterpret_cast<const engine::Graph::Node*>(deps[i]);
  }
  engine::Graph::Node* node = graph->graph.AddNode(nodes, std::move(run), host);
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
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
  HALSIM_ENTER("cuGraphCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phgraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* graph = new Graph();
  graph->context = ctx;
  *phgraph = reinterpret_cast<CUgraph>(graph);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphDestroy(CUgraph hgraph) {
  HALSIM_ENTER("cuGraphDestroy");
  HALSIM_NEED_INIT();
  if (!hgraph) return CUDA_ERROR_INVALID_VALUE;
  delete AsGraph(hgraph);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phnode, CUgraph hgraph,
                                           const CUgraphNode* deps,
                                           size_t num_deps) {
  HALSIM_ENTER("cuGraphAddEmptyNode");
  HALSIM_NEED_CONTEXT(ctx);
  return AddNode(phnode, hgraph, deps, num_deps, nullptr);
}

HALSIM_EXPORT CUresult cuGraphAddKernelNode(
    CUgraphNode* phnode, CUgraph hgraph, const CUgraphNode* deps,
    size_t num_deps, const CUDA_KERNEL_NODE_PARAMS* params) {
  HALSIM_ENTER("cuGraphAddKernelNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !hgraph) return CUDA_ERROR_INVALID_VALUE;
  if (!params->func) return CUDA_ERROR_NOT_SUPPORTED;  // CUkernel handles
  // Parameters are copied now, as CUDA does.
  engine::Work op;
  CUresult r =
      KernelOp(AsGraph(hgraph)->context, params->func, params->gridDimX,
               params->gridDimY, params->gridDimZ, params->blockDimX,
               params->blockDimY, params->blockDimZ, params->sharedMemBytes,
               params->kernelParams, params->extra, &op);
  if (r != CUDA_SUCCESS) return r;
  return AddNode(phnode, hgraph, deps, num_deps, std::move(op));
}

HALSIM_EXPORT CUresult cuGraphAddMemsetNode(
    CUgraphNode* phnode, CUgraph hgraph, const CUgraphNode* deps,
    size_t num_deps, const CUDA_MEMSET_NODE_PARAMS* params, CUcontext hctx) {
  HALSIM_ENTER("cuGraphAddMemsetNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !hgraph || !hctx) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = AsGraph(hgraph);
  if (reinterpret_cast<Context*>(hctx) != graph->context) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (params->height != 1) {
    std::fprintf(stderr,
                 "halsim_cuda: 2D memset nodes are not simulated (height "
                 "%zu)\n",
                 params->height);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUdeviceptr dst = params->dst;
  unsigned int size = params->elementSize;
  if (!dst || (size != 1 && size != 2 && size != 4) || dst % size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return AddNode(phnode, hgraph, deps, num_deps,
                 E().FillWork(&graph->context->domain, dst, params->value,
                              static_cast<int>(size), params->width));
}

HALSIM_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phnode, CUgraph hgraph,
                                            const CUgraphNode* deps,
                                            size_t num_deps,
                                            const CUDA_MEMCPY3D* p,
                                            CUcontext hctx) {
  HALSIM_ENTER("cuGraphAddMemcpyNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!p || !hgraph || !hctx) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = AsGraph(hgraph);
  if (reinterpret_cast<Context*>(hctx) != graph->context) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
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
  return AddNode(
      phnode, hgraph, deps, num_deps,
      E().CopyWork(&graph->context->domain, dst, src, p->WidthInBytes));
}

HALSIM_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phnode, CUgraph hgraph,
                                          const CUgraphNode* deps,
                                          size_t num_deps,
                                          const CUDA_HOST_NODE_PARAMS* params) {
  HALSIM_ENTER("cuGraphAddHostNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !params->fn) return CUDA_ERROR_INVALID_VALUE;
  CUhostFn fn = params->fn;
  void* user_data = params->userData;
  // As a host function: no CUDA calls from inside.
  return AddNode(phnode, hgraph, deps, num_deps,
                 Engine::AsHostCallback([fn, user_data] { fn(user_data); }),
                 /*host=*/true);
}

HALSIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phexec,
                                                   CUgraph hgraph,
                                                   unsigned long long flags) {
  HALSIM_ENTER("cuGraphInstantiateWithFlags");
  HALSIM_NEED_CONTEXT(ctx);
  Graph* graph = AsGraph(hgraph);
  if (!phexec || !graph) return CUDA_ERROR_INVALID_VALUE;
  if (flags != 0) return CUDA_ERROR_NOT_SUPPORTED;
  *phexec = reinterpret_cast<CUgraphExec>(
      new engine::GraphExec(E(), graph->graph, /*random=*/nullptr));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hexec, CUstream hstream) {
  HALSIM_ENTER("cuGraphLaunch");
  HALSIM_NEED_CONTEXT(ctx);
  auto* exec = reinterpret_cast<engine::GraphExec*>(hexec);
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  return ToCuResult(exec->Launch(stream->queue));
}

HALSIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hexec) {
  HALSIM_ENTER("cuGraphExecDestroy");
  HALSIM_NEED_INIT();
  if (!hexec) return CUDA_ERROR_INVALID_VALUE;
  // In-flight launches keep the node list (CUDA frees it on completion).
  delete reinterpret_cast<engine::GraphExec*>(hexec);
  return CUDA_SUCCESS;
}
