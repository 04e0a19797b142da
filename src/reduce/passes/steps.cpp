// Steps: cut right after the step the failure happened at (from the heartbeats of the failing
// trial), then binary search for the fewest steps that still fail.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class StepsPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    auto it = s.best.params.find("steps");
    if (it == s.best.params.end() || it->second <= 1) return false;
    const int64_t current = it->second;
    std::optional<int64_t> cut;
    if (const RunRecord* r = oracle.matching_run(s.best); r && r->last_step >= 0) {
      // Steps 0..last_step completed, the failure came in the next one.
      // Fewer steps cannot reach the failing step: no search below the cut.
      cut = r->last_step + 2;
      if (*cut >= current) return false;
    }
    auto with = [&](int64_t steps) {
      TrialConfig c = s.best;
      c.params["steps"] = steps;
      return c;
    };
    int64_t best = current;
    run_search(oracle, [&](const Ask& ask) {
      int64_t lo = 1;
      if (cut) {
        if (ask(with(*cut))) {
          best = *cut;
          return;
        }
        lo = *cut + 1;  // it needs more steps than the one it failed at: search above the cut
      }
      best = smallest_interesting(lo, current,
                                  [&](int64_t v) { return v == current || ask(with(v)); });
    });
    if (best >= current) return false;
    s.accept(with(best), name(), oracle);
    return true;
  }
};
}  // namespace
std::unique_ptr<Pass> make_steps_pass() {
  return std::make_unique<StepsPass>();
}
}  // namespace ddpbisect
