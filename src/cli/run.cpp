// `ddpbisect run SPEC [--stage NAME] [--set KEY=VALUE]... [--json]`: one trial and its outcome.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/json_util.hpp"
#include "common/text.hpp"
#include "observe/trial_runner.hpp"
#include "spec/loader.hpp"

namespace ddpbisect::cli {

namespace {

void print_outcome(const TrialConfig& config, const TrialOutcome& outcome) {
  std::cout << to_string(outcome.status) << ": " << visible_text(outcome.reason) << " ("
            << plural(config.world_size(), "rank") << ", " << format_number(outcome.duration_s)
            << " s)\n";
  for (const auto& rk : outcome.ranks) {
    std::cout << "  rank " << rk.rank << " (node " << rk.node << "): ";
    if (rk.signal)
      std::cout << "killed by signal " << rk.signal;
    else
      std::cout << "exit " << rk.exit_code;
    if (rk.killed_by != StopReason::None)
      std::cout << " [stopped by ddpbisect: " << to_string(rk.killed_by) << "]";
    std::cout << ", last step " << rk.last_step << ", log " << rk.stderr_path << "\n";
  }
  std::cout << "  outcome: " << outcome.dir << "/outcome.json\n";
}

}  // namespace

int run(const RunOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return bad_input();
  const Spec& spec = *loaded;
  auto trial = trial_config_or_report(spec, o.stage, o.sets);
  if (!trial) return bad_input();
  const TrialConfig& config = *trial;
  const std::string root = o.out.empty() ? spec.report_dir : o.out;
  TrialOutcome outcome;
  // An address-in-use failure is not the bug: retry on a fresh port.
  for (int attempt = 0; attempt < 3; ++attempt) {
    TrialRequest req{&spec, config, next_trial_dir(root), {}};
    outcome = run_trial(req);
    if (!(outcome.status == TrialStatus::Infra && outcome.port_clash)) break;
    note(outcome.reason + "; retrying on a new port");
  }
  if (o.json)
    std::cout << json_text(outcome.to_json(), 2) << "\n";
  else
    print_outcome(config, outcome);
  switch (outcome.status) {
    case TrialStatus::Pass:
      return exit_code::kGood;
    case TrialStatus::Fail:
      return exit_code::kFailed;
    case TrialStatus::Interrupted:
      return exit_code::interrupted(outcome.interrupt_signal);
    case TrialStatus::Infra:
      break;
  }
  return exit_code::kSkip;
}

}  // namespace ddpbisect::cli
