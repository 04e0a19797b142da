// Features: the toggles that must stay on for the failure.
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class FeaturesPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    return reduce_names(s, oracle, &TrialConfig::features, name());
  }
};
}  // namespace
std::unique_ptr<Pass> make_features_pass() {
  return std::make_unique<FeaturesPass>();
}
}  // namespace ddpbisect
