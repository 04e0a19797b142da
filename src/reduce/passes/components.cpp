// Components: the model components (or the command's named parts) the failure needs.
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class ComponentsPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    return reduce_names(s, oracle, &TrialConfig::components, name());
  }
};
}  // namespace
std::unique_ptr<Pass> make_components_pass() {
  return std::make_unique<ComponentsPass>();
}
}  // namespace ddpbisect
