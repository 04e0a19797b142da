// Topology: the fewest ranks that still fail (fewer nodes preferred at equal world size).
#include <algorithm>

#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class TopologyPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    std::vector<std::pair<int64_t, int64_t>> shapes;  // (nodes, procs per node)
    for (int64_t n = 1; n <= s.best.nodes; ++n)
      for (int64_t p = 1; p <= s.best.procs_per_node; ++p)
        if (n * p < s.best.world_size() || (n * p == s.best.world_size() && n < s.best.nodes))
          shapes.push_back({n, p});
    std::sort(shapes.begin(), shapes.end(), [](auto a, auto b) {
      return std::make_pair(a.first * a.second, a.first) <
             std::make_pair(b.first * b.second, b.first);
    });
    std::vector<TrialConfig> candidates;
    for (auto [n, p] : shapes) {
      TrialConfig c = s.best;
      c.nodes = n;
      c.procs_per_node = p;
      candidates.push_back(c);
    }
    std::optional<TrialConfig> found;  // the first that fails, in order
    run_search(oracle, [&](const Ask& ask) {
      found.reset();
      for (const auto& c : candidates)
        if (ask(c)) {
          found = c;
          return;
        }
    });
    if (!found) return false;
    s.accept(*found, name(), oracle);
    return true;
  }
};
}  // namespace
std::unique_ptr<Pass> make_topology_pass() {
  return std::make_unique<TopologyPass>();
}
}  // namespace ddpbisect
