#include "reduce/reducer.hpp"

#include <filesystem>

#include "common/interrupt.hpp"
#include "diagnose/categories.hpp"
#include "observe/outcome.hpp"
#include "reduce/auto_dims.hpp"
#include "reduce/escalate.hpp"
#include "reduce/journal.hpp"
#include "reduce/oracle.hpp"
#include "reduce/pass.hpp"
#include "reduce/progress.hpp"
#include "reduce/reruns.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

std::vector<Env> debug_variants(const Spec& spec, const std::string& category) {
  if (!spec.command) return {};  // the built-in worker reads none of these variables
  // What to set comes from the category table (common/categories.def), the one list of it.
  const Env first = category_debug_variables(category);
  if (first.empty()) return {};
  std::vector<Env> out = {first};
  // PyTorch 2.x's DDP over Gloo crashes in its constructor under DETAIL (its logger casts the
  // wrapped group), so INFO, which does not wrap the group, is the fallback.
  auto level = first.find("TORCH_DISTRIBUTED_DEBUG");
  if (level != first.end() && level->second == "DETAIL") {
    Env info = first;
    info["TORCH_DISTRIBUTED_DEBUG"] = "INFO";
    out.push_back(info);
  }
  return out;
}

namespace {

// One reduction: escalate, measure, passes to a fixpoint, confirm (and, when the confirmation
// shows flakiness, measure and reduce again with repeats), debug rerun.
class Reduction {
 public:
  Reduction(const Spec& spec, const ReductionOptions& opt);
  ReductionResult run();

 private:
  OracleOptions oracle_options() const;
  bool escalate_phase();
  void measure_phase();
  void reduce_phase(const std::string& rounds = "round");
  void recheck_phase();
  bool confirm_phase();
  void restart_from_job();
  void debug_phase();
  std::vector<RunRecord> measure_flaky(const TrialConfig& config, Tally& tally);
  bool retarget_to_dominant(const std::vector<RunRecord>& runs, Tally& tally);
  ReductionResult finish();

  const Spec& spec_;
  const ReductionOptions& opt_;
  Journal journal_;
  Progress progress_;
  Oracle oracle_;
  ReductionResult result_;
  ReductionState state_;
  bool flaky_ = false;
  int reruns_seen_ = 0;  // reruns of known failing configurations, every one reproduced
};

Reduction::Reduction(const Spec& spec, const ReductionOptions& opt)
    : spec_(spec),
      opt_(opt),
      journal_((fs::path(opt.out_dir) / "journal.jsonl").string(), opt.resume),
      progress_(opt.quiet),
      oracle_(
          spec, oracle_options(), journal_,
          [this](const TrialConfig& c, const RunRecord& r, std::optional<bool> interesting) {
            progress_.trial(c, r, interesting, oracle_.stats().trials);
          },
          opt.runner) {
  // Journal lines that did not read back (an edit, a disk fault): their trials run again.
  for (const auto& w : journal_.warnings()) progress_.note("warning: " + w);
  result_.strategy = opt.strategy;
  state_.spec = &spec;
  const OracleOptions oo = oracle_options();
  progress_.budget(oo.max_trials, oo.max_time);
}

OracleOptions Reduction::oracle_options() const {
  OracleOptions oo;
  oo.out_dir = opt_.out_dir;
  oo.max_trials = opt_.max_trials ? opt_.max_trials : spec_.reduce.max_trials;
  oo.max_time = opt_.max_time ? opt_.max_time : spec_.reduce.max_time;
  oo.jobs = opt_.jobs;
  oo.confidence = spec_.reduce.confidence;
  oo.level = spec_.match.level;
  oo.regex = spec_.match.regex;
  return oo;
}

bool Reduction::escalate_phase() {
  progress_.phase("escalate");
  EscalationOptions eo;
  eo.wanted = opt_.target ? &*opt_.target : nullptr;
  eo.start_stage = opt_.start_stage;
  eo.seen_world_size = opt_.seen_world_size;
  Escalation esc = escalate(spec_, oracle_, eo);
  result_.tried = esc.tried;
  for (const auto& n : esc.notes) {
    progress_.note(n);
    result_.notes.push_back(n);
  }
  result_.job = initial_config(spec_, spec_.stages.back());
  if (!esc.found) {
    result_.status = ReductionStatus::NotReproduced;
    result_.not_started = esc.not_started;
    return false;
  }
  // samples: auto / steps: auto: the dimensions come from what this trial measured.
  for (const auto& n : apply_auto_dimensions(spec_, esc.run.dir, esc.config)) {
    progress_.note(n);
    result_.notes.push_back(n);
  }
  progress_.target(*esc.run.signature, esc.run, esc.stage);
  oracle_.set_target(*esc.run.signature, 1.0);
  result_.stage = esc.stage;
  result_.original = esc.config;
  result_.first_run = esc.run;
  state_.best = esc.config;
  state_.trace.push_back({oracle_.stats().trials, "escalate", esc.config});
  return true;
}

// A few more runs of a flaky configuration, up to kMeasureRuns in all: its reproduction rate,
// and from it the trials each candidate needs. Returns the runs it made.
std::vector<RunRecord> Reduction::measure_flaky(const TrialConfig& config, Tally& tally) {
  auto runs = oracle_.runs(config, oracle_.affordable(kMeasureRuns - tally.runs));
  for (const auto& r : runs) tally.add(oracle_.matches(r));
  flaky_ = true;
  oracle_.set_target(oracle_.target(), tally);
  return runs;
}

// The first failure can be the odd one out (a rank slow to start taken for a hang, a port
// clash): when most of the runs that measured it failed with one other signature, that failure
// is the one to reduce, unless the user pinned a target (--from-logs). Counted over every run of
// the configuration, the escalation's included.
bool Reduction::retarget_to_dominant(const std::vector<RunRecord>& runs, Tally& tally) {
  if (opt_.target) return false;
  for (const auto& candidate : runs) {
    if (candidate.status != TrialStatus::Fail || !candidate.signature || oracle_.matches(candidate))
      continue;
    Tally other;
    other.add(false);  // the escalation's run
    for (const auto& r : runs) other.add(oracle_.matches(r, *candidate.signature));
    if (other.failures * 2 <= other.runs) continue;
    progress_.note("the first failure (" + oracle_.target().category + ") came back " +
                   tally.text() + " times, another one " + other.text() +
                   " times: reducing that one");
    oracle_.set_target(*candidate.signature, other);
    progress_.target(*candidate.signature, candidate, result_.stage);
    result_.first_run = candidate;
    tally = other;
    return true;
  }
  return false;
}

// Before reducing: at most kRerunsBeforeReduction reruns while the failure reproduces every
// time; a miss means flakiness, measured at once (and a failure that dominates the measuring
// runs becomes the target).
void Reduction::measure_phase() {
  progress_.phase("measure reproduction");
  Tally tally;
  tally.add(true);  // the failure escalation found
  const int reruns = oracle_.affordable(kRerunsBeforeReduction);
  // Escalation may have started them (spare runs); any other spare run is cancelled.
  oracle_.prefetch(std::vector<PlannedRun>(static_cast<size_t>(reruns), {state_.best, {}}));
  auto runs = oracle_.runs(state_.best, reruns);
  for (const auto& r : runs) tally.add(oracle_.matches(r));
  if (tally.every_time()) {
    reruns_seen_ = tally.runs - 1;
  } else {
    auto more = measure_flaky(state_.best, tally);
    runs.insert(runs.end(), more.begin(), more.end());
    retarget_to_dominant(runs, tally);
    progress_.note("flaky: the failure reproduced " + tally.text() +
                   " times; each candidate gets up to " + std::to_string(oracle_.repeats()) +
                   " trials");
  }
  result_.escalation_trials = oracle_.stats().trials;
}

// Rounds of the passes until one makes no progress. Each pass's search looks ahead through the
// passes after it, to the end of the next round, so that a pass with fewer candidates than slots
// lends the rest to the questions that come next (the result is the same: only answers count).
void Reduction::reduce_phase(const std::string& rounds) {
  auto passes = make_passes(opt_.strategy);
  std::vector<const Pass*> enabled;
  for (const auto& pass : passes)
    if (spec_.reduce.enabled(pass->dimension())) enabled.push_back(pass.get());
  for (int round = 1;; ++round) {
    bool progress_made = false;
    for (size_t k = 0; k < enabled.size() && !oracle_.exhausted(); ++k) {
      progress_.phase(rounds + " " + std::to_string(round) + ": " + enabled[k]->name());
      const Search lookahead = [&](const Ask& ask) {
        TrialConfig best = state_.best;
        bool progress = progress_made;
        auto sweep = [&](size_t from) {
          for (size_t j = from; j < enabled.size(); ++j) {
            Shrunk out = enabled[j]->shrink(best, ask, oracle_);
            if (out.empty()) continue;
            best = out.back().second;
            progress = true;
          }
        };
        sweep(k);
        if (progress) sweep(0);
      };
      if (enabled[k]->run(state_, oracle_, lookahead)) {
        progress_made = true;
        progress_.best(state_.best);
      }
    }
    if (!progress_made || oracle_.exhausted()) break;
  }
  oracle_.settle();  // the lookahead's trials of a round that did not come
  result_.reduction_trials = oracle_.stats().trials;
}

// A flaky target's passes have converged, but each "no" around the minimum was a few misses in
// a row, which a flaky failure shows now and then: those candidates get as many fresh trials
// again and the passes go on if one of them fails after all. The miss chance of the answers
// that decide the minimum is squared for the price of one more round at the minimum.
void Reduction::recheck_phase() {
  if (oracle_.exhausted()) return;
  oracle_.recheck_rejections();
  reduce_phase("recheck round");
}

// Reruns of the minimum. Returns false when a rerun missed a failure that had reproduced every
// time: the target is flaky after all, its rate is measured and the passes must run again with
// repeats (one trial per candidate may have rejected interesting ones).
bool Reduction::confirm_phase() {
  progress_.phase("confirm");
  const int reruns = oracle_.affordable(
      confirm_reruns(opt_.confirm_runs, flaky_, reruns_seen_, spec_.reduce.confidence));
  // The debug variants run beside the reruns, in the slots they leave (spare runs).
  std::vector<PlannedRun> wanted(static_cast<size_t>(reruns), {state_.best, {}});
  for (const Env& env : debug_variants(spec_, oracle_.target().category))
    wanted.push_back({state_.best, env});
  oracle_.prefetch(wanted);
  Tally tally;
  tally.add(true);  // the trial that accepted the minimum
  for (const auto& r : oracle_.runs(state_.best, reruns)) tally.add(oracle_.matches(r));
  if (!flaky_ && !tally.every_time()) {
    oracle_.prefetch({});  // no debug rerun of this minimum
    progress_.note("the minimum did not fail on every rerun (" + tally.text() +
                   "): the failure is flaky; reducing again with repeats");
    measure_flaky(state_.best, tally);
    progress_.note("flaky: the minimum failed " + tally.text() +
                   " times; each candidate gets up to " + std::to_string(oracle_.repeats()) +
                   " trials");
    return false;
  }
  result_.confirm_runs = tally.runs;
  result_.confirm_failures = tally.failures;
  return true;
}

// The passes that ran with one trial per candidate took each pass as a "no": a flaky failure
// can have taken a wrong turn there (2x1 kept because one run of 1x2 missed), which no shrinking
// of the minimum undoes. They start again from the configuration escalation found; what failed
// before is still known (no new trial), what passed gets the repeats a flaky target needs.
void Reduction::restart_from_job() {
  state_.best = result_.original;
  state_.trace.push_back({oracle_.stats().trials, "flaky: again from", state_.best});
  progress_.best(state_.best);
}

// The minimum once more with debug variables. A run that fails differently is not the
// explanation: it is named in a note, and the next variables are tried.
void Reduction::debug_phase() {
  result_.target = oracle_.target();
  const std::vector<Env> variants = debug_variants(spec_, result_.target.category);
  if (variants.empty() || oracle_.exhausted()) return;
  progress_.phase("debug rerun");
  for (size_t i = 0; i < variants.size() && !oracle_.exhausted(); ++i) {
    RunRecord r = oracle_.debug_run(state_.best, variants[i]);
    if (r.signature && debug_rerun_explains(result_.target, *r.signature)) {
      result_.debug_env = variants[i];
      result_.debug_run = r;
      return;
    }
    std::string what = r.signature ? "failed differently (" + r.signature->to_string() + ")"
                                   : "did not fail (" + std::string(to_string(r.status)) + ")";
    std::string vars;
    for (const auto& [k, v] : variants[i]) vars += (vars.empty() ? "" : " ") + k + "=" + v;
    std::string note = "with " + vars + " the minimal configuration " + what +
                       ", not the failure "
                       "being explained; trial " +
                       r.dir;
    if (variants[i].count("TORCH_DISTRIBUTED_DEBUG") &&
        variants[i].at("TORCH_DISTRIBUTED_DEBUG") == "DETAIL" && r.signature &&
        r.signature->category == cat::signal)
      note += " (PyTorch 2.x's DDP over Gloo crashes in its constructor under DETAIL)";
    if (i + 1 < variants.size()) note += "; trying the next variables";
    result_.debug_notes.push_back(note);
    progress_.note("debug rerun: " + note);
  }
}

ReductionResult Reduction::finish() {
  throw_if_interrupted();  // a signal after the last trial still stops the run, resumably
  progress_.done();
  result_.stats = oracle_.stats();
  result_.elapsed_s = oracle_.elapsed_s();
  result_.target_rate = oracle_.rate();
  result_.repeats = oracle_.repeats();
  result_.trials = oracle_.trial_marks(
      result_.status == ReductionStatus::NotReproduced ? nullptr : &result_.target);
  if (result_.status != ReductionStatus::NotReproduced) {
    result_.first_outcome = read_outcome_json(result_.first_run.dir);
    result_.minimal_outcome = read_outcome_json(result_.minimal_run.dir);
  }
  return result_;
}

ReductionResult Reduction::run() {
  try {
    if (!escalate_phase()) return finish();
    measure_phase();
    for (;;) {
      reduce_phase();
      if (flaky_) recheck_phase();
      if (confirm_phase()) break;
      restart_from_job();
    }
    result_.minimal = state_.best;
    result_.trace = state_.trace;
    debug_phase();
    oracle_.prefetch({});  // debug variants not needed after all
    if (const RunRecord* r = oracle_.matching_run(state_.best)) result_.minimal_run = *r;
    result_.status = oracle_.budget_hit() || oracle_.exhausted() ? ReductionStatus::BudgetExhausted
                                                                 : ReductionStatus::Reduced;
    return finish();
  } catch (const Interrupted&) {
    progress_.done();
    journal_.append({{"type", "elapsed"}, {"elapsed_s", oracle_.elapsed_s()}});
    throw;
  }
}

}  // namespace

ReductionResult run_reduction(const Spec& spec, const ReductionOptions& opt) {
  return Reduction(spec, opt).run();
}

}  // namespace ddpbisect
