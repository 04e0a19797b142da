// A trial's record as the journal holds it, and as a fresh trial's outcome becomes one: both ways
// cut and encoded alike, so that a replayed reduction judges exactly what the live one judged.
#include "reduce/run_record.hpp"

#include <algorithm>
#include <string>

#include "common/category_names.hpp"
#include "common/json_util.hpp"

namespace ddpbisect {

using nlohmann::json;

// A failure's text as journaled; a fresh record is cut the same way, so that match.regex sees
// the same text whether the trial ran or was replayed.
static constexpr size_t kJournaledText = 4000;

// Debug reruns are keyed apart from the questions: they never answer one.
std::string journal_key(const TrialConfig& c, const Env& env) {
  if (env.empty()) return c.canonical();
  return "debug " + json_text(json(env)) + " " + c.canonical();
}

json journal_record(const TrialConfig& c, const RunRecord& r, const Env& env) {
  json j = {{"type", env.empty() ? "trial" : "debug"},
            {"key", c.canonical()},
            {"attempt", r.attempt},
            {"config", c.to_json()},
            {"status", to_string(r.status)},
            {"last_step", r.last_step},
            {"dir", r.dir},
            {"text", r.text.substr(0, kJournaledText)},
            {"duration_s", r.duration_s},
            {"pause_s", r.pause_s}};
  j["signature"] = r.signature ? r.signature->to_json() : json(nullptr);
  if (!r.not_started.empty()) j["not_started"] = r.not_started;
  if (!env.empty()) j["env"] = env;
  return j;
}

// Throws on a field of the wrong type (Oracle::load rejects such a record up front).
RunRecord record_from_journal(const json& e) {
  RunRecord r;
  r.status = parse_trial_status(json_strict(e, "status", "")).value_or(TrialStatus::Infra);
  if (const json& sig = json_member(e, "signature"); sig.is_object())
    r.signature = Signature::from_json(sig);
  r.last_step = json_strict<int64_t>(e, "last_step", -1);
  r.dir = json_strict(e, "dir", "");
  r.text = json_strict(e, "text", "");
  r.attempt = json_strict<int>(e, "attempt", 0);
  r.duration_s = json_strict<double>(e, "duration_s", 0.0);
  r.pause_s = json_strict<double>(e, "pause_s", 0.0);
  r.not_started = json_strict(e, "not_started", "");
  r.replayed = true;
  return r;
}

// `j` as it reads back from the journal.
static json as_journaled(const json& j) {
  return json::parse(json_text(j));
}

RunRecord record_from_outcome(const TrialOutcome& o, int attempt) {
  RunRecord r;
  r.status = o.status;
  r.dir = o.dir;
  r.attempt = attempt;
  r.duration_s = o.duration_s;
  r.pause_s = o.longest_pause_s;
  if (o.not_started) r.not_started = o.reason;
  // The last step the failing rank finished (the others may have run on): the steps pass cuts
  // right after it. Without a failing rank, the furthest any rank got.
  const int root = o.failure() ? o.diagnosis->root.rank().value_or(-1) : -1;
  for (const auto& rk : o.ranks)
    if (root < 0 || rk.rank == root) r.last_step = std::max(r.last_step, rk.last_step);
  if (const Signature* failure = o.failure()) {
    // As a replay sees them (the target of a resumed reduction is a replayed signature, and
    // match.regex reads the text): bytes that are not UTF-8 replaced as the journal writes them.
    r.signature = Signature::from_json(as_journaled(failure->to_json()));
    r.text = o.diagnosis->root.message;
    for (const auto& line : o.diagnosis->root.excerpt) r.text += "\n" + line;
    r.text.resize(std::min<size_t>(r.text.size(), kJournaledText));
    r.text = as_journaled(json(r.text)).get<std::string>();
  }
  return r;
}

}  // namespace ddpbisect
