// `ddpbisect config SPEC [--stage NAME] [--set KEY=VALUE]...`: one trial's rank configuration.
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "spec/loader.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect::cli {

int config(const ConfigOptions& o) {
  LoadResult r = load_spec_file(o.spec);
  if (!r.spec) {
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    return exit_code::kBadInput;
  }
  const Spec& spec = *r.spec;
  const Stage* stage = o.stage.empty() ? &spec.stages.back() : spec.find_stage(o.stage);
  if (!stage) {
    std::cerr << "ddpbisect: --stage: no stage named '" << o.stage << "' in " << o.spec << "\n";
    return exit_code::kBadInput;
  }
  TrialConfig t = initial_config(spec, *stage);
  for (const auto& s : o.sets) {
    std::string err = apply_override(t, s);
    if (!err.empty()) {
      std::cerr << "ddpbisect: --set " << s << ": " << err << "\n";
      return exit_code::kBadInput;
    }
  }
  std::cout << rank_config_json(spec, t).dump(2) << "\n";
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
