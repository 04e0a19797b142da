// The baseline (--strategy ddmin): textbook ddmin over every sample, component and feature
// flattened into one set, as a generic reducer would see the configuration.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class FlatDdminPass : public Pass {
 public:
  std::string name() const override { return "flat_ddmin"; }
  std::string dimension() const override { return "samples"; }
  bool run(ReductionState& s, Oracle& oracle) override {
    const auto samples = s.best.samples.indices();
    const auto components = s.best.components, features = s.best.features;
    const size_t ns = samples.size(), nc = components.size(), total = ns + nc + features.size();
    auto config_of = [&](const ItemSet& items) {
      TrialConfig c = s.best;
      std::vector<int64_t> picked;
      c.components.clear();
      c.features.clear();
      for (size_t i : items) {
        if (i < ns)
          picked.push_back(samples[i]);
        else if (i < ns + nc)
          c.components.push_back(components[i - ns]);
        else
          c.features.push_back(features[i - ns - nc]);
      }
      c.samples = IndexSet::from_indices(picked);
      return c;
    };
    ItemSet every(total);
    for (size_t i = 0; i < total; ++i) every[i] = i;
    ItemSet kept = ddmin(
        every,
        [&](const std::vector<ItemSet>& candidates) {
          std::vector<TrialConfig> configs;
          std::vector<size_t> valid;
          for (size_t i = 0; i < candidates.size(); ++i) {
            TrialConfig c = config_of(candidates[i]);
            if (c.samples.empty()) continue;  // no samples is not a configuration
            configs.push_back(c);
            valid.push_back(i);
          }
          auto verdicts = oracle.interesting_batch(configs);
          std::vector<bool> out(candidates.size(), false);
          for (size_t k = 0; k < valid.size(); ++k) out[valid[k]] = verdicts[k];
          return out;
        },
        /*try_empty=*/false);
    if (kept.size() >= total) return false;
    s.accept(config_of(kept), name(), oracle);
    return true;
  }
};
}  // namespace
std::unique_ptr<Pass> make_flat_ddmin_pass() {
  return std::make_unique<FlatDdminPass>();
}
}  // namespace ddpbisect
