// The Level Zero GpuApi's graphs (ze_api.h): regular command lists.
#include <algorithm>
#include <cstring>

#include "drivers/level_zero/ze_api.h"
#include "drivers/level_zero/ze_api_internal.h"
#include "drivers/level_zero/ze_status.h"

namespace hal::level_zero {

// A GpuGraph is a list of nodes kept on the host. GraphInstantiate appends
// them, in the order they were added (dependencies come first), to one
// regular command list on the compute engine group and closes it, once; a
// node that depends on a node appended since the last barrier gets a
// zeCommandListAppendBarrier before it (empty nodes pass their dependencies
// on). Kernel arguments are captured when appended, so the list is built
// once and re-executed as it is.
//
// A launch orders the list with its stream (an immediate list) by events:
// the stream signals `ready`; the stream's command queue executes [wait
// ready (and the previous launch of the same graph), the graph, signal
// `done`]; the stream waits for `done` and signals `passed`. The launch's
// two small lists and three events are reclaimed once `passed` is signalled
// (the stream read `done`) and the next launch of the graph, which waits on
// `done`, signalled its own `done`.

namespace {

struct ZeGraphNode {
  enum class Kind { kEmpty, kKernel, kFill, kCopy };
  Kind kind = Kind::kEmpty;
  std::vector<ZeGraphNode*> deps;
  int end = -1;  // GraphInstantiate: the last command it waits for
  // kKernel
  ZeFunction* function = nullptr;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t shared_memory = 0;
  std::vector<std::vector<uint8_t>> args;
  // kFill, kCopy
  gpu::GpuDevicePtr dst = 0;
  gpu::GpuDevicePtr src = 0;
  uint32_t pattern = 0;
  size_t pattern_length = 0;
  size_t bytes = 0;
};

struct ZeGraph {
  std::vector<std::unique_ptr<ZeGraphNode>> nodes;
};

ZeGraph* AsGraph(gpu::GpuGraph g) { return static_cast<ZeGraph*>(g); }

}  // namespace

bool ZeApi::SupportsGraphs() const { return true; }

Status ZeApi::GraphCreate(gpu::GpuGraph* out) {
  *out = new ZeGraph();
  return OkStatus();
}

Status ZeApi::GraphDestroy(gpu::GpuGraph graph) {
  delete AsGraph(graph);
  return OkStatus();
}

namespace {

StatusOr<ZeGraphNode*> AddNode(gpu::GpuGraph graph,
                               std::span<const gpu::GpuGraphNode> deps,
                               ZeGraphNode::Kind kind) {
  ZeGraph* g = AsGraph(graph);
  auto node = std::make_unique<ZeGraphNode>();
  node->kind = kind;
  for (gpu::GpuGraphNode d : deps) {
    auto* dep = static_cast<ZeGraphNode*>(d);
    bool found = false;
    for (const auto& n : g->nodes) found = found || n.get() == dep;
    if (!found) {
      return InvalidArgumentError(
          "level_zero: a graph node depends on a node of another graph");
    }
    node->deps.push_back(dep);
  }
  g->nodes.push_back(std::move(node));
  return g->nodes.back().get();
}

}  // namespace

Status ZeApi::GraphAddEmptyNode(gpu::GpuGraph graph,
                                std::span<const gpu::GpuGraphNode> deps,
                                gpu::GpuGraphNode* out) {
  HAL_ASSIGN_OR_RETURN(ZeGraphNode * node,
                       AddNode(graph, deps, ZeGraphNode::Kind::kEmpty));
  *out = node;
  return OkStatus();
}

Status ZeApi::GraphAddKernelNode(
    gpu::GpuGraph graph, std::span<const gpu::GpuGraphNode> deps,
    gpu::GpuFunction function, const uint32_t grid[3], const uint32_t block[3],
    uint32_t shared_memory, void** params, gpu::GpuGraphNode* out) {
  auto* f = static_cast<ZeFunction*>(function);
  if (shared_memory != 0) {
    return UnimplementedError(
        "level_zero: dynamic shared (local) memory is not passed yet");
  }
  HAL_ASSIGN_OR_RETURN(ZeGraphNode * node,
                       AddNode(graph, deps, ZeGraphNode::Kind::kKernel));
  node->function = f;
  std::memcpy(node->grid, grid, sizeof(node->grid));
  std::memcpy(node->block, block, sizeof(node->block));
  for (size_t i = 0; i < f->param_bytes.size(); ++i) {
    const auto* p = static_cast<const uint8_t*>(params[i]);
    node->args.emplace_back(p, p + f->param_bytes[i]);
  }
  *out = node;
  return OkStatus();
}

Status ZeApi::GraphAddMemsetNode(gpu::GpuGraph graph,
                                 std::span<const gpu::GpuGraphNode> deps,
                                 gpu::GpuDevicePtr dst, uint32_t pattern,
                                 size_t pattern_length, size_t count,
                                 gpu::GpuGraphNode* out) {
  HAL_ASSIGN_OR_RETURN(ZeGraphNode * node,
                       AddNode(graph, deps, ZeGraphNode::Kind::kFill));
  node->dst = dst;
  node->pattern = pattern;
  node->pattern_length = pattern_length;
  node->bytes = count * pattern_length;
  *out = node;
  return OkStatus();
}

Status ZeApi::GraphAddMemcpyNode(gpu::GpuGraph graph,
                                 std::span<const gpu::GpuGraphNode> deps,
                                 gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                                 size_t size, gpu::GpuGraphNode* out) {
  HAL_ASSIGN_OR_RETURN(ZeGraphNode * node,
                       AddNode(graph, deps, ZeGraphNode::Kind::kCopy));
  node->dst = dst;
  node->src = src;
  node->bytes = size;
  *out = node;
  return OkStatus();
}

Status ZeApi::GraphAddHostNode(gpu::GpuGraph,
                               std::span<const gpu::GpuGraphNode>,
                               gpu::GpuHostFn, void*, gpu::GpuGraphNode*) {
  // Level Zero has no host functions, and a host node inside a regular
  // list would need a host thread per launch; the graph command buffers
  // add none (gpu_graph_command_buffer.h).
  return UnimplementedError("level_zero: no host nodes in graphs");
}

Status ZeApi::AppendGraphNodes(gpu::GpuGraph graph,
                               ze_command_list_handle_t list) {
  ZeGraph* g = AsGraph(graph);
  int appended = 0;        // commands appended so far
  int barrier_covers = 0;  // commands before the last barrier
  for (const auto& n : g->nodes) {
    int need = -1;
    for (const ZeGraphNode* d : n->deps) need = std::max(need, d->end);
    if (n->kind == ZeGraphNode::Kind::kEmpty) {
      n->end = need;
      continue;
    }
    if (need >= barrier_covers) {
      ZE(zeCommandListAppendBarrier(list, nullptr, 0, nullptr),
         "a graph dependency");
      barrier_covers = appended;
    }
    switch (n->kind) {
      case ZeGraphNode::Kind::kKernel: {
        ZeFunction* f = n->function;
        std::vector<void*> params;
        for (auto& a : n->args) params.push_back(a.data());
        std::lock_guard<std::mutex> lock(f->mutex);
        HAL_RETURN_IF_ERROR(SetKernelState(syms_.get(), f, n->block,
                                           n->shared_memory, params.data()));
        ze_group_count_t groups = {n->grid[0], n->grid[1], n->grid[2]};
        ZE(zeCommandListAppendLaunchKernel(list, f->kernel, &groups, nullptr, 0,
                                           nullptr),
           "a graph kernel node");
        break;
      }
      case ZeGraphNode::Kind::kFill:
        ZE(zeCommandListAppendMemoryFill(list, AsPtr(n->dst), &n->pattern,
                                         n->pattern_length, n->bytes, nullptr,
                                         0, nullptr),
           "a graph fill node of %zu bytes", n->bytes);
        break;
      case ZeGraphNode::Kind::kCopy:
        ZE(zeCommandListAppendMemoryCopy(list, AsPtr(n->dst), AsPtr(n->src),
                                         n->bytes, nullptr, 0, nullptr),
           "a graph copy node of %zu bytes", n->bytes);
        break;
      case ZeGraphNode::Kind::kEmpty:
        break;
    }
    n->end = appended++;
  }
  return OkStatus();
}

Status ZeApi::GraphInstantiate(gpu::GpuGraph graph, gpu::GpuGraphExec* out) {
  ze_command_list_desc_t ld = {};
  ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
  ld.commandQueueGroupOrdinal = compute_ordinal_;
  ze_command_list_handle_t list = nullptr;
  ZE(zeCommandListCreate(context_, device_, &ld, &list),
     "a graph's command list");
  Status status = AppendGraphNodes(graph, list);
  if (status.ok()) {
    status = ZeResultToStatus(syms_->zeCommandListClose(list),
                              "zeCommandListClose", "a graph's command list");
  }
  if (!status.ok()) {
    syms_->zeCommandListDestroy(list);
    return status;
  }
  auto* exec = new GraphExec();
  exec->list = list;
  *out = exec;
  return OkStatus();
}

StatusOr<ze_command_queue_handle_t> ZeApi::GraphQueueLocked(
    gpu::GpuStream stream) {
  for (auto& [s, q] : graph_queues_) {
    if (s == stream) return q;
  }
  ze_command_queue_desc_t qd = {};
  qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  qd.ordinal = compute_ordinal_;
  qd.index = static_cast<uint32_t>(graph_queues_.size()) % compute_queues_;
  qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  qd.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
  ze_command_queue_handle_t q = nullptr;
  ZE(zeCommandQueueCreate(context_, device_, &qd, &q),
     "a command queue for graph launches");
  graph_queues_.emplace_back(stream, q);
  return q;
}

StatusOr<ze_command_list_handle_t> ZeApi::SmallListLocked(
    uint32_t num_waits, ze_event_handle_t* waits, ze_event_handle_t signal) {
  ze_command_list_desc_t ld = {};
  ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
  ld.commandQueueGroupOrdinal = compute_ordinal_;
  ze_command_list_handle_t list = nullptr;
  ZE(zeCommandListCreate(context_, device_, &ld, &list), "a graph launch");
  ze_result_t r = ZE_RESULT_SUCCESS;
  if (num_waits) {
    r = syms_->zeCommandListAppendWaitOnEvents(list, num_waits, waits);
  }
  if (r == ZE_RESULT_SUCCESS && signal) {
    r = syms_->zeCommandListAppendSignalEvent(list, signal);
  }
  if (r == ZE_RESULT_SUCCESS) r = syms_->zeCommandListClose(list);
  if (r != ZE_RESULT_SUCCESS) {
    syms_->zeCommandListDestroy(list);
    return ZeResultToStatus(r, "zeCommandListAppend*", "a graph launch");
  }
  return list;
}

Status ZeApi::GraphLaunch(gpu::GpuGraphExec exec_handle,
                          gpu::GpuStream stream) {
  auto* exec = static_cast<GraphExec*>(exec_handle);
  std::lock_guard<std::mutex> lock(graph_mutex_);
  ReclaimGraphLaunchesLocked(/*wait=*/false);
  HAL_ASSIGN_OR_RETURN(ze_command_queue_handle_t queue,
                       GraphQueueLocked(stream));
  auto record = std::make_unique<GraphLaunchRecord>();
  record->exec = exec;
  // On an error below, what was made so far is released with the record.
  auto fail = [&](Status status) {
    if (record->pre) syms_->zeCommandListDestroy(record->pre);
    if (record->post) syms_->zeCommandListDestroy(record->post);
    for (Slot* slot : {record->ready, record->done, record->passed}) {
      if (slot) ReleaseSlot(slot);
    }
    return status;
  };
  for (Slot** slot : {&record->ready, &record->done, &record->passed}) {
    auto acquired = AcquireSlot();
    if (!acquired.ok()) return fail(acquired.status());
    *slot = *acquired;
  }
  ze_event_handle_t waits[2] = {record->ready->event, nullptr};
  uint32_t num_waits = 1;
  GraphLaunchRecord* previous = nullptr;
  if (exec->last_done) {
    for (auto& r : graph_launches_) {
      if (r->exec == exec) previous = r.get();  // the newest one
    }
    waits[num_waits++] = exec->last_done->event;
  }
  auto pre = SmallListLocked(num_waits, waits, nullptr);
  if (!pre.ok()) return fail(pre.status());
  record->pre = *pre;
  auto post = SmallListLocked(0, nullptr, record->done->event);
  if (!post.ok()) return fail(post.status());
  record->post = *post;
  ze_result_t r = syms_->zeCommandListAppendSignalEvent(AsList(stream),
                                                        record->ready->event);
  if (r != ZE_RESULT_SUCCESS) {
    return fail(ZeResultToStatus(r, "zeCommandListAppendSignalEvent",
                                 "a graph launch"));
  }
  // From here the stream signals `ready`: the record stays until it
  // completes, whatever fails.
  ze_command_list_handle_t lists[3] = {record->pre, exec->list, record->post};
  Status status = OkStatus();
  r = syms_->zeCommandQueueExecuteCommandLists(queue, 3, lists, nullptr);
  if (r != ZE_RESULT_SUCCESS) {
    status = ZeResultToStatus(r, "zeCommandQueueExecuteCommandLists",
                              "a graph launch");
    // Nothing will signal `done`; the stream must not wait for it.
    syms_->zeEventHostSignal(record->done->event);
  }
  r = syms_->zeCommandListAppendWaitOnEvents(AsList(stream), 1,
                                             &record->done->event);
  if (r == ZE_RESULT_SUCCESS) {
    r = syms_->zeCommandListAppendSignalEvent(AsList(stream),
                                              record->passed->event);
  }
  if (r != ZE_RESULT_SUCCESS) {
    // The stream will not pass; reclaim this launch on the host later.
    syms_->zeEventHostSignal(record->passed->event);
    if (status.ok()) {
      status = ZeResultToStatus(r, "zeCommandListAppendWaitOnEvents",
                                "a graph launch");
    }
  }
  if (previous) previous->waited_by = record.get();
  exec->last_done = record->done;
  ++exec->launches_pending;
  graph_launches_.push_back(std::move(record));
  return status;
}

void ZeApi::ReclaimGraphLaunchesLocked(bool wait) {
  auto signalled = [&](Slot* slot) {
    if (wait) {
      return syms_->zeEventHostSynchronize(slot->event, UINT64_MAX) ==
             ZE_RESULT_SUCCESS;
    }
    return syms_->zeEventQueryStatus(slot->event) == ZE_RESULT_SUCCESS;
  };
  // Oldest first, so a record's `waited_by` is still here when it is
  // checked.
  while (!graph_launches_.empty()) {
    GraphLaunchRecord* r = graph_launches_.front().get();
    if (!signalled(r->passed)) return;
    if (r->waited_by && !signalled(r->waited_by->done)) return;
    GraphExec* exec = r->exec;
    if (exec->last_done == r->done) exec->last_done = nullptr;
    syms_->zeCommandListDestroy(r->pre);
    syms_->zeCommandListDestroy(r->post);
    ReleaseSlot(r->ready);
    ReleaseSlot(r->done);
    ReleaseSlot(r->passed);
    graph_launches_.pop_front();
    if (--exec->launches_pending == 0 && exec->destroyed) {
      syms_->zeCommandListDestroy(exec->list);
      delete exec;
    }
  }
}

Status ZeApi::GraphExecDestroy(gpu::GpuGraphExec exec_handle) {
  auto* exec = static_cast<GraphExec*>(exec_handle);
  std::lock_guard<std::mutex> lock(graph_mutex_);
  ReclaimGraphLaunchesLocked(/*wait=*/false);
  exec->destroyed = true;
  if (exec->launches_pending == 0) {
    ze_result_t r = syms_->zeCommandListDestroy(exec->list);
    delete exec;
    if (r != ZE_RESULT_SUCCESS) {
      return ZeResultToStatus(r, "zeCommandListDestroy", "a graph");
    }
  }
  return OkStatus();
}

}  // namespace hal::level_zero
