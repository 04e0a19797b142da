// What the user watches during a reduction. On a terminal, one status line that updates in place
// (common/status_line.hpp): trials done / budget and the time spent, the current phase or pass,
// how long the running trial has run, the best configuration so far. Failures that set the
// target or differ from it are printed above it and stay. Otherwise one plain line per trial and
// per phase, fit for a CI log.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/duration.hpp"
#include "common/notice.hpp"
#include "common/status_line.hpp"
#include "reduce/result.hpp"

namespace ddpbisect {

class Progress {
 public:
  explicit Progress(bool quiet);
  ~Progress();
  // The budget the status line counts against (unset: none).
  void budget(std::optional<int64_t> max_trials, std::optional<Millis> max_time);
  void phase(const std::string& text);  // "escalate", "round 1: samples", "confirm"
  // The failure the reduction keeps from now on (printed, stays on screen).
  void target(const Signature& target, const RunRecord& first, const std::string& stage);
  // `target_hit`: whether it failed with the target; nullopt before there is one.
  void trial(const TrialConfig& c, const RunRecord& r, std::optional<bool> target_hit,
             int64_t trials);
  void best(const TrialConfig& c);
  void note(const std::string& line);  // a plain line, above the status line
  void done();

 private:
  std::string compose(size_t columns) const;
  using Clock = std::chrono::steady_clock;
  std::string phase_, best_;
  int64_t trials_ = 0, replayed_ = 0;
  std::optional<int64_t> max_trials_;
  std::optional<Millis> max_time_;
  bool has_target_ = false, pending_phase_ = false;
  Clock::time_point start_ = Clock::now(), running_since_ = Clock::now();
  std::unique_ptr<StatusLine> line_;
  // While the status line is drawn, library code's notices are printed above it (declared after
  // it: gone before it is).
  std::unique_ptr<NoticeRoute> route_;
};

// "rank 1: RuntimeError: planted failure (trainer.cpp:fire_step_faults)" from a trial's record.
std::string record_headline(const RunRecord& r);

}  // namespace ddpbisect
