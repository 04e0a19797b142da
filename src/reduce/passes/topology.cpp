// Topology: the fewest ranks that still fail (fewer nodes preferred at equal world size).
#include <algorithm>

#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class TopologyPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    std::vector<std::pair<int64_t, int64_t>> shapes;  // (nodes, procs per node)
    for (int64_t n = 1; n <= best.nodes; ++n)
      for (int64_t p = 1; p <= best.procs_per_node; ++p)
        if (n * p < best.world_size() || (n * p == best.world_size() && n < best.nodes))
          shapes.push_back({n, p});
    std::sort(shapes.begin(), shapes.end(), [](auto a, auto b) {
      return std::make_pair(a.first * a.second, a.first) <
             std::make_pair(b.first * b.second, b.first);
    });
    for (auto [n, p] : shapes) {  // the first that fails, in order
      TrialConfig c = best;
      c.nodes = n;
      c.procs_per_node = p;
      if (ask(c)) return {{name(), c}};
    }
    return {};
  }
};
}  // namespace
std::unique_ptr<Pass> make_topology_pass() {
  return std::make_unique<TopologyPass>();
}
}  // namespace ddpbisect
