#include "reduce/escalate.hpp"

#include <algorithm>
#include <map>
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

  bool is_target(const RunRecord& r) const {
    const MatchSpec& m = spec.match;
    return r.status == TrialStatus::Fail && r.signature &&
           matches_pinned(m.signature_category, m.signature_exception, m.signature_frame,
                          *r.signature) &&
           (!opt.wanted || same_failure(*opt.wanted, *r.signature, m.level, m.regex, r.text));
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
  for (int i = 0; i < kExtraRuns; ++i) plan.push_back(plan.back());
  Climb climb{spec, oracle, opt, {}, nullptr, ""};
  for (size_t i = 0; i < plan.size(); ++i) {
    // Free slots run the entries after the awaited one (spare runs); the answer is still the
    // first entry in order that fails with the target.
    while (oracle.spare_runs(plan[i].second).empty()) {
      oracle.prefetch(climb.wanted(plan, i));
      if (!oracle.await_any()) break;  // nothing could start: attempt() runs it
    }
    if (climb.attempt(plan[i].first, plan[i].second)) {
      oracle.prefetch(reruns(plan[i].second));  // the measure phase's
      return climb.e;
    }
  }
  oracle.prefetch({});
  if (opt.wanted && climb.masked) climb.unmask();
  return climb.e;
}

}  // namespace ddpbisect
