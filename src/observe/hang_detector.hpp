// Decides when a trial has hung: no live rank made progress for a threshold that adapts to the
// step time seen (max(5 s, 5x the slowest step)) unless the spec fixes it. Progress is a
// heartbeat or an output line; for ranks that never sent a heartbeat, CPU time spent counts too.
// Pure logic over times given by the caller.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace ddpbisect {

struct Heartbeat {
  int rank = -1;
  long long step = -1;
  double t = 0;  // the rank's own wall clock
  std::optional<double> loss;
  std::optional<long long> seq;
};

// Parses "DDPBISECT_HEARTBEAT {json}" (docs/heartbeat.md); nullopt for any other line.
std::optional<Heartbeat> parse_heartbeat(std::string_view line);

class HangDetector {
 public:
  HangDetector(int ranks, std::optional<double> fixed_threshold_s);

  void on_start(double now);
  void on_heartbeat(int rank, long long step, double now);
  void on_output(int rank, double now);
  void on_cpu(int rank, double cpu_seconds, double now);
  // The rank's CPU time now comes from another process (torchrun's worker found under its
  // agent, a warm start's forked rank under its stub): its count starts again from there.
  void on_process_changed(int rank);
  void on_exit(int rank);

  double threshold() const;
  bool hung(double now) const;
  double last_progress(int rank) const { return ranks_[rank].last_progress; }
  double last_progress_any() const;
  long long last_step(int rank) const { return ranks_[rank].step; }
  double slowest_step() const { return slowest_step_; }

 private:
  struct RankState {
    double last_progress = 0;
    double last_heartbeat = -1;
    long long step = -1;
    double cpu = -1;  // CPU seconds when progress was last counted from CPU time
    bool alive = true;
  };
  std::vector<RankState> ranks_;
  std::optional<double> fixed_;
  double slowest_step_ = 0;
};

}  // namespace ddpbisect
