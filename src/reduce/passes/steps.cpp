// Steps: cut right after the step the failure happened at (from the heartbeats of the failing
// trial) and check the cut's lower neighbour, or binary search for the fewest steps that still
// fail when the heartbeats do not say.
#include <algorithm>

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
    auto result = [&](int64_t steps) -> Shrunk {
      if (steps >= current) return {};
      return {{name(), with(steps)}};
    };
    // The fewest failing steps in [lo, hi), `hi` known to fail.
    auto search = [&](int64_t lo, int64_t hi) {
      return smallest_interesting(lo, hi, [&](int64_t v) { return v == hi || ask(with(v)); });
    };
    // A configuration not run yet (the lookahead's) has no failing run: searched from 1.
    const RunRecord* r = oracle.matching_run(best);
    if (!r || r->last_step < 0) return result(search(1, current));
    // Steps 0..last_step completed, so the failure came in the next one: `cut` steps run it.
    const int64_t cut = std::min<int64_t>(r->last_step + 2, current);
    if (cut < current && !ask(with(cut)))
      return result(search(cut + 1, current));  // it needs more steps than the one it failed at
    // The cut fails. A failure raised after the step's heartbeat (a metric or EMA update after
    // opt.step(), a save at the end of training) fails one step earlier too: check the lower
    // neighbour, so that the minimum is 1-minimal. When that fails as well, the failure does not
    // follow the heartbeats: searched from 1.
    if (cut <= 1 || !ask(with(cut - 1))) return result(cut);
    if (cut - 1 <= 1 || !ask(with(cut - 2))) return result(cut - 1);
    return result(search(1, cut - 2));
  }
};
}  // namespace
std::unique_ptr<Pass> make_steps_pass() {
  return std::make_unique<StepsPass>();
}
}  // namespace ddpbisect
