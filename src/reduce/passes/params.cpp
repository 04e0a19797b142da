// Integer params (all but steps): probe the smallest value, then binary search for the smallest
// value that still fails.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class ParamsPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    bool progress = false;
    std::vector<std::string> names;
    for (const auto& [k, v] : s.best.params)
      if (k != "steps" && v > 1) names.push_back(k);
    for (const auto& k : names) {
      const int64_t current = s.best.params.at(k);
      int64_t v = smallest_interesting(1, current, [&](int64_t x) {
        TrialConfig c = s.best;
        c.params[k] = x;
        return x == current || oracle.interesting(c);
      });
      if (v < current) {
        TrialConfig c = s.best;
        c.params[k] = v;
        s.accept(c, name() + "." + k, oracle);
        progress = true;
      }
    }
    return progress;
  }
};
}  // namespace
std::unique_ptr<Pass> make_params_pass() {
  return std::make_unique<ParamsPass>();
}
}  // namespace ddpbisect
