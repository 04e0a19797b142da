// `ddpbisect [reduce] SPEC`: escalate, reduce, confirm, report.
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "diagnose/diagnosis.hpp"
#include "reduce/reducer.hpp"
#include "spec/loader.hpp"

namespace ddpbisect::cli {

int reduce(const ReduceCliOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return exit_code::kBadInput;
  const Spec& spec = *loaded;
  ReductionOptions opt;
  opt.out_dir = o.out.empty() ? spec.report_dir : o.out;
  opt.resume = o.resume;
  opt.jobs = static_cast<int>(o.jobs > 0 ? o.jobs : spec.reduce.jobs);
  opt.strategy = o.strategy.empty() ? spec.reduce.strategy : o.strategy;
  if (opt.strategy != "default" && opt.strategy != "ddmin") {
    std::cerr << "ddpbisect: --strategy: expected default or ddmin, found '" << opt.strategy
              << "'\n";
    return exit_code::kBadInput;
  }
  if (o.max_trials > 0) opt.max_trials = o.max_trials;
  if (!o.max_time.empty()) {
    auto d = parse_duration(o.max_time);
    if (!d || d->count() <= 0) {
      std::cerr << "ddpbisect: --max-time: expected a duration such as 90s, 5m or 2h, found '"
                << o.max_time << "'\n";
      return exit_code::kBadInput;
    }
    opt.max_time = d;
  }
  opt.confirm_runs = o.confirm;
  opt.quiet = o.quiet;
  if (!o.from_logs.empty()) {
    DiagnosisInput in;
    in.library_patterns = spec.match.ignore_frames;
    std::string err = inputs_from_paths({o.from_logs}, in);
    if (!err.empty()) {
      std::cerr << "ddpbisect: --from-logs: " << err << "\n";
      return exit_code::kBadInput;
    }
    Diagnosis d = diagnose(in);
    if (!d.failed) {
      std::cerr << "ddpbisect: --from-logs: no failure found in " << o.from_logs << " ("
                << in.logs.size() + in.error_files.size() << " log file(s))\n";
      return exit_code::kBadInput;
    }
    opt.target = d.signature;
    if (!o.quiet)
      std::cerr << "ddpbisect: chasing the failure from " << o.from_logs << ": "
                << d.signature.to_string() << "\n";
  }
  return run_reduction(spec, opt);
}

}  // namespace ddpbisect::cli
