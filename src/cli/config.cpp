// `ddpbisect config SPEC [--stage NAME] [--set KEY=VALUE]...`: one trial's rank configuration.
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "spec/loader.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect::cli {

std::optional<Spec> load_spec_or_report(const std::string& path) {
  LoadResult r = load_spec_file(path);
  for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
  return r.spec;
}

std::optional<TrialConfig> trial_config_or_report(const Spec& spec, const std::string& stage_name,
                                                  const std::vector<std::string>& sets,
                                                  const std::string& command, bool first) {
  const Stage* stage = !stage_name.empty() ? spec.find_stage(stage_name)
                       : first             ? &spec.stages.front()
                                           : &spec.stages.back();
  if (!stage) {
    std::cerr << "ddpbisect " << command << ": --stage: no stage named '" << stage_name << "' in "
              << spec.file << "\n";
    return std::nullopt;
  }
  TrialConfig t = initial_config(spec, *stage);
  for (const auto& s : sets) {
    std::string err = apply_override(t, s);
    if (!err.empty()) {
      std::cerr << "ddpbisect " << command << ": --set " << s << ": " << err << "\n";
      return std::nullopt;
    }
  }
  return t;
}

int config(const ConfigOptions& o) {
  auto spec = load_spec_or_report(o.spec);
  if (!spec) return exit_code::kBadInput;
  auto t = trial_config_or_report(*spec, o.stage, o.sets, "config");
  if (!t) return exit_code::kBadInput;
  std::cout << rank_config_json(*spec, *t).dump(2) << "\n";
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
