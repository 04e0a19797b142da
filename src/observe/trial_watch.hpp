// One trial as it runs: the processes in a RankSet and the ranks they are (one each, or a torchrun
// agent's node of ranks, demultiplexed from the agent's tee'd output), every rank's captured
// streams, heartbeats into the hang detector, the limits, and the StopPolicy's decisions carried
// out: stack requests (py-spy or a signal) and kills. Times are seconds since the trial started.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/cgroup.hpp"
#include "launch/launcher.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "observe/agent_report.hpp"
#include "observe/hang_detector.hpp"
#include "observe/log_capture.hpp"
#include "observe/outcome.hpp"
#include "observe/stop_policy.hpp"

namespace ddpbisect {

// Everything decided before a process starts: where the trial lives, where ranks rendezvous,
// its token, the processes the launcher turns the slots into, and its cgroup.
struct TrialSetup {
  std::shared_ptr<const Launcher> launcher;
  TrialPlace place;
  std::vector<RankSlot> slots;
  std::vector<ProcessSpec> processes;
  TrialCgroup cgroup;               // every process of the trial on this machine, killed as one
  std::function<bool()> cancelled;  // the reducer no longer needs the answer (may be null)
  std::optional<double> hang_floor_s, timeout_s;  // TrialRequest's
  std::function<bool(const Diagnosis&)> expected_hang;
};

class TrialWatch {
 public:
  TrialWatch(const Spec& spec, const TrialSetup& setup, TrialOutcome& out);
  ~TrialWatch();
  double t() const;

  // Starts every process in order; the first that cannot start ends the trial (its error).
  std::string start(RankSet& set);
  // The RankSet's sink: a chunk of process i's stdout or stderr.
  void on_output(size_t process, Stream s, const char* data, size_t n);
  // Until every process has ended: output, exits, samples, the stop policy's decisions.
  void watch(RankSet& set);
  // Closes the captures and fills the outcome's ranks (ordered by rank), stacks, limits.
  void finish(TrialOutcome& out);

 private:
  struct Rank;
  struct Process;
  void open(size_t process, const RankSlot& slot);
  void on_line(size_t rank, std::string_view line, double t);
  void on_agent_line(size_t process, Stream s, std::string_view line, bool complete);
  void on_exit(size_t process, const ExitStatus& st);
  void end_rank(size_t rank, int exit_code, int signal, double t);
  void sample(const RankSet& set);
  void find_workers(const RankSet& set);
  void find_warm_ranks(const RankSet& set);
  bool resource_exceeded(double now) const;
  bool running(const RankSet& set, size_t rank) const;
  using StackAsks = std::vector<std::pair<pid_t, int>>;  // a rank's processes and signals
  bool read_with_py_spy(std::map<size_t, StackAsks>& asks);
  void signal_processes(RankSet& set, const std::map<size_t, StackAsks>& asks);
  void sample_stacks(RankSet& set);
  bool sample_matches_expected();
  double confirm_window() const;
  void request_stacks(RankSet& set, StopReason why);
  void kill_all(RankSet& set, StopReason why);
  void rename_to_real_ranks();

  const Spec& spec_;
  const TrialSetup& setup_;
  TrialOutcome& out_;
  const StopLimits limits_;  // fixed when the trial starts
  StopPolicy policy_;
  LogBudget budget_;
  HangDetector hang_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<std::unique_ptr<Process>> procs_;
  const double t0_;
  double next_sample_ = 0, resource_seen_at_ = 0;
  std::optional<size_t> first_failure_;  // index into ranks_
  std::vector<double> progress_at_stop_;
  std::optional<double> sampled_at_;  // a suspected hang's stacks were asked for then
  double foreign_ = -1;               // processes ready to run beside the trial's (smoothed)
  bool sample_read_ = false, sample_matched_ = false;
};

}  // namespace ddpbisect
