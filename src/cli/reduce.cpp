// `ddpbisect [reduce] SPEC`: prepare the output folder, run the reduction beside the environment
// probe, hand the result to the report writers, print the summary.
#include <filesystem>
#include <future>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/output.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/torchrun.hpp"
#include "probe/environment.hpp"
#include "reduce/auto_dims.hpp"
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

// --jobs: 1 to 256, or auto (0: as many as the resources hold).
std::optional<int> parse_jobs(const std::string& text) {
  if (text == "auto") return 0;
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int n = std::stoi(text);
  if (n < 1 || n > 256) return std::nullopt;
  return n;
}

// --from-logs: the failure diagnosed from the user's own logs; nullopt after printing why not.
std::optional<Diagnosis> target_from_logs(const Spec& spec, const ReduceCliOptions& o) {
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
  return d;
}

// The reduction's options from the flags and the spec; nullopt after printing what is wrong.
std::optional<ReductionOptions> reduction_options(const Spec& spec, const ReduceCliOptions& o) {
  ReductionOptions opt;
  opt.out_dir = o.out.empty() ? spec.report_dir : o.out;
  opt.resume = o.resume;
  opt.jobs = static_cast<int>(spec.reduce.jobs);
  if (!o.jobs.empty()) {
    auto jobs = parse_jobs(o.jobs);
    if (!jobs) {
      error("--jobs: expected a number from 1 to 256 or auto, found '" + o.jobs + "'");
      return std::nullopt;
    }
    opt.jobs = *jobs;
  }
  opt.strategy = o.strategy.empty() ? spec.reduce.strategy : o.strategy;
  if (!is_strategy(opt.strategy)) {
    std::string guess = suggest(opt.strategy, strategy_names());
    error("--strategy: expected one of " + join(strategy_names(), ", ") + ", found '" +
          opt.strategy + "'" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
    return std::nullopt;
  }
  if (o.max_trials > 0) opt.max_trials = o.max_trials;
  if (!o.max_time.empty()) {
    auto d = parse_duration(o.max_time);
    if (!d || d->count() <= 0) {
      error("--max-time: expected a duration such as 90s, 5m or 2h, found '" + o.max_time + "'");
      return std::nullopt;
    }
    opt.max_time = d;
  }
  opt.confirm_runs = o.confirm;
  opt.quiet = o.quiet;
  if (!o.stage.empty() && !spec.find_stage(o.stage)) {
    std::vector<std::string> names;
    for (const auto& st : spec.stages) names.push_back(st.name);
    std::string guess = suggest(o.stage, names);
    error("--stage: no stage '" + o.stage + "' in " + spec.file + " (stages: " + join(names, ", ") +
          ")" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
    return std::nullopt;
  }
  opt.start_stage = o.stage;
  if (!o.from_logs.empty()) {
    auto seen = target_from_logs(spec, o);
    if (!seen) return std::nullopt;
    opt.target = seen->signature;
    for (const auto& r : seen->ranks)
      opt.seen_world_size = std::max(opt.seen_world_size, r.rank + 1);
  }
  return opt;
}

}  // namespace

int reduce(const ReduceCliOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return bad_input();
  const Spec& spec = *loaded;
  if (spec.command && !o.quiet)
    for (const auto& n : launch_form_notes(spec.command->argv)) note("workload.command: " + n);
  auto options = reduction_options(spec, o);
  if (!options) return bad_input();
  const ReductionOptions& opt = *options;
  if (!prepare_out_dir(opt)) return bad_input();

  // The environment probe (a Python interpreter importing torch) runs beside the trials.
  auto environment = std::async(std::launch::async, collect_environment, workload_python(spec));
  ReportInputs report;
  report.spec = &spec;
  report.out_dir = opt.out_dir;
  const std::string resume =
      "ddpbisect " + shell_quote(spec.file) + " --out " + shell_quote(opt.out_dir) + " --resume";
  try {
    report.result = run_reduction(spec, opt);
    report.environment = environment.get();
    write_reports(report);
  } catch (const Interrupted& e) {
    note(std::string(e.what()) + "; every rank was stopped. Continue with: " + resume);
    return exit_code::interrupted(e.signal());
  } catch (const WorkloadInputError& e) {
    error(e.what());
    return bad_input();
  } catch (const OutputError& e) {
    // Our own files: the journal holds every finished trial, whole; nothing is lost.
    error(std::string(e.what()) +
          (e.disk_full() ? " (the output folder's filesystem is full, or has less than 1 MiB free)"
                         : "") +
          ". Every rank was stopped and every finished trial is in the journal; make room and "
          "continue with: " +
          resume);
    return exit_code::kInternal;
  }
  if (report.result.status == ReductionStatus::NotReproduced &&
      !report.result.not_started.empty()) {
    std::cout << "ddpbisect: " << report.result.not_started
              << ". Nothing to reduce: fix the launch first. Report: "
              << (fs::path(opt.out_dir) / "report.md").string() << "\n";
    return exit_code::kNotReproduced;
  }
  if (report.result.status == ReductionStatus::NotReproduced) {
    std::cout << "ddpbisect: no stage failed"
              << (report.result.notes.empty() ? "" : " the way your job does") << " ("
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
