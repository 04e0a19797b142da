#include "reduce/escalate.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "reduce/reruns.hpp"

namespace ddpbisect {

namespace {

constexpr int kExtraRuns = 3;

using Plan = std::vector<std::pair<std::string, TrialConfig>>;  // (stage, configuration)

std::vector<PlannedRun> reruns(const TrialConfig& c) {
  return std::vector<PlannedRun>(kRerunsBeforeReduction, PlannedRun{c, {}});
}

struct Climb {
  const Spec& spec;
  Oracle& oracle;
  const EscalationOptions& opt;
  Escalation e;
  const TrialConfig* masked = nullptr;  // the last configuration that failed differently
  std::string masked_stage;
  std::optional<Signature> job_failure;  // how the user's own job was seen to fail
  bool ran = false;                      // some trial so far ran the job (passed or failed)

  const Signature* wanted() const {
    return opt.wanted ? opt.wanted : job_failure ? &*job_failure : nullptr;
  }

  bool is_target(const RunRecord& r) const {
    const MatchSpec& m = spec.match;
    return r.status == TrialStatus::Fail && r.signature &&
           matches_pinned(m.signature_category, m.signature_exception, m.signature_frame,
                          *r.signature) &&
           (!wanted() || same_failure(*wanted(), *r.signature, m.level, m.regex, r.text));
  }

  // One trial: is it the target?
  bool attempt(const std::string& stage_name, const TrialConfig& c) {
    RunRecord r = oracle.run(c);
    const bool failed = r.status == TrialStatus::Fail;
    const bool target = is_target(r);
    const std::string other = r.signature ? r.signature->to_string() : "?";
    e.tried.push_back({c, failed && !target ? "fail (a different failure: " + other + ")"
                                            : std::string(to_string(r.status))});
    if (failed && !target) {
      masked = &c;
      masked_stage = stage_name;
    }
    // The launcher itself fails before any rank runs (the oracle tried three times): no stage
    // can do better. Only before anything ran: a bigger stage's launcher failing is that
    // stage's infra, and the climb goes on.
    if (!ran && r.status == TrialStatus::Infra && !r.not_started.empty()) {
      e.not_started = r.not_started;
      e.notes.push_back("stage '" + stage_name + "': " + r.not_started +
                        ". That is the launch, not your job: nothing can be reduced until the "
                        "launcher runs (is it the one of your job's Python and PyTorch?)");
    }
    ran = ran || r.status == TrialStatus::Pass || failed;
    if (target) {
      e.stage = stage_name;
      e.config = c;
      e.run = r;
      e.found = true;
    }
    return target;
  }

  // What to run while entry `i` is awaited: the entries from it on, in order; but once a later
  // entry has failed with the target, only up to it, and its reruns (the measure phase's) instead
  // of the entries after it.
  std::vector<PlannedRun> wanted(const Plan& plan, size_t i) const {
    std::vector<PlannedRun> out;
    std::map<std::string, size_t> seen;  // earlier entries of the same configuration from i on
    for (size_t k = i; k < plan.size(); ++k) {
      const TrialConfig& c = plan[k].second;
      out.push_back({c, {}});
      const size_t nth = seen[c.canonical()]++;
      const std::vector<RunRecord> done = oracle.spare_runs(c);
      if (k > i && nth < done.size() && is_target(done[nth])) {
        for (const auto& r : reruns(c)) out.push_back(r);
        break;
      }
    }
    return out;
  }

  // --from-logs: another failure may fire first and mask the user's. Unmask on the last
  // configuration that failed differently: all features off, all components off, then each one
  // off alone (at most 2 + features + components trials).
  void unmask() {
    const TrialConfig base = *masked;
    const std::string stage = masked_stage;
    std::vector<TrialConfig> variants;
    TrialConfig c = base;
    c.features.clear();
    variants.push_back(c);
    c = base;
    c.components.clear();
    variants.push_back(c);
    for (size_t i = 0; i < base.features.size(); ++i) {
      c = base;
      c.features.erase(c.features.begin() + static_cast<long>(i));
      variants.push_back(c);
    }
    for (size_t i = 0; i < base.components.size(); ++i) {
      c = base;
      c.components.erase(c.components.begin() + static_cast<long>(i));
      variants.push_back(c);
    }
    std::set<std::string> seen = {base.canonical()};
    for (const auto& v : variants)
      if (seen.insert(v.canonical()).second && attempt(stage, v)) return;
  }
};

}  // namespace

bool worth_a_cheap_trial(const TrialConfig& cheap, const TrialConfig& full) {
  if (cheap.canonical() == full.canonical()) return false;
  const int64_t steps = full.param("steps", 0);
  const bool fewer_steps = steps > 0 && 2 * cheap.param("steps", steps) <= steps;
  const bool fewer_samples = 2 * cheap.samples.size() <= full.samples.size();
  return fewer_steps || fewer_samples;
}

size_t first_stage(const Spec& spec, const EscalationOptions& opt) {
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    if (!opt.start_stage.empty() && spec.stages[i].name == opt.start_stage) return i;
    if (opt.start_stage.empty() && opt.seen_world_size > 0 &&
        spec.stages[i].world_size() >= opt.seen_world_size)
      return i;
  }
  // Unknown or larger than every stage: climb from the bottom.
  return 0;
}

// The words for a cheaper stage's failure that the job does not share: a world-size check says so.
std::string not_the_jobs(const std::string& stage, const RunRecord& r, const std::string& job) {
  static const std::regex topology(
      R"(world[ _]?size|num_processes|nprocs|number of (processes|gpus|devices|nodes)|devices?\b.*\bdoes not match)",
      std::regex::icase);
  const std::string what = r.signature ? r.signature->to_string() : "a failure";
  std::string s = "stage '" + stage + "' failed with " + what +
                  ", which is not your job's failure (" + job + ")";
  if (std::regex_search(r.text, topology))
    s += ": the stage's topology does not fit the job (a world-size check), so it was skipped";
  return s;
}

Escalation escalate(const Spec& spec, Oracle& oracle, const EscalationOptions& opt) {
  Plan plan;
  for (size_t i = first_stage(spec, opt); i < spec.stages.size(); ++i) {
    const Stage& stage = spec.stages[i];
    TrialConfig full = initial_config(spec, stage);
    TrialConfig cheap = cheap_variant(full);
    if (worth_a_cheap_trial(cheap, full)) plan.push_back({stage.name, cheap});
    plan.push_back({stage.name, full});
  }
  // A flaky failure can hide from one climb: the full job gets kExtraRuns more chances.
  const size_t job_at = plan.size() - 1;  // the user's own job: the last stage, full size
  for (int i = 0; i < kExtraRuns; ++i) plan.push_back(plan.back());
  Climb climb{spec, oracle, opt, {}, nullptr, "", std::nullopt};
  for (size_t i = 0; i < plan.size(); ++i) {
    // Free slots run the entries after the awaited one (spare runs); the answer is still the
    // first entry in order that fails with the target.
    while (oracle.spare_runs(plan[i].second).empty()) {
      oracle.prefetch(climb.wanted(plan, i));
      if (!oracle.await_any()) break;  // nothing could start: attempt() runs it
    }
    if (!climb.attempt(plan[i].first, plan[i].second)) {
      if (!climb.e.not_started.empty()) break;
      continue;
    }
    if (i >= job_at || climb.wanted()) {
      oracle.prefetch(reruns(plan[i].second));  // the measure phase's
      return climb.e;
    }
    // A cheaper configuration failed: the target stands once the job is seen to fail that way.
    const Escalation found = climb.e;  // climb.e keeps it, and the job's tries are added
    // Free slots run the job and, in case it fails the same way, the measure phase's reruns;
    // the climb's other spare runs are cancelled.
    std::vector<PlannedRun> next = {{plan[job_at].second, {}}};
    for (const auto& r : reruns(found.config)) next.push_back(r);
    oracle.prefetch(next);
    std::optional<RunRecord> job_run;
    for (size_t k = job_at; k < plan.size() && !job_run; ++k) {
      RunRecord r = oracle.run(plan[k].second);
      climb.e.tried.push_back({plan[k].second, to_string(r.status)});
      if (r.status == TrialStatus::Fail && r.signature) job_run = r;
    }
    const MatchSpec& m = spec.match;
    if (job_run &&
        same_failure(*found.run.signature, *job_run->signature, m.level, m.regex, job_run->text)) {
      climb.e.found = true;  // found's stage, configuration and run, with the job's tries
      climb.e.notes.push_back("your job (stage '" + plan[job_at].first +
                              "') fails the same way: the target stands");
      oracle.prefetch(reruns(found.config));
      return climb.e;
    }
    climb.e.found = false;
    if (!job_run) {
      climb.e.notes.push_back(
          not_the_jobs(found.stage, found.run,
                       "it passed " + std::to_string(plan.size() - job_at) + " times") +
          "; there is nothing of your job's to reduce");
      oracle.prefetch({});
      return climb.e;
    }
    // The job fails otherwise: that failure is the one to find, from the next stage up.
    climb.job_failure = *job_run->signature;
    climb.e.notes.push_back(
        not_the_jobs(found.stage, found.run, "it fails with " + job_run->signature->to_string()));
    for (size_t k = i + 1; k < job_at; ++k)
      if (climb.attempt(plan[k].first, plan[k].second)) break;
    if (!climb.e.found) {  // the job itself is the first configuration failing its way
      climb.e.stage = plan[job_at].first;
      climb.e.config = plan[job_at].second;
      climb.e.run = *job_run;
      climb.e.found = true;
    }
    oracle.prefetch(reruns(climb.e.config));
    return climb.e;
  }
  oracle.prefetch({});
  if (opt.wanted && climb.masked) climb.unmask();
  return climb.e;
}

}  // namespace ddpbisect
