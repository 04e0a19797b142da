// Steps: cut right after the step the failure happened at (from the heartbeats of the failing
// trial), then binary search for the fewest steps that still fail.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class StepsPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle& oracle) const override {
    auto it = best.params.find("steps");
    if (it == best.params.end() || it->second <= 1) return {};
    const int64_t current = it->second;
    auto with = [&](int64_t steps) {
      TrialConfig c = best;
      c.params["steps"] = steps;
      return c;
    };
    int64_t lo = 1;
    // A configuration not run yet (the lookahead's) has no failing run: searched from 1.
    if (const RunRecord* r = oracle.matching_run(best); r && r->last_step >= 0) {
      // Steps 0..last_step completed, the failure came in the next one.
      // Fewer steps cannot reach the failing step: no search below the cut.
      const int64_t cut = r->last_step + 2;
      if (cut >= current) return {};
      if (ask(with(cut))) return {{name(), with(cut)}};
      lo = cut + 1;  // it needs more steps than the one it failed at: search above the cut
    }
    const int64_t fewest =
        smallest_interesting(lo, current, [&](int64_t v) { return v == current || ask(with(v)); });
    if (fewest >= current) return {};
    return {{name(), with(fewest)}};
  }
};
}  // namespace
std::unique_ptr<Pass> make_steps_pass() {
  return std::make_unique<StepsPass>();
}
}  // namespace ddpbisect
