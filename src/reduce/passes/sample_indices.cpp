// Sample indices: the culprit samples, found one at a time by binary search over prefixes.
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class SampleIndicesPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    const std::vector<int64_t> all = best.samples.indices();
    if (all.size() <= 1) return {};
    auto config_of = [&](const ItemSet& items) {
      std::vector<int64_t> picked;
      for (size_t i : items) picked.push_back(all[i]);
      TrialConfig c = best;
      c.samples = IndexSet::from_indices(picked);
      return c;
    };
    ItemSet every(all.size());
    for (size_t i = 0; i < all.size(); ++i) every[i] = i;
    const ItemSet kept = find_culprits(every, [&](const ItemSet& items) {
      return !items.empty() && (items.size() == all.size() || ask(config_of(items)));
    });
    if (kept.size() >= all.size()) return {};
    return {{name(), config_of(kept)}};
  }
};
}  // namespace
std::unique_ptr<Pass> make_sample_indices_pass() {
  return std::make_unique<SampleIndicesPass>();
}
}  // namespace ddpbisect
