// Graphs: a DAG of work, instantiated to one topological order and launched
// as one queue op. Every vendor with graphs or command lists (CUDA and HIP
// graphs, Level Zero command lists, Metal command buffers) maps onto it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/engine/engine.h"

namespace hal::sim::engine {

class Graph {
 public:
  struct Node {
    const Graph* graph;
    size_t index;
    std::vector<size_t> deps;  // indices of earlier nodes
    Work run;                  // empty: an empty node
    bool host;                 // runs host code
    // What the node touches, for the race check between nodes that no
    // path of edges orders (empty: nothing declared).
    const char* name = "node";
    Range write, read;
    std::vector<Range> more_writes;  // a kernel's bindings
  };

  // Adds a node after `deps` (nodes of this graph, no duplicates); null for
  // a foreign, null or duplicate dependency.
  Node* AddNode(const std::vector<const Node*>& deps, Work run, bool host);
  // As above, with the ranges the node writes and reads.
  Node* AddNode(const std::vector<const Node*>& deps, Work run, bool host,
                const char* name, Range write, Range read,
                std::vector<Range> more_writes = {});

  // The vendor runs nodes that no path of edges orders at the same time:
  // each such pair whose ranges conflict (one writes what the other
  // touches), described. Checked for graphs of up to kMaxRaceChecked
  // nodes with ranges (a bitset of ancestors per node).
  static constexpr size_t kMaxRaceChecked = 4096;
  std::vector<std::string> UnorderedConflicts() const;
  size_t size() const { return nodes_.size(); }
  const Node& node(size_t i) const { return *nodes_[i]; }

  // A topological order (Kahn's algorithm). Without `random`, among the
  // ready nodes it always takes the one added last: deterministic, and it
  // differs from the recording order wherever the dependencies allow, so a
  // missing edge shows up as a wrong result. With `random`, the choice
  // among ready nodes is the seed's.
  std::vector<size_t> Order(SimRandom* random = nullptr) const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

// An instantiated graph: its work in one order. Launches of one executable
// run one at a time in launch order, also across queues (as CUDA's do).
class GraphExec {
 public:
  GraphExec(Engine& engine, const Graph& graph, SimRandom* random = nullptr);
  // Enqueues one launch on `queue`. Thread-safe.
  Error Launch(Queue* queue);
  bool has_host_nodes() const { return has_host_nodes_; }

 private:
  struct State {
    std::vector<Work> order;
    std::vector<std::string> races;  // reported at every launch
    SignalPtr finished;              // launches that ran
    uint64_t launched = 0;           // tickets handed out
    std::mutex mutex;
  };
  Engine& engine_;
  bool has_host_nodes_ = false;
  std::shared_ptr<State> state_;  // shared with in-flight launches
};

}  // namespace hal::sim::engine
