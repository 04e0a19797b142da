// From every rank's events and the facts around them to one root cause, in named steps
// (diagnose_steps.hpp): candidates, ranks, hang attribution, root, echoes, explanation. A
// secondary (an echo) never wins over a primary; among primaries the earliest wins. Also the
// signature that says what "fails the same way" means, and its comparison at the strict /
// default / loose levels.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/stop_reason.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/event.hpp"

namespace ddpbisect {

struct RankExit {
  int rank = 0;
  int exit_code = -1;
  int signal = 0;
  std::string killed_by;  // set when ddpbisect stopped the rank (early_stop, hang, timeout, ...)
  double end_time = -1;
  long long last_step = -1;
};

struct LogInput {
  std::optional<int> rank;  // none: a combined log; ranks come from line prefixes
  std::string path;
  std::string times_path;  // one capture time (ms) per line, or ""
  std::string process;     // a launcher's own log: who printed its untagged lines
};

struct DiagnosisInput {
  std::vector<LogInput> logs;
  std::vector<std::string> error_files;  // torchrun error.json files, with their rank
  std::vector<std::optional<int>> error_file_ranks;
  std::vector<LogInput> flight_recorder;  // Flight Recorder dumps (pickles), rank from the name
  std::vector<std::string> agent_traces;  // the agent's agent/collectives.*.jsonl files
  std::vector<RankExit> exits;
  StopReason stop = StopReason::None;  // Hang or Timeout when that ended the trial
  std::optional<double> stop_time;     // when ddpbisect asked for stacks
  double hang_threshold_s = 0;
  std::vector<std::string> library_patterns;
};

struct Signature {
  std::string category;
  std::string exception;
  std::string frame;               // file:function of the innermost user frame (basename)
  std::string message;             // normalized
  std::vector<int> ranks;          // the failing rank(s), when known
  std::vector<std::string> stuck;  // hang: the distinct frames ranks were stuck in
  nlohmann::json to_json() const;
  static Signature from_json(const nlohmann::json& j);
  std::string to_string() const;  // "python_exception RuntimeError at train.py:step"
};

// Whether `candidate` is the same failure as `target` at `level` (strict, default, loose), and,
// when `regex` is set, whether the candidate's message or excerpt contains it.
bool same_failure(const Signature& target, const Signature& candidate, const std::string& level,
                  const std::string& regex = "", const std::string& candidate_text = "");

// Whether a debug rerun's failure explains the target rather than being another failure: the
// same failure (loosely), or a hang (collective timeout, trial timeout) that
// TORCH_DISTRIBUTED_DEBUG=DETAIL turned into the collective mismatch behind it. The reducer's debug
// rerun shows such a run as the cause of the target, ranks and call sites, instead of filing it as
// a different failure.
bool debug_rerun_explains(const Signature& target, const Signature& rerun);

// Whether `candidate` is the failure a spec pins (match.signature); true when none is pinned.
bool matches_pinned(const std::string& category, const std::string& exception,
                    const std::string& frame, const Signature& candidate);

struct RankSummary {
  int rank = 0;
  std::string category;  // "" when the rank showed nothing
  bool primary = false;
  std::string summary;
  std::optional<int> echo_of;
  std::string stuck_in;  // hang: the frame the rank was in
};

struct Diagnosis {
  bool failed = false;
  Event root;
  Signature signature;
  std::vector<RankSummary> ranks;
  // No rank known, but a launch-era launcher's CalledProcessError (or DeepSpeed's line) shows
  // the command of the last process it started: its --local_rank, a hint, not evidence.
  std::optional<int> last_spawned_local_rank;
  // No rank known, but the ranks it could be: the two a collective mismatch names, or the ranks
  // that hit one failure alike. The signature's ranks are these then.
  std::vector<int> rank_candidates;
  // Whether those candidates each failed the same way (no time or launcher report orders them),
  // rather than being the two ranks one error names.
  bool candidates_alike = false;
  // Why no rank is named, in one clause ("the error names ranks 0 and 1 and nothing says which
  // took the other path", with the launcher's --local_rank hint when there is one): the words
  // of the evidence and of `explain`. Empty when the root's rank is known.
  std::string unknown_rank_why() const;
  std::string confidence;             // high, medium, low (docs/categories.md)
  std::vector<std::string> evidence;  // the lines and rules the verdict rests on
  std::string explanation;            // one paragraph for humans
  nlohmann::json to_json() const;
};

Diagnosis diagnose(const DiagnosisInput& input);

// "rank 3", or "an unknown rank": how text output names a rank.
std::string rank_words(const std::optional<int>& rank);
// The same for an event's origin: with no rank, the process whose own log printed it.
std::string rank_words(const Origin& origin);

// Inputs from an outcome.json of ours; `folder`, when given, is where that outcome.json lies
// (its recorded paths are relative to where the run started).
DiagnosisInput inputs_from_outcome(const nlohmann::json& outcome, const std::string& folder = "");
// Inputs from paths given to `explain`: trial folders, torchrun --log-dir trees, folders of
// per-rank files, single (combined) log files, Flight Recorder dumps, the agent's trace files.
// On bad input, `error` names the path and what is wrong with it.
struct PathInputs {
  DiagnosisInput input;
  std::optional<std::string> error;
};
PathInputs inputs_from_paths(const std::vector<std::string>& paths);

}  // namespace ddpbisect
