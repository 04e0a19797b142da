#include "reduce/escalate.hpp"

#include <algorithm>
#include <set>

namespace ddpbisect {

constexpr int kExtraRuns = 3;

Escalation escalate(const Spec& spec, Oracle& oracle, const Signature* wanted) {
  Escalation e;
  std::vector<std::pair<std::string, TrialConfig>> plan;
  for (const auto& stage : spec.stages) {
    TrialConfig full = initial_config(spec, stage);
    TrialConfig cheap = cheap_variant(full);
    if (cheap.canonical() != full.canonical()) plan.push_back({stage.name, cheap});
    plan.push_back({stage.name, full});
  }
  // A flaky failure can hide from one climb: the full job gets kExtraRuns more chances.
  for (int i = 0; i < kExtraRuns; ++i) plan.push_back(plan.back());
  const TrialConfig* masked = nullptr;  // the last configuration that failed differently
  std::string masked_stage;
  auto attempt = [&](const std::string& stage_name, const TrialConfig& c) {
    RunRecord r = oracle.run(c);
    const MatchSpec& m = spec.match;
    const bool failed = r.status == TrialStatus::Fail;
    bool target = failed && r.signature &&
                  matches_pinned(m.signature_category, m.signature_exception, m.signature_frame,
                                 *r.signature) &&
                  (!wanted || same_failure(*wanted, *r.signature, m.level, m.regex, r.text));
    e.tried.push_back({c, failed && !target ? "fail (a different failure: " +
                                                  (r.signature ? r.signature->to_string() : "?") +
                                                  ")"
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
  };
  for (const auto& [stage_name, c] : plan)
    if (attempt(stage_name, c)) return e;
  // --from-logs: another failure may fire first and mask the user's. Unmask on the last
  // configuration that failed differently: all features off, all components off, then each one
  // off alone (at most 2 + features + components trials).
  if (wanted && masked) {
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
      if (seen.insert(v.canonical()).second && attempt(stage, v)) return e;
  }
  return e;
}

}  // namespace ddpbisect
