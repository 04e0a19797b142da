#include "reduce/escalate.hpp"

#include <algorithm>

namespace ddpbisect {

TrialConfig cheap_variant(const TrialConfig& full) {
  TrialConfig c = full;
  if (auto it = c.params.find("steps"); it != c.params.end() && it->second > 8)
    it->second = std::max<int64_t>(8, it->second / 4);
  if (c.samples.size() > 256)
    c.samples = c.samples.prefix(std::max<int64_t>(256, c.samples.size() / 4));
  return c;
}

Escalation escalate(const Spec& spec, Oracle& oracle, bool* found, const Signature* wanted) {
  Escalation e;
  *found = false;
  for (const auto& stage : spec.stages) {
    TrialConfig full = initial_config(spec, stage);
    std::vector<TrialConfig> variants = {cheap_variant(full)};
    if (variants[0].canonical() != full.canonical()) variants.push_back(full);
    for (const auto& c : variants) {
      RunRecord r = oracle.run(c);
      const MatchSpec& m = spec.match;
      bool target = r.status == "fail" && r.signature &&
                    matches_pinned(m.signature_category, m.signature_exception, m.signature_frame,
                                   *r.signature) &&
                    (!wanted || same_failure(*wanted, *r.signature, m.level, m.regex, r.text));
      e.tried.push_back({c, r.status == "fail" && !target
                                ? "fail (a different failure: " +
                                      (r.signature ? r.signature->to_string() : "?") + ")"
                                : r.status});
      if (target) {
        e.stage = stage.name;
        e.config = c;
        e.run = r;
        *found = true;
        return e;
      }
    }
  }
  return e;
}

}  // namespace ddpbisect
