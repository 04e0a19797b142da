// A synthetic workload for the oracle's and the passes' unit tests: a predicate on the trial's
// configuration (and how many times that configuration ran before) says whether it fails with the
// target signature. The Oracle's injected TrialRunner answers with it; no process runs.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reduce/journal.hpp"
#include "reduce/oracle.hpp"

#include "../scratch_dir.hpp"

namespace ddpbisect::testing {

inline Signature target_signature() {
  Signature s;
  s.category = "python_exception";
  s.exception = "RuntimeError";
  s.frame = "train.py:step";
  s.message = "planted";
  return s;
}

// A configuration with every dimension the passes reduce.
inline TrialConfig big_config() {
  TrialConfig c;
  c.stage = "multinode";
  c.nodes = 2;
  c.procs_per_node = 2;
  c.samples = IndexSet::first_n(64);
  c.components = {"linear", "dropout", "layernorm", "head"};
  c.features = {"grad_clip", "checkpoint", "eval"};
  c.params = {{"steps", 12}, {"batch_size", 8}};
  return c;
}

struct Synthetic {
  // (configuration, how many times this configuration ran before) -> fails with the target.
  std::function<bool(const TrialConfig&, int)> fails = [](const TrialConfig&, int) { return true; };
  // A different failure instead of a pass (slippage), when it returns true for a passing run.
  std::function<bool(const TrialConfig&)> other_failure;
  // Infra or Interrupted instead of running; any other status lets `fails` decide.
  std::function<TrialStatus(const TrialConfig&, int)> status_override;
  // Infra because the job never started (the launcher failed before any rank ran), for these.
  std::function<bool(const TrialConfig&)> never_starts;
  Signature signature = target_signature();  // what a target failure looks like
  // A failure of its own for this request (e.g. a crash under debug variables), or nullopt.
  std::function<std::optional<Signature>(const TrialRequest&)> crash;
  long long last_step = -1;
  int sleep_ms = 0;  // how long a trial takes; it ends early when cancelled
  std::function<int(const TrialConfig&)> duration_ms;  // instead of sleep_ms, per configuration
  std::atomic<int> active{0}, peak{0}, cancelled{0};   // trials running now, at most, cancelled
  std::mutex mu;
  std::map<std::string, int> runs;  // by canonical configuration
  std::atomic<int> trials{0};

  // Sleeps sleep_ms (watching for cancellation); true when cancelled.
  bool take_time(const TrialRequest& req) {
    const int now = ++active;
    for (int p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
    bool stopped = false;
    const int ms = duration_ms ? duration_ms(req.config) : sleep_ms;
    for (int t = 0; t < ms && !stopped; ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      stopped = req.cancelled && req.cancelled();
    }
    --active;
    cancelled += stopped ? 1 : 0;
    return stopped;
  }

  TrialOutcome run(const TrialRequest& req) {
    if (take_time(req)) {
      TrialOutcome o;
      o.dir = req.dir;
      o.status = TrialStatus::Interrupted;  // interrupt_signal 0: cancelled
      return o;
    }
    int before;
    {
      std::lock_guard<std::mutex> lock(mu);
      before = runs[req.config.canonical()]++;
    }
    ++trials;
    TrialOutcome o;
    o.dir = req.dir;
    o.config = req.config;
    if (never_starts && never_starts(req.config)) {
      o.status = TrialStatus::Infra;
      o.not_started = true;
      o.reason = "the job never started: the launcher on node 0 failed before any rank ran";
      return o;
    }
    if (status_override) {
      o.status = status_override(req.config, before);
      if (o.status == TrialStatus::Interrupted) o.interrupt_signal = 2;
      if (o.status == TrialStatus::Interrupted || o.status == TrialStatus::Infra) return o;
    }
    RankRecord r;
    r.last_step = last_step;
    o.ranks.push_back(r);
    if (auto own = crash ? crash(req) : std::nullopt) {
      o.status = TrialStatus::Fail;
      o.diagnosis = Diagnosis{};
      o.diagnosis->failed = true;
      o.diagnosis->signature = *own;
      return o;
    }
    bool target = fails(req.config, before);
    bool other = !target && other_failure && other_failure(req.config);
    o.status = target || other ? TrialStatus::Fail : TrialStatus::Pass;
    if (target || other) {
      Diagnosis d;
      d.failed = true;
      d.signature = signature;
      if (other) {
        d.signature.category = "python_exception";
        d.signature.exception = "IndexError";
        d.signature.frame = "data.py:shard";
      }
      d.root.message = d.signature.exception + ": planted";
      o.diagnosis = d;
    }
    return o;
  }
  TrialRunner runner() {
    return [this](const TrialRequest& req) { return run(req); };
  }
  int runs_of(const TrialConfig& c) {
    std::lock_guard<std::mutex> lock(mu);
    return runs[c.canonical()];
  }
};

}  // namespace ddpbisect::testing
