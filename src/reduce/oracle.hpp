// The Oracle answers the reducer's one question: is this configuration still interesting, i.e.
// does it fail with the target signature? It owns running trials (retrying infra outcomes,
// several at once in the slots the stage leaves free), the cache (no configuration runs twice),
// the journal and its replay, repeated trials for flaky targets, speculation (trials for
// questions the caller may ask next, and spare runs for the plain runs it will want next, both
// cancelled once no longer needed) and the budget.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "diagnose/diagnosis.hpp"
#include "observe/trial_runner.hpp"
#include "reduce/journal.hpp"
#include "reduce/reruns.hpp"
#include "reduce/result.hpp"
#include "reduce/slots.hpp"
#include "reduce/timings.hpp"
#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct OracleOptions {
  std::string out_dir;
  std::optional<int64_t> max_trials;
  std::optional<Millis> max_time;
  int jobs = 1;  // trials at once at most; 0: as many as the resources hold (--jobs auto)
  std::optional<Resources> resources;  // default: detect_resources(spec)
  double confidence = 0.95;
  std::string level = "default";
  std::string regex;
};

// Runs one trial: run_trial, or a synthetic one in tests (no processes).
using TrialRunner = std::function<TrialOutcome(const TrialRequest&)>;
using Env = std::map<std::string, std::string>;

// A plain run (no env) or a debug run the caller will want soon.
struct PlannedRun {
  TrialConfig config;
  Env env;
};

class Oracle {
 public:
  // Each recorded trial; `interesting` once there is a target to compare with.
  using Listener =
      std::function<void(const TrialConfig&, const RunRecord&, std::optional<bool> interesting)>;
  Oracle(const Spec& spec, OracleOptions options, Journal& journal, Listener listener,
         TrialRunner runner = run_trial);
  ~Oracle();  // cancels and reaps every trial still running
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  // One more trial of `config` (or the next one recorded in the journal when resuming): a spare
  // one (prefetch) when there is one, finished or still running, else a new one.
  RunRecord run(const TrialConfig& config);
  // `n` more trials of `config`, at once as far as the slots allow; in the order they started.
  std::vector<RunRecord> runs(const TrialConfig& config, int n);
  // One more trial of `config` with debug variables added (TORCH_DISTRIBUTED_DEBUG, ...):
  // counted and journaled (as "debug"), never an answer to a question; replayed on resume.
  RunRecord debug_run(const TrialConfig& config, const Env& env);
  // Spare runs: a trial for each entry of `wanted` that has no spare one yet (an entry listed
  // twice wants two), started in order as free slots and the budget allow (now, and while
  // runs() waits; never with one slot), for run(), runs() or debug_run() to take later; asking for
  // runs of a configuration strikes as many of its entries off. Spare trials beyond what `wanted`
  // lists are cancelled (nothing journaled); finished ones stay until taken. prefetch({}) cancels
  // every one still running.
  void prefetch(const std::vector<PlannedRun>& wanted);
  // The finished spare runs of `config` (no env) not taken yet, oldest first.
  std::vector<RunRecord> spare_runs(const TrialConfig& config) const;
  // Waits for the next trial to end and records it; false at once when none runs.
  bool await_any();

  void set_target(const Signature& target, double reproduction_rate);
  // A flaky target: its rate, and the repeats a candidate needs, from the runs that measured it.
  void set_target(const Signature& target, const Tally& measured);
  const Signature& target() const { return target_; }
  double rate() const { return rate_; }
  // Trials needed to call a configuration uninteresting at the configured confidence.
  int repeats() const { return repeats_; }

  // Whether `config` fails with the target: one trial (up to repeats() for a flaky target,
  // stopping at the first match), cached. `ahead`, most likely first: configurations the caller
  // may ask about next. Free slots start them now; a speculative trial whose configuration is
  // neither asked nor ahead any more is cancelled (every rank reaped, nothing journaled).
  bool interesting(const TrialConfig& config, const std::vector<TrialConfig>& ahead = {});
  // Every configuration called uninteresting so far needs repeats() fresh misses before it is
  // called so again (a flaky target's second look at the rejections around its minimum).
  void recheck_rejections();
  // The answer known without another trial, if any.
  std::optional<bool> known(const TrialConfig& config) const;
  // Cancels every speculative trial still running (a search has ended).
  void settle();
  // How often questions were answered "interesting" so far (Laplace's estimate).
  double interesting_odds() const;
  // Trials like `config` that may run at once.
  int width(const TrialConfig& config) const;

  bool matches(const RunRecord& r) const;
  // Whether `r` failed the way `target` describes, by this oracle's match level and regex.
  bool matches(const RunRecord& r, const Signature& target) const;
  // Every trial of the journal in the order it ran (those of earlier sessions first, debug
  // reruns left out), judged against `target` (none: no trial is the target).
  std::vector<TrialMark> trial_marks(const Signature* target) const;
  // The last failing run of a configuration with the target signature, if any.
  const RunRecord* matching_run(const TrialConfig& config) const;

  bool exhausted() const;
  // How many of `n` more trials the budget allows.
  int affordable(int n) const;
  bool budget_hit() const { return budget_hit_; }
  const OracleStats& stats() const { return stats_; }
  double elapsed_s() const;

 private:
  struct Landed;  // what a trial thread hands back
  struct Flight;  // one trial running on its own thread
  // What a trial is told beyond its configuration, fixed when it starts: the limits learned
  // from the job's trials so far, and the hang the target is (to confirm it early).
  struct Hints {
    std::optional<double> hang_floor_s, timeout_s;
    std::optional<Signature> expected_hang;
  };
  Hints hints() const;
  using Replay = std::map<std::string, std::map<int, nlohmann::json>>;

  void load();  // the journal's records, when resuming
  std::optional<bool> verdict(const std::string& key) const;
  int counted_runs(const std::string& key) const;
  int next_attempt(const std::string& key) const;
  enum class Kind { Plain, Question, Spare };
  bool start(const TrialConfig& config, Kind kind, const Env& env = {});
  void top_up();
  std::vector<RunRecord> runs_of(const TrialConfig& config, int n, const Env& env);
  Landed fly(const TrialConfig& config, const std::string& key, int attempt, const Env& env,
             const Slot& slot, const Spec& spec, std::shared_ptr<const Launcher> launcher,
             const std::atomic<bool>& cancel, const Hints& hints) const;
  // The launcher of `spec` (the spec, or a slot's copy with its hosts): built once per set of
  // hosts in a reduction and shared by its trials. Called on the reducer's thread only.
  std::shared_ptr<const Launcher> launcher_for(const Spec& spec);
  void await_one();
  void land(Flight& flight, const Landed& landed);
  void record(const TrialConfig& config, const RunRecord& r, const Env& env);
  void count(const RunRecord& r);  // a fresh trial in the statistics
  void fill(const TrialConfig& config, const std::vector<TrialConfig>& ahead);
  void cancel_unneeded(const std::string& key, const std::vector<TrialConfig>& ahead);
  bool running(const std::string& key) const;
  bool room_for_more() const;
  uint64_t seed_for(const std::string& key, size_t attempt) const;
  [[noreturn]] void stop_all(int signal);
  [[noreturn]] void abandon_all(std::exception_ptr error);
  void check_space() const;

  const Spec& spec_;
  OracleOptions opt_;
  Journal& journal_;
  Listener listener_;
  TrialRunner runner_;
  SlotPool pool_;
  std::map<std::vector<std::string>, std::shared_ptr<const Launcher>> launchers_;  // by hosts
  Signature target_;
  bool has_target_ = false;
  double rate_ = 1.0;
  int repeats_ = 1;
  JobTimings timings_;
  uint64_t salt_ = 0;
  std::map<std::string, std::vector<RunRecord>> runs_;      // by key: canonical configuration
  std::vector<std::pair<TrialConfig, RunRecord>> history_;  // what trial_marks() judges
  std::map<std::string, size_t> misses_from_;  // by key: the first run a "no" counts (rechecks)
  Replay replay_;  // journaled trials not yet consumed, by key and attempt
  std::map<std::string, std::set<int>> attempts_;  // finished or running, by key
  std::map<std::string, std::vector<int>> spare_;  // spare attempts not taken, by key, in order
  std::vector<PlannedRun> wanted_;                 // prefetch()'s list, less the runs taken since
  std::list<Flight> flights_;
  std::mutex mu_;  // guards every Flight's landed result
  std::condition_variable landed_cv_;
  OracleStats stats_;
  int answered_ = 0, answered_interesting_ = 0;
  bool budget_hit_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double replayed_elapsed_ = 0;
};

}  // namespace ddpbisect
