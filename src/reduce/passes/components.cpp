// Components: the model components (or the command's named parts) the failure needs.
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class ComponentsPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    return shrink_names(best, ask, &TrialConfig::components, name());
  }
};
}  // namespace
std::unique_ptr<Pass> make_components_pass() {
  return std::make_unique<ComponentsPass>();
}
}  // namespace ddpbisect
