#include "reduce/pass.hpp"

#include "reduce/engine.hpp"

namespace ddpbisect {

void ReductionState::accept(const TrialConfig& candidate, const std::string& pass,
                            const Oracle& oracle) {
  best = candidate;
  trace.push_back({oracle.stats().trials, pass, candidate});
}

bool Pass::run(ReductionState& s, Oracle& oracle, const Search& lookahead) const {
  const TrialConfig best = s.best;
  Shrunk out;
  run_search(
      oracle, [&](const Ask& ask) { out = shrink(best, ask, oracle); }, lookahead);
  for (const auto& [what, config] : out) s.accept(config, what, oracle);
  return !out.empty();
}

Shrunk shrink_names(const TrialConfig& best, const Ask& ask,
                    std::vector<std::string> TrialConfig::*field, const std::string& pass) {
  const std::vector<std::string> all = best.*field;
  if (all.empty()) return {};
  auto config_of = [&](const ItemSet& items) {
    TrialConfig c = best;
    (c.*field).clear();
    for (size_t i : items) (c.*field).push_back(all[i]);
    return c;
  };
  ItemSet every(all.size());
  for (size_t i = 0; i < all.size(); ++i) every[i] = i;
  const ItemSet kept = ddmin(
      every, [&](const ItemSet& items) { return ask(config_of(items)); }, /*try_empty=*/true);
  if (kept.size() >= all.size()) return {};
  return {{pass, config_of(kept)}};
}

}  // namespace ddpbisect
