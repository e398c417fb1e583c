#include "drivers/gpu/gpu_graph_command_buffer.h"

#include <cstring>
#include <type_traits>
#include <utility>

#include "drivers/gpu/gpu_allocator.h"
#include "drivers/gpu/gpu_executable.h"
#include "drivers/gpu/gpu_fill.h"
#include "drivers/gpu/gpu_stream_command_buffer.h"

namespace hal::gpu {

namespace {

// One command resolved against a binding table: everything the graph bakes
// in. Two plans that compare equal give the same graph.
struct GraphOp {
  enum class Kind : uint8_t { kBarrier, kFill, kUpdate, kCopy, kDispatch };
  Kind kind = Kind::kBarrier;
  GpuDevicePtr dst = 0;
  GpuDevicePtr src = 0;       // copy source
  size_t data_offset = 0;     // update: into the plan's payload
  DeviceSize size = 0;        // bytes
  uint32_t pattern = 0;       // fill
  size_t pattern_length = 0;  // fill
  GpuKernelLaunch launch;     // dispatch

  bool operator==(const GraphOp&) const = default;
};

// Resolves every command (the checks of the stream replay) into nodes and
// barriers. Commands that do nothing are left out. The update payloads are
// appended to `payload`, which the graph copies into pinned memory.
StatusOr<std::vector<GraphOp>> PlanGraph(GpuApi* api, const CommandBuffer& cb,
                                         BindingTable table,
                                         std::vector<uint8_t>* payload) {
  std::vector<GraphOp> ops;
  for (const Command& command : cb.commands()) {
    Status status = std::visit(
        [&](const auto& c) -> Status {
          using T = std::decay_t<decltype(c)>;
          GraphOp op;
          if constexpr (std::is_same_v<T, cmd::Fill>) {
            HAL_ASSIGN_OR_RETURN(
                GpuRange r,
                ResolveGpuRange(c.target, table, kWholeBuffer, "fill"));
            if (r.length == 0) return OkStatus();
            op.kind = GraphOp::Kind::kFill;
            op.dst = r.address;
            op.size = r.length;
            op.pattern = c.pattern;
            op.pattern_length = c.pattern_length;
          } else if constexpr (std::is_same_v<T, cmd::Update>) {
            HAL_ASSIGN_OR_RETURN(
                GpuRange r,
                ResolveGpuRange(c.target, table, kWholeBuffer, "update"));
            if (r.length == 0) return OkStatus();
            op.kind = GraphOp::Kind::kUpdate;
            op.dst = r.address;
            op.data_offset = payload->size();
            payload->insert(payload->end(), c.data.begin(),
                            c.data.begin() + r.length);
            op.size = r.length;
          } else if constexpr (std::is_same_v<T, cmd::Copy>) {
            HAL_ASSIGN_OR_RETURN(
                GpuRange s,
                ResolveGpuRange(c.source, table, c.length, "copy source"));
            HAL_ASSIGN_OR_RETURN(
                GpuRange t,
                ResolveGpuRange(c.target, table, c.length, "copy target"));
            if (c.length == 0) return OkStatus();
            op.kind = GraphOp::Kind::kCopy;
            op.src = s.address;
            op.dst = t.address;
            op.size = c.length;
          } else if constexpr (std::is_same_v<T, cmd::Dispatch>) {
            op.kind = GraphOp::Kind::kDispatch;
            HAL_ASSIGN_OR_RETURN(op.launch, ResolveGpuDispatch(api, c, table));
            if (op.launch.empty()) return OkStatus();
          } else if constexpr (std::is_same_v<T, cmd::Barrier> ||
                               std::is_same_v<T, cmd::WaitEvents>) {
            // A wait on events recorded earlier in the same command buffer
            // orders like a barrier (stricter than the events ask, never
            // weaker). Two barriers in a row are one.
            if (ops.empty() || ops.back().kind == GraphOp::Kind::kBarrier) {
              return OkStatus();
            }
            op.kind = GraphOp::Kind::kBarrier;
          } else {
            // Signal/reset events and debug groups: the graph is one piece
            // of stream work, so nothing outside it can observe them.
            return OkStatus();
          }
          ops.push_back(std::move(op));
          return OkStatus();
        },
        command);
    HAL_RETURN_IF_ERROR(status);
  }
  while (!ops.empty() && ops.back().kind == GraphOp::Kind::kBarrier) {
    ops.pop_back();  // a trailing barrier orders nothing inside the graph
  }
  return ops;
}

}  // namespace

class GpuCommandGraph {
 public:
  explicit GpuCommandGraph(std::shared_ptr<GpuApi> api)
      : api_(std::move(api)) {}
  ~GpuCommandGraph() {
    if (exec_) api_->GraphExecDestroy(exec_).IgnoreError();
    if (payload_) api_->MemFreeHost(payload_).IgnoreError();
  }
  GpuCommandGraph(const GpuCommandGraph&) = delete;
  GpuCommandGraph& operator=(const GpuCommandGraph&) = delete;

  // Builds and instantiates the graph of `ops`; `data` is the plan's update
  // payload.
  Status Build(std::vector<GraphOp> ops, const std::vector<uint8_t>& data,
               std::vector<Ref<Executable>> executables) {
    ops_ = std::move(ops);
    executables_ = std::move(executables);
    GpuDevicePtr payload_address = 0;
    bool has_update = false;
    for (const GraphOp& op : ops_) {
      has_update |= op.kind == GraphOp::Kind::kUpdate;
    }
    if (has_update) {
      // Memcpy nodes read pinned host memory: the payload is copied once.
      HAL_RETURN_IF_ERROR(api_->MemAllocHost(data.size(), &payload_));
      payload_size_ = data.size();
      std::memcpy(payload_, data.data(), data.size());
      HAL_RETURN_IF_ERROR(api_->HostDevicePointer(payload_, &payload_address));
    }

    GpuGraph graph = nullptr;
    HAL_RETURN_IF_ERROR(api_->GraphCreate(&graph));
    Status status = AddNodes(graph, payload_address);
    if (status.ok()) status = api_->GraphInstantiate(graph, &exec_);
    Status destroyed = api_->GraphDestroy(graph);
    HAL_RETURN_IF_ERROR(status);
    return destroyed;
  }

  // True when this graph is what `ops` and `data` would build.
  bool Matches(const std::vector<GraphOp>& ops,
               const std::vector<uint8_t>& data) const {
    if (ops != ops_) return false;
    if (!payload_) return true;
    return data.size() == payload_size_ &&
           std::memcmp(data.data(), payload_, payload_size_) == 0;
  }

  GpuGraphExec exec() const { return exec_; }

 private:
  Status AddNodes(GpuGraph graph, GpuDevicePtr payload_address) {
    GpuGraphNode barrier = nullptr;   // the last barrier's empty node
    std::vector<GpuGraphNode> since;  // nodes after it
    for (GraphOp& op : ops_) {
      std::span<const GpuGraphNode> deps;
      if (barrier) deps = std::span<const GpuGraphNode>(&barrier, 1);
      GpuGraphNode node = nullptr;
      switch (op.kind) {
        case GraphOp::Kind::kBarrier:
          HAL_RETURN_IF_ERROR(api_->GraphAddEmptyNode(graph, since, &barrier));
          since.clear();
          continue;
        case GraphOp::Kind::kFill: {
          // Pieces of a misaligned fill are parallel nodes (disjoint bytes).
          GpuFillPiece pieces[kMaxGpuFillPieces];
          const int n =
              SplitFill(op.dst, op.pattern, op.pattern_length, op.size, pieces);
          for (int i = 0; i < n; ++i) {
            GpuGraphNode piece = nullptr;
            HAL_RETURN_IF_ERROR(api_->GraphAddMemsetNode(
                graph, deps, pieces[i].dst, pieces[i].pattern,
                pieces[i].pattern_length, pieces[i].count, &piece));
            if (i + 1 < n) since.push_back(piece);
            node = piece;
          }
          if (n == 0) continue;
          break;
        }
        case GraphOp::Kind::kUpdate:
          HAL_RETURN_IF_ERROR(api_->GraphAddMemcpyNode(
              graph, deps, op.dst, payload_address + op.data_offset, op.size,
              &node));
          break;
        case GraphOp::Kind::kCopy:
          HAL_RETURN_IF_ERROR(api_->GraphAddMemcpyNode(graph, deps, op.dst,
                                                       op.src, op.size, &node));
          break;
        case GraphOp::Kind::kDispatch: {
          std::vector<void*> params = op.launch.Params();
          HAL_RETURN_IF_ERROR(api_->GraphAddKernelNode(
              graph, deps, op.launch.function, op.launch.grid, op.launch.block,
              op.launch.shared_memory, params.data(), &node));
          break;
        }
      }
      since.push_back(node);
    }
    return OkStatus();
  }

  std::shared_ptr<GpuApi> api_;
  std::vector<GraphOp> ops_;
  // The kernels' modules stay loaded while the graph may launch them.
  std::vector<Ref<Executable>> executables_;
  void* payload_ = nullptr;  // pinned copy of the update payloads
  size_t payload_size_ = 0;
  GpuGraphExec exec_ = nullptr;
};

bool HasIndirectDispatch(const CommandBuffer& command_buffer) {
  for (const Command& command : command_buffer.commands()) {
    if (const auto* d = std::get_if<cmd::Dispatch>(&command);
        d && d->indirect) {
      return true;
    }
  }
  return false;
}

GpuGraphCache::GpuGraphCache(std::shared_ptr<GpuApi> api, size_t capacity)
    : api_(std::move(api)), capacity_(capacity) {}

GpuGraphCache::~GpuGraphCache() = default;

StatusOr<std::shared_ptr<GpuCommandGraph>> GpuGraphCache::Acquire(
    const Ref<CommandBuffer>& command_buffer, BindingTable table) {
  const CommandBuffer& cb = *command_buffer;
  std::vector<uint8_t> payload;
  HAL_ASSIGN_OR_RETURN(std::vector<GraphOp> ops,
                       PlanGraph(api_.get(), cb, table, &payload));
  if (ops.empty()) return std::shared_ptr<GpuCommandGraph>();
  const bool reusable = cb.mode() == CommandBufferMode::kReusable;
  if (reusable) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key != &cb) continue;
      // The key alone is not enough (a new command buffer may reuse the
      // address of a released one): the plan and payload must match too.
      if (it->exec->Matches(ops, payload)) {
        entries_.splice(entries_.begin(), entries_, it);
        ++reused_;
        return entries_.front().exec;
      }
      entries_.erase(it);
      break;
    }
  }

  std::vector<Ref<Executable>> executables;
  for (const Command& command : cb.commands()) {
    if (const auto* d = std::get_if<cmd::Dispatch>(&command)) {
      executables.push_back(Ref<Executable>(d->executable));
    }
  }
  auto graph = std::make_shared<GpuCommandGraph>(api_);
  HAL_RETURN_IF_ERROR(
      graph->Build(std::move(ops), payload, std::move(executables)));
  std::lock_guard<std::mutex> lock(mutex_);
  ++built_;
  if (reusable && capacity_ > 0) {
    entries_.push_front(Entry{&cb, graph});
    while (entries_.size() > capacity_) entries_.pop_back();
  }
  return graph;
}

Status GpuGraphCache::Launch(const GpuCommandGraph& graph, GpuStream stream) {
  return api_->GraphLaunch(graph.exec(), stream);
}

uint64_t GpuGraphCache::graphs_built() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return built_;
}

uint64_t GpuGraphCache::graphs_reused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reused_;
}

}  // namespace hal::gpu
