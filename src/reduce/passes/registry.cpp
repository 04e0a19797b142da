// The order passes run in, per strategy. Cheap-making dimensions first: fewer ranks and fewer
// steps make every later trial faster.
#include "reduce/pass.hpp"

namespace ddpbisect {

std::vector<std::unique_ptr<Pass>> make_passes(const std::string& strategy) {
  std::vector<std::unique_ptr<Pass>> v;
  if (strategy == "ddmin") {  // the baseline: every dimension flattened into one ddmin
    v.push_back(make_flat_ddmin_pass());
    return v;
  }
  v.push_back(make_topology_pass());
  v.push_back(make_steps_pass());
  v.push_back(make_sample_count_pass());
  v.push_back(make_sample_indices_pass());
  v.push_back(make_components_pass());
  v.push_back(make_features_pass());
  v.push_back(make_params_pass());
  return v;
}

}  // namespace ddpbisect
