// The Oracle answers the reducer's one question: is this configuration still interesting, i.e.
// does it fail with the target signature? It owns running trials (retrying infra outcomes),
// the cache (no configuration runs twice), the journal, repeated trials for flaky targets, and
// the budget.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/diagnosis.hpp"
#include "reduce/journal.hpp"
#include "reduce/result.hpp"
#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

class Launcher;

struct OracleOptions {
  std::string out_dir;
  std::optional<int64_t> max_trials;
  std::optional<Millis> max_time;
  int jobs = 1;
  double confidence = 0.95;
  std::string level = "default";
  std::string regex;
};

class Oracle {
 public:
  using Listener = std::function<void(const TrialConfig&, const RunRecord&, bool interesting)>;
  Oracle(const Spec& spec, OracleOptions options, Journal& journal, Listener listener);

  // One more trial of `config` (or the next one recorded in the journal when resuming).
  RunRecord run(const TrialConfig& config);
  // One more trial of `config` with debug variables added (TORCH_DISTRIBUTED_DEBUG=DETAIL,
  // CUDA_LAUNCH_BLOCKING=1): counted and journaled (as "debug"), never cached or replayed, since
  // the variables can change what the failure looks like.
  RunRecord debug_run(const TrialConfig& config, const std::map<std::string, std::string>& env);

  void set_target(const Signature& target, double reproduction_rate);
  const Signature& target() const { return target_; }
  double rate() const { return rate_; }
  // Trials needed to call a configuration uninteresting at the configured confidence.
  int repeats() const { return repeats_; }

  bool interesting(const TrialConfig& config);
  // Several candidates; concurrently with --jobs; stops at the first interesting one.
  std::vector<bool> interesting_batch(const std::vector<TrialConfig>& configs);
  bool matches(const RunRecord& r) const;

  // The last failing run of a configuration with the target signature, if any.
  const RunRecord* matching_run(const TrialConfig& config) const;

  bool exhausted() const;
  bool budget_hit() const { return budget_hit_; }
  const OracleStats& stats() const { return stats_; }
  double elapsed_s() const;

 private:
  RunRecord fresh_trial(const TrialConfig& config, size_t attempt_base,
                        const std::map<std::string, std::string>& extra_env = {});
  void record(const TrialConfig& config, const RunRecord& r);
  void count(const RunRecord& r);  // a fresh trial in the statistics
  uint64_t seed_for(const std::string& key, size_t attempt) const;

  const Spec& spec_;
  OracleOptions opt_;
  Journal& journal_;
  Listener listener_;
  std::shared_ptr<const Launcher> launcher_;  // built once, shared by every trial
  Signature target_;
  bool has_target_ = false;
  double rate_ = 1.0;
  int repeats_ = 1;
  uint64_t salt_ = 0;
  std::map<std::string, std::vector<RunRecord>> runs_;    // by canonical configuration
  std::map<std::string, std::vector<RunRecord>> replay_;  // from the journal, not yet consumed
  OracleStats stats_;
  bool budget_hit_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double replayed_elapsed_ = 0;
};

}  // namespace ddpbisect
