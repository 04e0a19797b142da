// Conversions between a trial's RunRecord and its journal record (run_record.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "observe/outcome.hpp"
#include "reduce/result.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// A debug rerun's extra variables (Oracle's Env); empty for a question's run.
using Env = std::map<std::string, std::string>;

// The key its runs are cached and journaled under: debug reruns are keyed apart from the
// questions (they never answer one).
std::string journal_key(const TrialConfig& c, const Env& env);
// The journal's "trial" (or, with env, "debug") record of run r of c.
nlohmann::json journal_record(const TrialConfig& c, const RunRecord& r, const Env& env);
// A journal record read back; throws on a field of the wrong type.
RunRecord record_from_journal(const nlohmann::json& e);
// A fresh trial's outcome as the reducer judges it, cut and encoded as a replay would read it.
RunRecord record_from_outcome(const TrialOutcome& o, int attempt);

}  // namespace ddpbisect
