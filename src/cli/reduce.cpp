// `ddpbisect [reduce] SPEC`: prepare the output folder, run the reduction beside the environment
// probe, hand the result to the report writers, print the summary.
#include <filesystem>
#include <future>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "probe/environment.hpp"
#include "reduce/reducer.hpp"
#include "report/report.hpp"
#include "spec/loader.hpp"
#include "spec/passes.hpp"

namespace fs = std::filesystem;

namespace ddpbisect::cli {

namespace {

// The output folder: never overwritten; with --resume it must hold a journal. Prints what is
// wrong and returns false.
bool prepare_out_dir(const ReductionOptions& opt) {
  const fs::path out(opt.out_dir);
  std::error_code ec;
  const fs::path journal_path = out / "journal.jsonl";
  if (opt.resume) {
    if (!fs::exists(journal_path, ec)) {
      error("--resume: " + journal_path.string() +
            " does not exist; nothing to resume (drop --resume to start)");
      return false;
    }
  } else if (fs::exists(out, ec) && !fs::is_empty(out, ec)) {
    error("the output folder " + out.string() +
          " already holds files; it is never overwritten. Continue that reduction with "
          "--resume, or choose another folder with --out DIR");
    return false;
  }
  fs::create_directories(out, ec);
  if (ec) {
    error("cannot create " + out.string() + ": " + ec.message());
    return false;
  }
  return true;
}

// --from-logs: the failure diagnosed from the user's own logs; nullopt after printing why not.
std::optional<Signature> target_from_logs(const Spec& spec, const ReduceCliOptions& o) {
  PathInputs read = inputs_from_paths({o.from_logs});
  if (read.error) {
    error("--from-logs: " + *read.error);
    return std::nullopt;
  }
  DiagnosisInput& in = read.input;
  in.library_patterns = spec.match.ignore_frames;
  Diagnosis d = diagnose(in);
  if (!d.failed) {
    error("--from-logs: no failure found in " + o.from_logs + " (" +
          plural(static_cast<long long>(in.logs.size() + in.error_files.size()), "log file") + ")");
    return std::nullopt;
  }
  if (!o.quiet) note("chasing the failure from " + o.from_logs + ": " + d.signature.to_string());
  return d.signature;
}

}  // namespace

int reduce(const ReduceCliOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return bad_input();
  const Spec& spec = *loaded;
  ReductionOptions opt;
  opt.out_dir = o.out.empty() ? spec.report_dir : o.out;
  opt.resume = o.resume;
  opt.jobs = static_cast<int>(o.jobs > 0 ? o.jobs : spec.reduce.jobs);
  opt.strategy = o.strategy.empty() ? spec.reduce.strategy : o.strategy;
  if (!is_strategy(opt.strategy)) {
    std::string guess = suggest(opt.strategy, strategy_names());
    error("--strategy: expected one of " + join(strategy_names(), ", ") + ", found '" +
          opt.strategy + "'" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
    return bad_input();
  }
  if (o.max_trials > 0) opt.max_trials = o.max_trials;
  if (!o.max_time.empty()) {
    auto d = parse_duration(o.max_time);
    if (!d || d->count() <= 0) {
      error("--max-time: expected a duration such as 90s, 5m or 2h, found '" + o.max_time + "'");
      return bad_input();
    }
    opt.max_time = d;
  }
  opt.confirm_runs = o.confirm;
  opt.quiet = o.quiet;
  if (!o.from_logs.empty()) {
    opt.target = target_from_logs(spec, o);
    if (!opt.target) return bad_input();
  }
  if (!prepare_out_dir(opt)) return bad_input();

  // The environment probe (a Python interpreter importing torch) runs beside the trials.
  auto environment = std::async(std::launch::async, collect_environment, workload_python(spec));
  ReportInputs report;
  report.spec = &spec;
  report.out_dir = opt.out_dir;
  try {
    report.result = run_reduction(spec, opt);
  } catch (const Interrupted& e) {
    note(std::string(e.what()) + "; every rank was stopped. Continue with: ddpbisect " +
         shell_quote(spec.file) + " --out " + shell_quote(opt.out_dir) + " --resume");
    return exit_code::interrupted(e.signal());
  }
  report.environment = environment.get();
  write_reports(report);
  if (report.result.status == ReductionStatus::NotReproduced) {
    std::cout << "ddpbisect: no stage failed ("
              << plural(static_cast<long long>(report.result.tried.size()), "trial")
              << "); nothing to reduce. Report: " << (fs::path(opt.out_dir) / "report.md").string()
              << "\n";
    return exit_code::kNotReproduced;
  }
  std::cout << summary_text(report);
  return report.result.status == ReductionStatus::BudgetExhausted ? exit_code::kBudgetExhausted
                                                                  : exit_code::kOk;
}

}  // namespace ddpbisect::cli
