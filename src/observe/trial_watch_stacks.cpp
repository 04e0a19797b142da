// TrialWatch's stack requests: which process of each rank is asked and how (stacks.hpp), the
// suspected hang's sample (taken while the ranks run on), and whether it reads as the expected
// hang.
#include "observe/trial_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/category_names.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/process.hpp"
#include "launch/process_tree.hpp"
#include "launch/torchrun.hpp"
#include "launch/warm_server.hpp"
#include "observe/stacks.hpp"
#include "observe/trial_watch_state.hpp"

namespace ddpbisect {

// Ranks whose only request is faulthandler's fatal SIGABRT are read with py-spy where it is
// installed and may attach: all threads, the rank left running. Returns whether it read any.
bool TrialWatch::read_with_py_spy(std::map<size_t, StackAsks>& asks) {
  const auto& env = setup_.processes.front().env;
  const std::string py_spy = find_py_spy(env.count("PATH") ? env.at("PATH") : "");
  if (py_spy.empty()) return false;
  std::vector<pid_t> pids;
  std::vector<size_t> who;
  for (const auto& [i, a] : asks)
    if (!a.empty() && std::all_of(a.begin(), a.end(), [](auto& x) { return x.second == SIGABRT; }))
      pids.push_back(a.front().first), who.push_back(i);
  auto dumps = py_spy_dumps(py_spy, pids);
  bool any = false;
  for (size_t k = 0; k < who.size(); ++k) {
    if (!dumps[k]) continue;
    ranks_[who[k]]->err->feed(dumps[k]->data(), dumps[k]->size(), t() * 1000.0);
    asks[who[k]].erase(asks[who[k]].begin());
    any = true;
  }
  return any;
}

// One process of each rank at a time, then ~100 ms for its dump: a rank's processes share its
// stderr, so their dumps must not interleave.
void TrialWatch::signal_processes(RankSet& set, const std::map<size_t, StackAsks>& asks) {
  for (size_t round = 0;; ++round) {
    bool sent = false;
    for (const auto& [i, a] : asks)
      if (round < a.size()) sent = kill(a[round].first, a[round].second) == 0 || sent;
    if (!sent) break;
    const double until = t() + 0.1;
    while (t() < until && set.any_running()) {
      RankSet::Events ev = set.wait(until - t());
      for (size_t p : ev.exited) on_exit(p, set.status(p));
    }
  }
}

// Every live rank is asked for its stack: each of its processes in its own way (stacks.hpp:
// the agent's signal, py-spy, faulthandler, the worker's dump; wrappers and other programs are
// left alone); ranks that run on other hosts through the launcher.
void TrialWatch::request_stacks(RankSet& set, StopReason why) {
  const double now = t();
  if (why == StopReason::Timeout) {
    bool any = false, all_finished = true;
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (running(set, i)) {
        any = true;
        all_finished = all_finished && hang_.finished(static_cast<int>(i));
      }
    out_.timed_out_exiting = any && all_finished;
    out_.timed_out_progressing = !out_.timed_out_exiting && !hang_.hung(now);
  }
  if (why == StopReason::Hang) {
    out_.hang_declared_s = sampled_at_ ? *sampled_at_ : now;
    out_.hang_confirmed_s = now;
    out_.hang_confirmed_by = sample_matched_ ? "expected" : "window";
  }
  for (size_t i = 0; i < ranks_.size(); ++i)
    progress_at_stop_.push_back(hang_.last_progress(static_cast<int>(i)));
  hang_.mute(1e300);  // what the ranks do from here on answers the request
  // The sample's stacks already show the expected hang: they are the evidence.
  if (why == StopReason::Hang && sample_matched_) return policy_.on_stacks_collected();
  std::map<size_t, StackAsks> asks;
  std::vector<int> elsewhere;  // nodes of ranks with no local process to ask
  bool by_agent = false;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = *ranks_[i];
    if (!running(set, i) || (procs_[r.process]->agent && r.pid <= 0)) continue;
    if (ranks_[i]->stack_requested_at < 0) ranks_[i]->stack_requested_at = now;
    const pid_t pid = r.pid > 0 ? r.pid : set.pid(r.process);
    ranks_[i]->rec.blocked_in = process_wait_channel(pid);
    const int agent = agent_stack_signal(setup_.processes[r.process].env);
    asks[i] = stack_requests(pid, agent);
    ranks_[i]->asked = ranks_[i]->asked || !asks[i].empty();
    if (asks[i].empty()) elsewhere.push_back(r.rec.node);
    for (const auto& ask : asks[i]) by_agent = by_agent || ask.second == agent;
  }
  const bool by_py_spy = read_with_py_spy(asks);
  bool by_signal = false;
  for (const auto& [i, a] : asks)
    for (const auto& ask : a)
      by_signal = by_signal || ask.second == SIGABRT || ask.second == SIGUSR1;
  const bool remote = !elsewhere.empty() && setup_.launcher->signal_remote(
                                                setup_.place.token, elsewhere, stack_signal(spec_));
  out_.stacks_by.clear();
  for (auto [on, what] :
       {std::pair{by_agent, "agent"}, {by_py_spy, "py-spy"}, {by_signal || remote, "signal"}})
    if (on) out_.stacks_by += (out_.stacks_by.empty() ? "" : " + ") + std::string(what);
  if (!by_agent && !by_signal && !remote) return policy_.on_stacks_collected();
  signal_processes(set, asks);
}

// A suspected hang: every live rank's stack where asking leaves the rank running (the agent's
// signal, py-spy, the worker's dump; never faulthandler's fatal SIGABRT), so that the hang can be
// confirmed later, or refuted by progress, and its stacks compared with the expected hang's.
void TrialWatch::sample_stacks(RankSet& set) {
  const double now = t();
  sampled_at_ = now;
  sample_read_ = false;
  std::map<size_t, StackAsks> asks;
  bool every_rank = true;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = *ranks_[i];
    if (!running(set, i) || hang_.finished(static_cast<int>(i))) continue;
    if (procs_[r.process]->agent && r.pid <= 0) {
      every_rank = false;
      continue;
    }
    const pid_t pid = r.pid > 0 ? r.pid : set.pid(r.process);
    asks[i] = stack_requests(pid, agent_stack_signal(setup_.processes[r.process].env));
  }
  read_with_py_spy(asks);
  for (auto& [i, a] : asks) {
    a.erase(std::remove_if(a.begin(), a.end(), [](const auto& x) { return x.second == SIGABRT; }),
            a.end());
    if (a.empty()) every_rank = false;
  }
  for (auto& [i, a] : asks) {
    Rank& r = *ranks_[i];
    r.asked = true;
    if (r.stack_requested_at < 0) r.stack_requested_at = now;
    r.rec.blocked_in = process_wait_channel(r.pid > 0 ? r.pid : set.pid(r.process));
  }
  hang_.mute(now + limits_.dump_wait_s);
  signal_processes(set, asks);
  // Only a sample of every rank can be compared with the expected hang.
  sample_read_ = !every_rank;
}

// After the sample's dumps are in: do they already read as the hang the reducer expects?
bool TrialWatch::sample_matches_expected() {
  if (!setup_.expected_hang || sample_read_ || !sampled_at_) return false;
  if (t() < *sampled_at_ + limits_.dump_wait_s) return false;
  sample_read_ = true;
  TrialOutcome now = out_;
  now.duration_s = t();
  now.hang_threshold_s = hang_.threshold();
  now.hang_declared_s = *sampled_at_;
  now.stop = StopReason::Hang;
  for (auto& r : ranks_) {
    r->out->flush();
    r->err->flush();
    RankRecord rec = r->rec;
    if (rec.killed_by == StopReason::None && !r->ended) rec.killed_by = StopReason::Hang;
    if (r->stack_requested_at >= 0) rec.stack = read_stack(rec.stderr_path, r->stack_requested_at);
    now.ranks.push_back(rec);
  }
  std::sort(now.ranks.begin(), now.ranks.end(),
            [](const RankRecord& a, const RankRecord& b) { return a.rank < b.rank; });
  DiagnosisInput din = inputs_from_outcome(now.to_json());
  din.library_patterns = spec_.match.ignore_frames;
  const Diagnosis d = diagnose(din);
  sample_matched_ = d.failed && d.root.category == cat::hang && setup_.expected_hang(d);
  return sample_matched_;
}

// How long a suspected hang must hold before it counts (when no expected hang matched it):
// several thresholds, so that a pause of the job's own is not taken for its bug.
double TrialWatch::confirm_window() const {
  const double threshold = hang_.threshold();
  return std::max(3.0 * threshold, threshold + 10.0);
}

}  // namespace ddpbisect
