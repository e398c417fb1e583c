// Graphs for every skin, over engine graphs (sim/engine/engine_graph.h).
//
// A graph is its nodes in creation order, each with its dependencies (nodes
// of the same graph, so added before it). Instantiation fixes one execution
// order: a topological order that, among the nodes whose dependencies all
// ran, always takes the one added last (the engine's unseeded order; kept so
// that a seed replays as before). A launch enqueues the whole order as one
// stream op; every node runs with the checks of its stream form (op faults,
// ranges, kernel bounds, sticky errors). Launches of one executable graph
// run one at a time in launch order, as CUDA and HIP order them, also
// across streams.
#include <cstdio>

#include "sim/skin/skin_stream.h"

namespace hal::sim::skin {

Code AddNode(Graph* graph, const void* const* deps, size_t num_deps,
             engine::Work run, bool host, const void** out, const char* name,
             Range write, Range read, std::vector<Range> more_writes) {
  if (!graph || (num_deps && !deps)) return Code::kInvalidValue;
  std::vector<const engine::Graph::Node*> nodes(num_deps);
  for (size_t i = 0; i < num_deps; ++i) {
    nodes[i] = static_cast<const engine::Graph::Node*>(deps[i]);
  }
  engine::Graph::Node* node = graph->graph.AddNode(
      nodes, std::move(run), host, name, write, read, std::move(more_writes));
  if (!node) return Code::kInvalidValue;  // foreign, null or duplicate deps
  *out = node;
  return Code::kOk;
}

Code FillNodeWork(StreamLibrary& lib, Graph* graph, uintptr_t dst,
                  uint32_t value, unsigned size, size_t width, size_t height,
                  engine::Work* out) {
  if (!graph) return Code::kInvalidValue;
  if (height != 1) {
    std::fprintf(stderr, "%s: 2D memset nodes are not simulated (height %zu)\n",
                 lib.options().log_prefix, height);
    return Code::kNotSupported;
  }
  if (!dst || (size != 1 && size != 2 && size != 4) || dst % size) {
    return Code::kInvalidValue;
  }
  *out = lib.engine().FillWork(&graph->scope->domain, dst, value,
                               static_cast<int>(size), width);
  return Code::kOk;
}

Code Instantiate(StreamLibrary& lib, Graph* graph, unsigned long long flags,
                 GraphExec** out) {
  if (!out || !graph) return Code::kInvalidValue;
  if (flags != 0) return Code::kNotSupported;
  *out = lib.New<GraphExec>(lib.engine(), graph->graph);
  return Code::kOk;
}

Code LaunchGraph(StreamLibrary& lib, const void* handle, Stream* stream) {
  GraphExec* exec = lib.Find<GraphExec>(handle);
  if (!exec) return Code::kInvalidValue;
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  return FromEngine(exec->exec.Launch(stream->queue));
}

Code DestroyGraph(StreamLibrary& lib, const void* graph) {
  return lib.Destroy<Graph>(graph) == Code::kOk ? Code::kOk
                                                : Code::kInvalidValue;
}

Code DestroyGraphExec(StreamLibrary& lib, const void* exec) {
  return lib.Destroy<GraphExec>(exec) == Code::kOk ? Code::kOk
                                                   : Code::kInvalidValue;
}

}  // namespace hal::sim::skin
