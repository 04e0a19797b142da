// Decides when a trial may have hung: no rank that is still training made progress for a
// threshold that adapts to the job (max(floor, 5x the slowest step), the floor 5 s unless the
// reduction learned a larger one from the job's earlier trials) unless the spec fixes it.
// Progress is a heartbeat, an output line, the CPU time or the I/O of the rank's whole process
// tree, or the agent telling that the rank left a collective. A rank that finished training
// (the agent's `finished`/`exiting`) is never hung: its exit is slow, not stuck. Pure logic
// over times and counters given by the caller.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
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

// What a process of a rank told about itself (docs/agent.md "Activity").
enum class Activity { Running, Collective, Finished, Exiting };
struct ActivityLine {
  pid_t pid = 0;
  Activity activity = Activity::Running;
  bool error = false;  // exiting after an uncaught exception
  double age = 0;      // collective: how long the rank had been in the call when it told
};
// Parses "DDPBISECT_STATE {json}"; nullopt for any other line.
std::optional<ActivityLine> parse_activity(std::string_view line);

struct HangOptions {
  std::optional<double> fixed_threshold_s;  // limits.hang_after when the spec sets one
  double floor_s = 5.0;        // the least auto threshold on an idle machine (scaled by load)
  double learned_floor_s = 0;  // the least auto threshold the job's earlier trials showed
  // CPU time is progress after the first heartbeat too. Off for CUDA ranks: CUDA's default
  // synchronisation spins the CPU while it waits for a stuck kernel.
  bool cpu_after_heartbeat = true;
  // A rank that has not started its distributed work yet (no heartbeat, nothing from its agent:
  // importing, reading a data set from slow storage) waits on no peer: it counts as quiet only
  // after this long.
  double startup_s = 60.0;
};

class HangDetector {
 public:
  HangDetector(int ranks, HangOptions options);

  void on_start(double now);
  void on_heartbeat(int rank, long long step, double now);
  void on_output(int rank, double now);
  // Monotonic counters of the rank's process tree: CPU seconds, bytes read and written.
  void on_cpu(int rank, double cpu_seconds, double now);
  void on_io(int rank, int64_t bytes, double now);
  void on_activity(int rank, const ActivityLine& line, double now);
  // A process of the rank waits on storage (state D): it is not waiting on a peer.
  void on_io_wait(int rank, double now) { progress(rank, now); }
  void on_exit(int rank);
  // Until `until`, what the ranks do is their answer to a stack request, not progress.
  void mute(double until) { mute_until_ = until; }
  // How much slower than on an idle machine things go now (1 to 1.5): the processes ready to run
  // beside the trial's, per CPU. The auto threshold and the startup allowance grow with it.
  void on_load(double factor) { load_ = factor; }

  double threshold() const;
  // Every rank still training quiet for its threshold (a rank still starting: its startup
  // allowance) plus `extra` seconds: suspected at 0, confirmed with the confirmation window.
  bool hung(double now, double extra = 0) const;
  double quiet_for(double now) const;  // since the last progress of a rank still training
  double last_progress(int rank) const { return ranks_[rank].last_progress; }
  double last_progress_any() const;
  long long last_step(int rank) const { return ranks_[rank].step; }
  double slowest_step() const { return slowest_step_; }
  double first_heartbeat() const { return first_heartbeat_; }  // -1: none
  // The longest time no rank made progress while the trial went on (the job's own pauses).
  double longest_pause() const { return longest_pause_; }
  bool finished(int rank) const;  // the rank's processes all finished training
  bool exiting_with_error(int rank) const;
  bool any_training(double now) const;  // a live rank has not finished training

 private:
  struct RankState {
    double last_progress = 0;
    double last_heartbeat = -1;
    long long step = -1;
    std::deque<std::pair<double, double>> cpu;  // (t, CPU seconds) over the last ~2 s
    int64_t io_mark = -1;
    std::map<pid_t, ActivityLine> told;
    bool alive = true;
    bool started = false;  // a heartbeat or an agent line came: its distributed work began
  };
  void progress(int rank, double now);
  bool in_collective(const RankState& r) const;

  std::vector<RankState> ranks_;
  HangOptions opt_;
  double slowest_step_ = 0, first_heartbeat_ = -1;
  double mute_until_ = -1, last_any_ = 0, longest_pause_ = 0, load_ = 1.0;
};

}  // namespace ddpbisect
