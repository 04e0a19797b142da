#include "reduce/pass.hpp"

#include "reduce/engine.hpp"

namespace ddpbisect {

bool ReductionState::try_accept(const TrialConfig& candidate, const std::string& pass,
                                Oracle& oracle) {
  if (candidate.canonical() == best.canonical()) return false;
  if (!oracle.interesting(candidate)) return false;
  accept(candidate, pass, oracle);
  return true;
}

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
  ItemSet kept = ddmin(
      every,
      [&](const std::vector<ItemSet>& candidates) {
        std::vector<TrialConfig> configs;
        for (const auto& c : candidates) configs.push_back(config_of(c));
        return oracle.interesting_batch(configs);
      },
      /*try_empty=*/true);
  if (kept.size() >= all.size()) return false;
  s.accept(config_of(kept), pass, oracle);
  return true;
}

}  // namespace ddpbisect
