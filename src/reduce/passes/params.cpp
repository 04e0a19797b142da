// Integer params (all but steps): for each in turn, probe the smallest value, then binary search
// for the smallest value that still fails.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class ParamsPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    Shrunk out;  // each param's smallest failing value, in turn
    TrialConfig c = best;
    for (const auto& [k, v] : best.params) {
      if (k == "steps" || v <= 1) continue;
      const int64_t current = v;
      c.params[k] = smallest_interesting(1, current, [&](int64_t x) {
        TrialConfig t = c;
        t.params[k] = x;
        return x == current || ask(t);
      });
      if (c.params[k] < current) out.push_back({name() + "." + k, c});
    }
    return out;
  }
};
}  // namespace
std::unique_ptr<Pass> make_params_pass() {
  return std::make_unique<ParamsPass>();
}
}  // namespace ddpbisect
