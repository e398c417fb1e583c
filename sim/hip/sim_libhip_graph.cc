// The HIP skin's graphs, over engine graphs (sim/engine/engine_graph.h).
//
// As in the CUDA skin: a graph is its nodes in creation order with their
// dependencies; hipGraphInstantiateWithFlags fixes one topological order
// (the engine's), and hipGraphLaunch enqueues it as one stream op whose
// nodes run with the checks of their stream forms. Launches of one
// executable graph run one at a time in launch order.
#include "sim/engine/engine_graph.h"
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {

struct Graph {
  Device* device = nullptr;
  engine::Graph graph;
};

Graph* AsGraph(hipGraph_t g) { return reinterpret_cast<Graph*>(g); }

hipError_t AddNode(hipGraphNode_t* out, hipGraph_t hgraph,
                   const hipGraphNode_t* deps, size_t num_deps,
                   engine::Work run, bool host = false) {
  Graph* graph = AsGraph(hgraph);
  if (!out || !graph || (num_deps && !deps)) return hipErrorInvalidValue;
  std::vector<const engine::Graph::Node*> nodes(num_deps);
  for (size_t i = 0; i < num_deps; ++i) {
    nodes[i] = reinterpret_cast<const engine::Graph::Node*>(deps[i]);
  }
  engine::Graph::Node* node = graph->graph.AddNode(nodes, std::move(run), host);
  if (!node) return hipErrorInvalidValue;
  *out = reinterpret_cast<hipGraphNode_t>(node);
  return hipSuccess;
}

}  // namespace

HALSIM_EXPORT hipError_t hipGraphCreate(hipGraph_t* out, unsigned int flags) {
  HALSIM_ENTER("hipGraphCreate");
  HALSIM_NEED_DEVICE(dev);
  if (!out || flags != 0) return hipErrorInvalidValue;
  auto* graph = new Graph();
  graph->device = dev;
  *out = reinterpret_cast<hipGraph_t>(graph);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
  HALSIM_ENTER("hipGraphDestroy");
  HALSIM_NEED_INIT();
  if (!graph) return hipErrorInvalidValue;
  delete AsGraph(graph);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipGraphAddEmptyNode(hipGraphNode_t* out,
                                              hipGraph_t graph,
                                              const hipGraphNode_t* deps,
                                              size_t num_deps) {
  HALSIM_ENTER("hipGraphAddEmptyNode");
  HALSIM_NEED_DEVICE(dev);
  return AddNode(out, graph, deps, num_deps, nullptr);
}

HALSIM_EXPORT hipError_t hipGraphAddKernelNode(hipGraphNode_t* out,
                                               hipGraph_t graph,
                                               const hipGraphNode_t* deps,
                                               size_t num_deps,
                                               const hipKernelNodeParams* p) {
  HALSIM_ENTER("hipGraphAddKernelNode");
  HALSIM_NEED_DEVICE(dev);
  if (!p || !graph) return hipErrorInvalidValue;
  // `func` is a module function (hipModuleGetFunction); parameters are
  // copied now, as HIP does.
  const uint32_t grid[3] = {p->gridDim.x, p->gridDim.y, p->gridDim.z};
  const uint32_t block[3] = {p->blockDim.x, p->blockDim.y, p->blockDim.z};
  engine::Work work;
  hipError_t r = KernelOp(AsGraph(graph)->device,
                          static_cast<hipFunction_t>(p->func), grid, block,
                          p->sharedMemBytes, p->kernelParams, p->extra, &work);
  if (r != hipSuccess) return r;
  return AddNode(out, graph, deps, num_deps, std::move(work));
}

HALSIM_EXPORT hipError_t hipGraphAddMemsetNode(hipGraphNode_t* out,
                                               hipGraph_t graph,
                                               const hipGraphNode_t* deps,
                                               size_t num_deps,
                                               const hipMemsetParams* p) {
  HALSIM_ENTER("hipGraphAddMemsetNode");
  HALSIM_NEED_DEVICE(dev);
  if (!p || !graph) return hipErrorInvalidValue;
  if (p->height != 1) {
    std::fprintf(stderr,
                 "halsim_hip: 2D memset nodes are not simulated (height "
                 "%zu)\n",
                 p->height);
    return hipErrorNotSupported;
  }
  const uintptr_t dst = reinterpret_cast<uintptr_t>(p->dst);
  const unsigned size = p->elementSize;
  if (!dst || (size != 1 && size != 2 && size != 4) || dst % size) {
    return hipErrorInvalidValue;
  }
  return AddNode(out, graph, deps, num_deps,
                 E().FillWork(&AsGraph(graph)->device->domain, dst, p->value,
                              static_cast<int>(size), p->width));
}

HALSIM_EXPORT hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* out,
                                                 hipGraph_t graph,
                                                 const hipGraphNode_t* deps,
                                                 size_t num_deps, void* dst,
                                                 const void* src, size_t count,
                                                 hipMemcpyKind kind) {
  HALSIM_ENTER("hipGraphAddMemcpyNode1D");
  HALSIM_NEED_DEVICE(dev);
  if (!graph || ((!dst || !src) && count) || kind < hipMemcpyHostToHost ||
      kind > hipMemcpyDefault) {
    return hipErrorInvalidValue;
  }
  return AddNode(out, graph, deps, num_deps,
                 E().CopyWork(&AsGraph(graph)->device->domain,
                              reinterpret_cast<uintptr_t>(dst),
                              reinterpret_cast<uintptr_t>(src), count));
}

HALSIM_EXPORT hipError_t hipGraphAddHostNode(hipGraphNode_t* out,
                                             hipGraph_t graph,
                                             const hipGraphNode_t* deps,
                                             size_t num_deps,
                                             const hipHostNodeParams* p) {
  HALSIM_ENTER("hipGraphAddHostNode");
  HALSIM_NEED_DEVICE(dev);
  if (!p || !p->fn) return hipErrorInvalidValue;
  hipHostFn_t fn = p->fn;
  void* user_data = p->userData;
  // As a stream callback: no HIP calls from inside.
  return AddNode(out, graph, deps, num_deps,
                 Engine::AsHostCallback([fn, user_data] { fn(user_data); }),
                 /*host=*/true);
}

HALSIM_EXPORT hipError_t hipGraphInstantiateWithFlags(
    hipGraphExec_t* out, hipGraph_t graph, unsigned long long flags) {
  HALSIM_ENTER("hipGraphInstantiateWithFlags");
  HALSIM_NEED_DEVICE(dev);
  if (!out || !graph) return hipErrorInvalidValue;
  if (flags != 0) return hipErrorNotSupported;
  *out = reinterpret_cast<hipGraphExec_t>(
      new engine::GraphExec(E(), AsGraph(graph)->graph, /*random=*/nullptr));
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t hexec,
                                        hipStream_t hstream) {
  HALSIM_ENTER("hipGraphLaunch");
  HALSIM_NEED_DEVICE(dev);
  auto* exec = reinterpret_cast<engine::GraphExec*>(hexec);
  if (!exec) return hipErrorInvalidValue;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  return ToHipError(exec->Launch(stream->queue));
}

HALSIM_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t hexec) {
  HALSIM_ENTER("hipGraphExecDestroy");
  HALSIM_NEED_INIT();
  if (!hexec) return hipErrorInvalidValue;
  // In-flight launches keep the node list.
  delete reinterpret_cast<engine::GraphExec*>(hexec);
  return hipSuccess;
}
