// Integer params (all but steps): for each in turn, probe the smallest value, then binary search
// for the smallest value that still fails.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class ParamsPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    std::vector<std::string> names;
    for (const auto& [k, v] : s.best.params)
      if (k != "steps" && v > 1) names.push_back(k);
    if (names.empty()) return false;
    std::map<std::string, int64_t> found;  // each param's smallest failing value, in turn
    run_search(oracle, [&](const Ask& ask) {
      TrialConfig c = s.best;
      for (const auto& k : names) {
        const int64_t current = c.params.at(k);
        c.params[k] = smallest_interesting(1, current, [&](int64_t x) {
          TrialConfig t = c;
          t.params[k] = x;
          return x == current || ask(t);
        });
        found[k] = c.params[k];
      }
    });
    bool progress = false;
    for (const auto& k : names) {
      if (found[k] >= s.best.params.at(k)) continue;
      TrialConfig c = s.best;
      c.params[k] = found[k];
      s.accept(c, name() + "." + k, oracle);
      progress = true;
    }
    return progress;
  }
};
}  // namespace
std::unique_ptr<Pass> make_params_pass() {
  return std::make_unique<ParamsPass>();
}
}  // namespace ddpbisect
