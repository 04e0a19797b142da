// When a trial stops, as a pure function of time and what was observed: a failure starts the
// grace period (limits.grace) after which the survivors are stopped; a suspected hang (quiet for
// the threshold) first samples the ranks' stacks without stopping them, and only a confirmed one
// (quiet for the longer confirmation window, or its sampled stacks already the expected hang's)
// asks every rank for its stack and kills after a short wait for the dumps, as the trial timeout
// does; an interrupt, a cancellation, a start failure or an exceeded resource limit kills at
// once. The trial runner feeds it and carries out its decisions; it never looks at a clock or a
// process itself.
#pragma once

#include <optional>

#include "common/stop_reason.hpp"

namespace ddpbisect {

// SampleStacks: a suspected hang's stacks, asked only where asking does not end the rank.
enum class StopAction { None, SampleStacks, RequestStacks, KillAll };

struct StopDecision {
  StopAction action = StopAction::None;
  StopReason reason = StopReason::None;
};

struct StopLimits {
  double grace_s = 0;        // after the first failure, before the others are stopped
  double timeout_s = 0;      // limits.trial_timeout
  double dump_wait_s = 1.5;  // between the stack request and the kill
};

// What the runner saw at time t (seconds since the trial started).
struct StopInputs {
  double t = 0;
  bool hung = false;               // quiet for the hang threshold: suspected
  bool interrupted = false;        // SIGINT/SIGTERM reached the driver
  bool resource_exceeded = false;  // limits.memory / limits.max_procs hit
  bool cancelled = false;          // the reducer cancelled the trial
  bool hang_confirmed = false;     // quiet for the confirmation window, or the sample matched
};

class StopPolicy {
 public:
  explicit StopPolicy(StopLimits limits) : limits_(limits) {}

  void on_rank_failed(double t);  // the first call starts the grace period
  void on_start_failure();        // a rank could not be started: stop the others now
  void on_stacks_collected();     // every stack is in (read from outside): kill without waiting
  // What to do now; each stack request and each kill is decided once.
  StopDecision decide(const StopInputs& in);

  StopReason reason() const { return reason_; }  // None while the trial runs on its own
  bool failure_seen() const { return grace_until_.has_value(); }

 private:
  StopDecision stop(StopAction action, StopReason reason, double t);
  StopLimits limits_;
  StopReason reason_ = StopReason::None;
  std::optional<double> grace_until_, kill_at_;
  bool killed_ = false, start_failed_ = false, stacks_in_ = false, sampled_ = false;
};

}  // namespace ddpbisect
