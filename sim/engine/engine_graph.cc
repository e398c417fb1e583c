#include "sim/engine/engine_graph.h"

#include <algorithm>

namespace hal::sim::engine {

Graph::Node* Graph::AddNode(const std::vector<const Node*>& deps, Work run,
                            bool host) {
  auto node = std::make_unique<Node>(Node{this, nodes_.size(), {}, {}, host});
  for (const Node* dep : deps) {
    if (!dep || dep->graph != this) return nullptr;
    if (std::find(node->deps.begin(), node->deps.end(), dep->index) !=
        node->deps.end()) {
      return nullptr;
    }
    node->deps.push_back(dep->index);
  }
  node->run = std::move(run);
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

std::vector<size_t> Graph::Order(SimRandom* random) const {
  const size_t n = nodes_.size();
  std::vector<size_t> missing(n);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    missing[i] = nodes_[i]->deps.size();
    for (size_t d : nodes_[i]->deps) dependents[d].push_back(i);
  }
  std::vector<size_t> ready;  // kept sorted ascending
  for (size_t i = 0; i < n; ++i) {
    if (missing[i] == 0) ready.push_back(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t pick = random ? random->Below(ready.size()) : ready.size() - 1;
    size_t i = ready[pick];
    ready.erase(ready.begin() + pick);
    order.push_back(i);
    for (size_t j : dependents[i]) {
      if (--missing[j] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), j), j);
      }
    }
  }
  return order;
}

GraphExec::GraphExec(Engine& engine, const Graph& graph, SimRandom* random)
    : engine_(engine), state_(std::make_shared<State>()) {
  state_->finished = engine.CreateSignal(0);
  for (size_t i : graph.Order(random)) {
    const Graph::Node& node = graph.node(i);
    if (node.run) state_->order.push_back(node.run);
    has_host_nodes_ = has_host_nodes_ || node.host;
  }
}

Error GraphExec::Launch(Queue* queue) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ticket = state_->launched++;
  }
  Op op;
  op.name = "graph";
  op.host = has_host_nodes_;
  // After the earlier launches of this executable graph.
  op.waits.push_back({state_->finished, Cond::kGe, ticket});
  op.signals.push_back({state_->finished, SignalOp::kAdd, 1, nullptr});
  op.run = [state = state_, engine = &engine_] {
    for (const Work& node : state->order) node();
    engine->CountGraphRun();
  };
  return engine_.Enqueue(queue, std::move(op));
}

}  // namespace hal::sim::engine
