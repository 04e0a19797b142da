#include "reduce/reducer.hpp"

#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>

#include "common/exit_codes.hpp"
#include "launch/process.hpp"
#include "reduce/escalate.hpp"
#include "reduce/journal.hpp"
#include "reduce/oracle.hpp"
#include "reduce/pass.hpp"
#include "reduce/progress.hpp"
#include "report/environment.hpp"
#include "report/report_json.hpp"
#include "report/repro.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

std::map<std::string, std::string> debug_variables(const Spec& spec, const std::string& category) {
  if (!spec.command) return {};  // the built-in worker reads neither variable
  if (category == "hang" || category == "collective_mismatch" || category == "comm_timeout" ||
      category == "trial_timeout")
    return {{"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}};
  if (category == "cuda_error" || category == "cuda_oom") return {{"CUDA_LAUNCH_BLOCKING", "1"}};
  if (category == "nccl_error")
    return {{"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}, {"NCCL_DEBUG", "INFO"}};
  return {};
}

using nlohmann::json;

namespace {

// Reruns the first failure: how often does the target reproduce? Stops early when all agree.
double measure_rate(Oracle& oracle, const TrialConfig& config, int* runs, int* failures) {
  *runs = 1;
  *failures = 1;
  for (int i = 0; i < 10 && !oracle.exhausted(); ++i) {
    if (i >= 6 && *failures == *runs)
      break;  // 7 of 7: deterministic (a 50% flake passes this 0.8% of the time)
    RunRecord r = oracle.run(config);
    ++*runs;
    if (oracle.matches(r)) ++*failures;
  }
  return static_cast<double>(*failures) / *runs;
}

}  // namespace

int run_reduction(const Spec& spec, const ReductionOptions& opt) {
  install_driver_signal_handlers();
  fs::path out(opt.out_dir);
  std::error_code ec;
  const fs::path journal_path = out / "journal.jsonl";
  if (opt.resume) {
    if (!fs::exists(journal_path, ec)) {
      std::cerr << "ddpbisect: --resume: " << journal_path.string()
                << " does not exist; nothing to resume (drop --resume to start)\n";
      return exit_code::kBadInput;
    }
  } else if (fs::exists(out, ec) && !fs::is_empty(out, ec)) {
    std::cerr << "ddpbisect: the output folder " << out.string()
              << " already holds files; it is never overwritten. Continue that reduction with "
                 "--resume, or choose another folder with --out DIR\n";
    return exit_code::kBadInput;
  }
  fs::create_directories(out, ec);
  if (ec) {
    std::cerr << "ddpbisect: cannot create " << out.string() << ": " << ec.message() << "\n";
    return exit_code::kBadInput;
  }

  Journal journal(journal_path.string(), opt.resume);
  Progress progress(opt.quiet);
  OracleOptions oo;
  oo.out_dir = out.string();
  oo.max_trials = opt.max_trials ? opt.max_trials : spec.reduce.max_trials;
  oo.max_time = opt.max_time ? opt.max_time : spec.reduce.max_time;
  oo.jobs = opt.jobs;
  oo.confidence = spec.reduce.confidence;
  oo.level = spec.match.level;
  oo.regex = spec.match.regex;
  Oracle* oracle_ptr = nullptr;
  Oracle oracle(spec, oo, journal, [&](const TrialConfig& c, const RunRecord& r, bool interesting) {
    progress.trial(c, r, interesting, oracle_ptr ? oracle_ptr->stats().trials : 0);
  });
  oracle_ptr = &oracle;

  // The environment probe (a Python interpreter importing torch) runs beside the trials.
  auto environment = std::async(std::launch::async, collect_environment, workload_python(spec));
  ReportInputs report;
  report.spec = &spec;
  report.out_dir = out.string();
  report.strategy = opt.strategy;
  try {
    progress.phase("escalate");
    bool found = false;
    Escalation esc = escalate(spec, oracle, &found, opt.target ? &*opt.target : nullptr);
    report.tried = esc.tried;
    report.job = initial_config(spec, spec.stages.back());
    if (!found) {
      progress.done();
      report.status = "not_reproduced";
      report.environment = environment.get();
      write_reports(report, oracle);
      std::cout << "ddpbisect: no stage failed (" << esc.tried.size()
                << " trials); nothing to reduce. Report: " << (out / "report.md").string() << "\n";
      return exit_code::kNotReproduced;
    }
    progress.note("failure found on stage '" + esc.stage + "': " + esc.run.signature->to_string());
    oracle.set_target(*esc.run.signature, 1.0);
    progress.phase("measure reproduction");
    int runs = 0, failures = 0;
    double rate = measure_rate(oracle, esc.config, &runs, &failures);
    oracle.set_target(*esc.run.signature, rate);
    if (rate < 1.0)
      progress.note("flaky: the failure reproduced " + std::to_string(failures) + " of " +
                    std::to_string(runs) + " times; each candidate gets up to " +
                    std::to_string(oracle.repeats()) + " trials");
    report.escalation_trials = oracle.stats().trials;
    report.stage = esc.stage;
    report.original = esc.config;
    report.first_run = esc.run;

    ReductionState state;
    state.spec = &spec;
    state.best = esc.config;
    state.trace.push_back({oracle.stats().trials, "escalate", esc.config});
    auto passes = make_passes(opt.strategy);
    for (int round = 1;; ++round) {
      bool progress_made = false;
      for (auto& pass : passes) {
        if (!spec.reduce.enabled(pass->dimension()) || oracle.exhausted()) continue;
        progress.phase("round " + std::to_string(round) + ": " + pass->name());
        if (pass->run(state, oracle)) {
          progress_made = true;
          progress.best(state.best);
        }
      }
      if (!progress_made || oracle.exhausted()) break;
    }
    report.minimal = state.best;
    report.trace = state.trace;
    report.reduction_trials = oracle.stats().trials;

    progress.phase("confirm");
    int confirm = opt.confirm_runs >= 0 ? opt.confirm_runs : (rate < 1.0 ? 10 : 3);
    report.confirm_runs = 1;  // the trial that accepted the minimum
    report.confirm_failures = 1;
    for (int i = 0; i < confirm && !oracle.exhausted(); ++i) {
      RunRecord r = oracle.run(state.best);
      ++report.confirm_runs;
      if (oracle.matches(r)) ++report.confirm_failures;
    }
    report.target = oracle.target();
    report.debug_env = debug_variables(spec, report.target.category);
    if (!report.debug_env.empty() && !oracle.exhausted()) {
      progress.phase("debug rerun");
      report.debug_run = oracle.debug_run(state.best, report.debug_env);
    }
    if (const RunRecord* r = oracle.matching_run(state.best)) report.minimal_run = *r;
    report.status = oracle.budget_hit() || oracle.exhausted() ? "budget_exhausted" : "reduced";
    progress.done();
    report.environment = environment.get();
    write_reports(report, oracle);
    std::cout << summary_text(report, oracle);
    return exit_code::kOk;
  } catch (const std::runtime_error& e) {
    progress.done();
    if (std::string(e.what()) == "interrupted") {
      journal.append({{"type", "elapsed"}, {"elapsed_s", oracle.elapsed_s()}});
      std::cerr << "ddpbisect: interrupted; every rank was stopped. Continue with: ddpbisect "
                << spec.file << " --out " << out.string() << " --resume\n";
      return 128 + pending_termination_signal();
    }
    throw;
  }
}

}  // namespace ddpbisect
