#include "reduce/reducer.hpp"

#include <filesystem>

#include "common/interrupt.hpp"
#include "reduce/escalate.hpp"
#include "reduce/journal.hpp"
#include "reduce/oracle.hpp"
#include "reduce/pass.hpp"
#include "reduce/progress.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

std::map<std::string, std::string> debug_variables(const Spec& spec, const std::string& category) {
  if (!spec.command) return {};  // the built-in worker reads neither variable
  if (category == "hang" || category == "collective_mismatch" || category == "comm_timeout" ||
      category == "trial_timeout")
    return {{"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}, {"DDPBISECT_FLIGHT_RECORDER", "1"}};
  if (category == "cuda_error" || category == "cuda_oom") return {{"CUDA_LAUNCH_BLOCKING", "1"}};
  if (category == "nccl_error")
    return {{"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}, {"NCCL_DEBUG", "INFO"}};
  return {};
}

using nlohmann::json;

namespace {

struct Rate {
  int runs = 1, failures = 1;  // the first failure counts
  double rate() const { return static_cast<double>(failures) / runs; }
};

// Reruns the first failure: how often does the target reproduce? Stops early when all agree.
Rate measure_rate(Oracle& oracle, const TrialConfig& config) {
  Rate m;
  for (int i = 0; i < 10 && !oracle.exhausted(); ++i) {
    if (i >= 6 && m.failures == m.runs)
      break;  // 7 of 7: deterministic (a 50% flake passes this 0.8% of the time)
    RunRecord r = oracle.run(config);
    ++m.runs;
    if (oracle.matches(r)) ++m.failures;
  }
  return m;
}

}  // namespace

ReductionResult run_reduction(const Spec& spec, const ReductionOptions& opt) {
  const fs::path out(opt.out_dir);
  Journal journal((out / "journal.jsonl").string(), opt.resume);
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

  ReductionResult result;
  result.strategy = opt.strategy;
  auto finish = [&] {
    throw_if_interrupted();  // a signal after the last trial still stops the run, resumably
    progress.done();
    result.stats = oracle.stats();
    result.elapsed_s = oracle.elapsed_s();
    result.target_rate = oracle.rate();
    result.repeats = oracle.repeats();
    return result;
  };
  try {
    progress.phase("escalate");
    Escalation esc = escalate(spec, oracle, opt.target ? &*opt.target : nullptr);
    result.tried = esc.tried;
    result.job = initial_config(spec, spec.stages.back());
    if (!esc.found) {
      result.status = ReductionStatus::NotReproduced;
      return finish();
    }
    progress.note("failure found on stage '" + esc.stage + "': " + esc.run.signature->to_string());
    oracle.set_target(*esc.run.signature, 1.0);
    progress.phase("measure reproduction");
    const Rate measured = measure_rate(oracle, esc.config);
    const double rate = measured.rate();
    oracle.set_target(*esc.run.signature, rate);
    if (rate < 1.0)
      progress.note("flaky: the failure reproduced " + std::to_string(measured.failures) + " of " +
                    std::to_string(measured.runs) + " times; each candidate gets up to " +
                    std::to_string(oracle.repeats()) + " trials");
    result.escalation_trials = oracle.stats().trials;
    result.stage = esc.stage;
    result.original = esc.config;
    result.first_run = esc.run;

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
    result.minimal = state.best;
    result.trace = state.trace;
    result.reduction_trials = oracle.stats().trials;

    progress.phase("confirm");
    int confirm = opt.confirm_runs >= 0 ? opt.confirm_runs : (rate < 1.0 ? 10 : 3);
    result.confirm_runs = 1;  // the trial that accepted the minimum
    result.confirm_failures = 1;
    for (int i = 0; i < confirm && !oracle.exhausted(); ++i) {
      RunRecord r = oracle.run(state.best);
      ++result.confirm_runs;
      if (oracle.matches(r)) ++result.confirm_failures;
    }
    result.target = oracle.target();
    result.debug_env = debug_variables(spec, result.target.category);
    if (!result.debug_env.empty() && !oracle.exhausted()) {
      progress.phase("debug rerun");
      result.debug_run = oracle.debug_run(state.best, result.debug_env);
    }
    if (const RunRecord* r = oracle.matching_run(state.best)) result.minimal_run = *r;
    result.status = oracle.budget_hit() || oracle.exhausted() ? ReductionStatus::BudgetExhausted
                                                              : ReductionStatus::Reduced;
    return finish();
  } catch (const Interrupted&) {
    progress.done();
    journal.append({{"type", "elapsed"}, {"elapsed_s", oracle.elapsed_s()}});
    throw;
  }
}

}  // namespace ddpbisect
