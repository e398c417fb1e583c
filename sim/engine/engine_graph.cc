#include "sim/engine/engine_graph.h"

#include <algorithm>
#include <cstdio>

namespace hal::sim::engine {

Graph::Node* Graph::AddNode(const std::vector<const Node*>& deps, Work run,
                            bool host) {
  auto node = std::make_unique<Node>(
      Node{this, nodes_.size(), {}, {}, host, "node", {}, {}});
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

Graph::Node* Graph::AddNode(const std::vector<const Node*>& deps, Work run,
                            bool host, const char* name, Range write,
                            Range read, std::vector<Range> more_writes) {
  Node* node = AddNode(deps, std::move(run), host);
  if (node) {
    node->name = name;
    node->write = write;
    node->read = read;
    node->more_writes = std::move(more_writes);
  }
  return node;
}

std::vector<std::string> Graph::UnorderedConflicts() const {
  std::vector<size_t> ranged;
  for (const auto& node : nodes_) {
    if (!node->write.empty() || !node->read.empty() ||
        !node->more_writes.empty()) {
      ranged.push_back(node->index);
    }
  }
  std::vector<std::string> out;
  if (ranged.size() < 2 || nodes_.size() > kMaxRaceChecked) return out;
  // Dependencies are earlier nodes, so index order is topological: each
  // node's ancestors are its dependencies and theirs.
  const size_t n = nodes_.size(), words = (n + 63) / 64;
  std::vector<uint64_t> ancestors(n * words, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t* mine = &ancestors[i * words];
    for (size_t d : nodes_[i]->deps) {
      const uint64_t* theirs = &ancestors[d * words];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[d / 64] |= uint64_t{1} << (d % 64);
    }
  }
  // Candidate pairs: nodes with overlapping ranges, found by a sweep over
  // the ranges sorted by start (a graph of thousands of disjoint fills has
  // none; comparing every pair took seconds under ASan). Each pair once,
  // lower node first, in node order: the order of the reports.
  struct Interval {
    Range range;
    size_t node;
  };
  std::vector<Interval> intervals;
  for (size_t i : ranged) {
    const Node& node = *nodes_[i];
    for (const Range& r : {node.write, node.read}) {
      if (!r.empty()) intervals.push_back({r, i});
    }
    for (const Range& r : node.more_writes) {
      if (!r.empty()) intervals.push_back({r, i});
    }
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) {
              return a.range.begin < b.range.begin;
            });
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<const Interval*> active;
  for (const Interval& iv : intervals) {
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&iv](const Interval* a) {
                                  return a->range.end <= iv.range.begin;
                                }),
                 active.end());
    for (const Interval* a : active) {
      if (a->node != iv.node) {
        pairs.emplace_back(std::min(a->node, iv.node),
                           std::max(a->node, iv.node));
      }
    }
    active.push_back(&iv);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (const auto& [x, y] : pairs) {
    const Node& a = *nodes_[x];
    const Node& b = *nodes_[y];  // added after a
    if (ancestors[b.index * words + a.index / 64] >> (a.index % 64) & 1) {
      continue;  // ordered
    }
    Op oa, ob;
    oa.write = a.write;
    oa.read = a.read;
    oa.more_writes = a.more_writes;
    ob.write = b.write;
    ob.read = b.read;
    ob.more_writes = b.more_writes;
    Range ra, rb;
    const char* what = FindConflict(oa, ob, &ra, &rb);
    if (!what) continue;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "graph nodes %zu (%s [0x%llx, 0x%llx)) and %zu (%s "
                  "[0x%llx, 0x%llx)) have no path of edges between them "
                  "and %s",
                  a.index, a.name, (unsigned long long)ra.begin,
                  (unsigned long long)ra.end, b.index, b.name,
                  (unsigned long long)rb.begin, (unsigned long long)rb.end,
                  what);
    out.emplace_back(line);
  }
  return out;
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
  state_->races = graph.UnorderedConflicts();
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
    for (const std::string& race : state->races) engine->ReportRace(race);
    for (const Work& node : state->order) node();
    engine->CountGraphRun();
  };
  return engine_.Enqueue(queue, std::move(op));
}

}  // namespace hal::sim::engine
