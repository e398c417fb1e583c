// Graph command buffers: the shared deferred command buffer
// (hal/command_buffer.h) turned into a graph (CUgraph, hipGraph_t) at
// submission and launched on the queue's stream as one unit (the seed's
// CUgraph-backed command buffer, docs/drivers/cuda.md).
//
// Shape of the graph. Commands between two execution barriers become nodes
// that depend only on the previous barrier's empty node, so they may run
// concurrently, as the HAL allows; a barrier is an empty node that depends
// on every node since the barrier before (a barrier with nothing since the
// previous one adds no node). Wait-events commands are barriers; signal and
// reset events and debug groups add nothing (the whole graph is one piece of
// stream work). Fills are memset nodes (1, 2 or 4-byte patterns), copies
// memcpy nodes, direct dispatches kernel nodes. Update payloads are copied
// once per graph into pinned host memory that the graph owns, and written by
// memcpy nodes from there. Zero-length transfers and zero-count dispatches
// add no node; a command buffer with no node launches nothing.
//
// Indirect dispatch has no graph form here (its grid is read on the host
// when it runs, see gpu_executable.h): command buffers that contain one are
// replayed onto the stream instead (HasIndirectDispatch).
//
// Reuse. A reusable command buffer's graph is kept (a small LRU cache per
// device, by command buffer) and launched again while every resolved device
// address, parameter and payload byte is the same as when it was built: the
// same binding table, or one naming the same memory. Anything else builds a
// new graph. One-shot command buffers build a graph for their one launch.
//
// Thread safety: GpuGraphCache may be used from any thread.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "hal/command_buffer.h"

namespace hal::gpu {

// One instantiated graph and the memory it reads (update payloads). Must be
// kept alive until its launches completed; destroys the graph and frees the
// payload memory when released.
class GpuCommandGraph;

// True when the command buffer records an indirect dispatch (replayed onto
// the stream instead of as a graph).
bool HasIndirectDispatch(const CommandBuffer& command_buffer);

class GpuGraphCache {
 public:
  // Keeps up to `capacity` graphs of reusable command buffers.
  GpuGraphCache(std::shared_ptr<GpuApi> api, size_t capacity);
  ~GpuGraphCache();

  // The graph of `command_buffer` (validated by ValidateSubmission against
  // `table`; no indirect dispatch), built or reused; null when it has no
  // node. Errors as ReplayCommandBufferOnStream reports them, plus the API's
  // graph errors.
  StatusOr<std::shared_ptr<GpuCommandGraph>> Acquire(
      const Ref<CommandBuffer>& command_buffer, BindingTable table);

  // Launches `graph` on `stream`.
  Status Launch(const GpuCommandGraph& graph, GpuStream stream);

  // Graphs built and launches of a kept graph so far (tests).
  uint64_t graphs_built() const;
  uint64_t graphs_reused() const;

 private:
  struct Entry {
    const CommandBuffer* key;
    std::shared_ptr<GpuCommandGraph> exec;
  };

  std::shared_ptr<GpuApi> api_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t built_ = 0;
  uint64_t reused_ = 0;
};

}  // namespace hal::gpu
