#include "reduce/pass.hpp"

#include "reduce/engine.hpp"

namespace ddpbisect {

void ReductionState::accept(const TrialConfig& candidate, const std::string& pass,
                            const Oracle& oracle) {
  best = candidate;
  trace.push_back({oracle.stats().trials, pass, candidate});
}

bool reduce_names(ReductionState& s, Oracle& oracle, std::vector<std::string> TrialConfig::*field,
                  const std::string& pass) {
  const std::vector<std::string> all = s.best.*field;
  if (all.empty()) return false;
  auto config_of = [&](const ItemSet& items) {
    TrialConfig c = s.best;
    (c.*field).clear();
    for (size_t i : items) (c.*field).push_back(all[i]);
    return c;
  };
  ItemSet every(all.size());
  for (size_t i = 0; i < all.size(); ++i) every[i] = i;
  ItemSet kept;
  run_search(oracle, [&](const Ask& ask) {
    kept = ddmin(
        every, [&](const ItemSet& items) { return ask(config_of(items)); }, /*try_empty=*/true);
  });
  if (kept.size() >= all.size()) return false;
  s.accept(config_of(kept), pass, oracle);
  return true;
}

}  // namespace ddpbisect
