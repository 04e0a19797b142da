// Features: the toggles that must stay on for the failure.
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class FeaturesPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    return shrink_names(best, ask, &TrialConfig::features, name());
  }
};
}  // namespace
std::unique_ptr<Pass> make_features_pass() {
  return std::make_unique<FeaturesPass>();
}
}  // namespace ddpbisect
