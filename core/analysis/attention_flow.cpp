// Attention flow by max-flow (attention_flow.h). Dinic's algorithm on the layered graph:
// breadth-first levels, then blocking flows by depth-first search with per-node edge
// pointers. Capacities are doubles; flows below 1e-12 count as none.
#include "core/analysis/attention_flow.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "core/analysis/attention_rollout.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

constexpr double kEps = 1e-12;

class FlowNetwork {
 public:
  explicit FlowNetwork(int nodes) : adj_(size_t(nodes)), level_(size_t(nodes)), next_(size_t(nodes)) {}

  void add_edge(int from, int to, double capacity) {
    adj_[size_t(from)].push_back(int(edges_.size()));
    edges_.push_back({to, capacity});
    adj_[size_t(to)].push_back(int(edges_.size()));
    edges_.push_back({from, 0.0});
  }

  // The maximum flow from s to t; capacities are restored afterwards for the next pair.
  double max_flow(int s, int t) {
    for (auto& e : edges_) e.flow = 0.0;
    double total = 0;
    while (levels(s, t)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (true) {
        const double f = push(s, t, std::numeric_limits<double>::infinity());
        if (f <= kEps) break;
        total += f;
      }
    }
    return total;
  }

 private:
  struct Edge {
    int to;
    double capacity;
    double flow = 0.0;
  };

  bool levels(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> q;
    level_[size_t(s)] = 0;
    q.push(s);
    while (!q.empty()) {
      const int v = q.front();
      q.pop();
      for (int id : adj_[size_t(v)]) {
        const Edge& e = edges_[size_t(id)];
        if (e.capacity - e.flow > kEps && level_[size_t(e.to)] < 0) {
          level_[size_t(e.to)] = level_[size_t(v)] + 1;
          q.push(e.to);
        }
      }
    }
    return level_[size_t(t)] >= 0;
  }

  double push(int v, int t, double limit) {
    if (v == t) return limit;
    for (int& k = next_[size_t(v)]; k < int(adj_[size_t(v)].size()); ++k) {
      const int id = adj_[size_t(v)][size_t(k)];
      Edge& e = edges_[size_t(id)];
      if (e.capacity - e.flow <= kEps || level_[size_t(e.to)] != level_[size_t(v)] + 1) continue;
      const double f = push(e.to, t, std::min(limit, e.capacity - e.flow));
      if (f > kEps) {
        e.flow += f;
        edges_[size_t(id ^ 1)].flow -= f;
        return f;
      }
    }
    return 0.0;
  }

  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_, next_;
};

}  // namespace

Tensor attention_flow(const std::vector<Tensor>& layers, const std::vector<int64_t>& rows) {
  if (layers.empty()) throw AtlasError("attention flow needs at least one layer");
  const int64_t L = layers.front().shape.at(0);
  for (const Tensor& a : layers)
    if (a.shape.size() != 2 || a.shape[0] != L || a.shape[1] != L)
      throw AtlasError("attention flow: every layer must be [L, L] with the same L");
  for (int64_t r : rows)
    if (r < 0 || r >= L) throw AtlasError("attention flow: token " + std::to_string(r) + " is outside 0.." + std::to_string(L - 1));
  const int64_t n = int64_t(layers.size());
  // Node (l, j) = l * L + j; layer l's matrix connects level l to level l + 1.
  FlowNetwork net(int((n + 1) * L));
  for (int64_t l = 0; l < n; ++l)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) {
        const double c = layers[size_t(l)].data[size_t(i * L + j)];
        if (c > 0) net.add_edge(int(l * L + j), int((l + 1) * L + i), c);
      }
  std::vector<int64_t> wanted = rows;
  if (wanted.empty())
    for (int64_t i = 0; i < L; ++i) wanted.push_back(i);
  Tensor out({L, L});
  std::fill(out.data.begin(), out.data.end(), std::numeric_limits<float>::quiet_NaN());
  for (int64_t i : wanted)
    for (int64_t j = 0; j < L; ++j) out.data[size_t(i * L + j)] = float(net.max_flow(int(j), int(n * L + i)));
  return out;
}

Tensor attention_flow(const Trace& trace, const std::string& stack, int64_t last, const std::vector<int64_t>& rows) {
  const std::vector<Tensor> layers = residual_attention(trace, stack, last);
  const int64_t L = layers.front().shape[0];
  if (rows.empty() && L > kAttentionFlowFullLimit)
    throw AtlasError("attention flow solves one max-flow per pair of tokens; " + std::to_string(L) +
                     " tokens are more than the " + std::to_string(kAttentionFlowFullLimit) +
                     " it computes in full: choose a query (its row alone), or use rollout");
  return attention_flow(layers, rows);
}

}  // namespace atlas
