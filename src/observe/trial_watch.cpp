#include "observe/trial_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/category_names.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/process.hpp"
#include "launch/process_tree.hpp"
#include "launch/torchrun.hpp"
#include "launch/warm_server.hpp"
#include "observe/stacks.hpp"
#include "observe/trial_watch_state.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_port_clash(std::string_view line) {
  return line.find("Address already in use") != std::string_view::npos ||
         line.find("failed to listen on any local network address") != std::string_view::npos ||
         line.find("EADDRINUSE") != std::string_view::npos;
}

size_t count_ranks(const TrialSetup& setup) {
  size_t n = 0;
  for (const auto& s : setup.slots) n += s.agent_ranks > 0 ? static_cast<size_t>(s.agent_ranks) : 1;
  return n;
}

// On a loaded machine everything takes longer: the limits left `auto` grow with the run queue
// per CPU when the trial starts (up to twice), never below what the job's trials showed.
double load_factor() {
  static thread_local double cached = -1, at = -10;
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - at > 1.0) cached = std::clamp(machine_load(), 1.0, 2.0), at = now;
  return cached;
}

HangOptions hang_options(const Spec& spec, const TrialSetup& setup, const TrialOutcome& out) {
  HangOptions o;
  if (spec.limits.hang_after) o.fixed_threshold_s = spec.limits.hang_after->count() / 1000.0;
  if (setup.hang_floor_s) o.learned_floor_s = *setup.hang_floor_s;
  o.cpu_after_heartbeat = out.config.device != "cuda";
  return o;
}

std::string size_text(int64_t bytes) {
  if (bytes % (1 << 30) == 0) return std::to_string(bytes >> 30) + "GB";
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "MB";
  return std::to_string(bytes) + " bytes";
}

// The limit the kernel enforced against the trial, if any.
std::optional<ResourceFault> resource_fault(const Limits& limits, const CgroupEvents& e) {
  if (e.oom_kills > 0 && limits.memory_bytes)
    return ResourceFault{"limits.memory",
                         "(" + size_text(*limits.memory_bytes) +
                             "): the kernel's OOM killer ended " + std::to_string(e.oom_kills) +
                             " process(es)",
                         -1};
  if (e.fork_refusals > 0 && limits.max_procs)
    return ResourceFault{"limits.max_procs",
                         "(" + std::to_string(*limits.max_procs) + " processes and threads): " +
                             std::to_string(e.fork_refusals) + " fork(s) refused",
                         -1};
  return std::nullopt;
}

// A torchrun agent forwards its ranks' output from their log files on a polling thread, so a
// dump reaches us later than a rank's own pipe would bring it: wait longer before the kill.
StopLimits stop_limits(const Spec& spec, const TrialSetup& setup) {
  StopLimits l{spec.limits.grace.count() / 1000.0,
               setup.timeout_s ? *setup.timeout_s * load_factor()
                               : spec.limits.trial_timeout.count() / 1000.0};
  for (const auto& slot : setup.slots)
    if (slot.agent_ranks > 0) l.dump_wait_s = 4.0;
  return l;
}

}  // namespace

TrialWatch::TrialWatch(const Spec& spec, const TrialSetup& setup, TrialOutcome& out)
    : spec_(spec),
      setup_(setup),
      out_(out),
      limits_(stop_limits(spec, setup)),
      policy_(limits_),
      budget_{spec.limits.log_cap_bytes},
      hang_(static_cast<int>(count_ranks(setup)), hang_options(spec, setup, out)),
      t0_(now_s()) {
  out.started_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (size_t i = 0; i < setup.slots.size(); ++i) open(i, setup.slots[i]);
}

TrialWatch::~TrialWatch() = default;

double TrialWatch::t() const {
  return now_s() - t0_;
}

// The captures of process i's ranks (node<N>/rank<R>.{stdout,stderr}), and an agent's own
// (node<N>/torchrun.{stdout,stderr}).
void TrialWatch::open(size_t i, const RankSlot& slot) {
  auto p = std::make_unique<Process>();
  p->first = ranks_.size();
  p->agent = slot.agent_ranks > 0;
  p->count = p->agent ? static_cast<size_t>(slot.agent_ranks) : 1;
  fs::path node_dir = fs::path(out_.dir) / ("node" + std::to_string(slot.node));
  fs::create_directories(node_dir);
  auto capture = [&](const std::string& path, StreamCapture::LineSink sink) {
    return std::make_unique<StreamCapture>(path, path + ".times", &budget_, std::move(sink));
  };
  for (size_t k = 0; k < p->count; ++k) {
    auto r = std::make_unique<Rank>();
    const size_t index = ranks_.size();
    r->process = i;
    r->rec.rank = slot.rank + static_cast<int>(k);
    r->rec.local_rank = slot.local_rank + static_cast<int>(k);
    r->rec.node = slot.node;
    r->rec.argv = setup_.processes[i].argv;
    std::string base = (node_dir / ("rank" + std::to_string(r->rec.rank))).string();
    r->rec.stdout_path = base + ".stdout";
    r->rec.stderr_path = base + ".stderr";
    auto sink = [this, index](std::string_view line, double t_ms) {
      on_line(index, line, t_ms / 1000.0);
    };
    r->out = capture(r->rec.stdout_path, sink);
    r->err = capture(r->rec.stderr_path, sink);
    ranks_.push_back(std::move(r));
  }
  if (p->agent) {
    auto own = [this, i](std::string_view line, double t_ms) {
      if (is_port_clash(line)) out_.port_clash = true;
      auto failed = procs_[i]->report.line(line);  // a rank failed: the grace starts
      if (!failed || failed->local_rank < 0) return;
      const size_t r = procs_[i]->first + static_cast<size_t>(failed->local_rank);
      if (r >= procs_[i]->first + procs_[i]->count) return;
      if (failed->pid > 0) ranks_[r]->rec.pid = static_cast<int>(failed->pid);
      end_rank(r, failed->exit_code, failed->signal, t_ms / 1000.0);
    };
    p->own[0] = capture((node_dir / "torchrun.stdout").string(), own);
    p->own[1] = capture((node_dir / "torchrun.stderr").string(), own);
  }
  procs_.push_back(std::move(p));
}

void TrialWatch::on_line(size_t i, std::string_view line, double t) {
  RankRecord& r = ranks_[i]->rec;
  if (auto hb = parse_heartbeat(line)) {
    r.heartbeats++;
    r.last_step = hb->step;
    if (r.step_times.size() < 4096) r.step_times.push_back(t);
    hang_.on_heartbeat(static_cast<int>(i), hb->step, t);
  } else if (auto a = parse_activity(line)) {
    hang_.on_activity(static_cast<int>(i), *a, t);
    if (a->activity == Activity::Finished || a->activity == Activity::Exiting)
      r.finished_s = r.finished_s < 0 ? t : r.finished_s;
    // An uncaught exception: the traceback is out, the rank is tearing down; its exit status
    // may be long in coming (a teardown that waits for peers), so the grace starts now.
    if (a->activity == Activity::Exiting && a->error && !first_failure_) {
      first_failure_ = i;
      policy_.on_rank_failed(t);
    }
  } else {
    if (!is_dump_line(line)) hang_.on_output(static_cast<int>(i), t);
    if (is_port_clash(line)) out_.port_clash = true;
  }
}

void TrialWatch::on_output(size_t i, Stream s, const char* data, size_t n) {
  Process& p = *procs_[i];
  const double t_ms = t() * 1000.0;
  if (!p.agent) {
    Rank& r = *ranks_[p.first];
    (s == Stream::Out ? r.out : r.err)->feed(data, n, t_ms);
    return;
  }
  const int w = s == Stream::Out ? 0 : 1;
  p.split[w].feed(
      data, n, [&](std::string_view line, bool complete) { on_agent_line(i, s, line, complete); });
}

// A line of an agent's stream: "[ddpbisect rank=R local=L]:text" is rank R's, the rest the
// agent's own. A line cut for length goes on where it began.
void TrialWatch::on_agent_line(size_t i, Stream s, std::string_view line, bool complete) {
  Process& p = *procs_[i];
  const int w = s == Stream::Out ? 0 : 1;
  const double t_ms = t() * 1000.0;
  std::optional<size_t> to = p.continues[w];
  std::string_view text = line;
  if (!to) {
    PrefixedLine pl = split_agent_line(line);
    if (pl.local_rank >= 0 && static_cast<size_t>(pl.local_rank) < p.count) {
      to = p.first + static_cast<size_t>(pl.local_rank);
      if (pl.rank >= 0) ranks_[*to]->real_rank = pl.rank;
      text = pl.text;
    }
  }
  p.continues[w] = complete ? std::nullopt : to;
  StreamCapture* c = to ? (w == 0 ? ranks_[*to]->out : ranks_[*to]->err).get() : p.own[w].get();
  c->feed(text.data(), text.size(), t_ms);
  if (complete) c->feed("\n", 1, t_ms);
}

std::string TrialWatch::start(RankSet& set) {
  for (size_t i = 0; i < setup_.processes.size(); ++i) {
    const Process& p = *procs_[i];
    for (size_t k = 0; k < p.count; ++k) ranks_[p.first + k]->rec.start_s = t();
    StartResult r = set.start(setup_.processes[i]);
    if (!r.ok()) {
      policy_.on_start_failure();
      return (p.agent ? "node " + std::to_string(setup_.slots[i].node) + "'s torchrun: "
                      : "rank " + std::to_string(setup_.slots[i].rank) + ": ") +
             r.error;
    }
    if (!p.agent) ranks_[p.first]->pid = ranks_[p.first]->rec.pid = r.child.pid;
  }
  return "";
}

void TrialWatch::end_rank(size_t i, int exit_code, int signal, double t) {
  Rank& r = *ranks_[i];
  if (r.ended) return;
  r.ended = true;
  r.rec.end_s = t;
  r.rec.exit_code = signal ? -1 : exit_code;
  r.rec.signal = signal;
  hang_.on_exit(static_cast<int>(i));
  // A rank that died of our stack request (faulthandler aborts) was stopped by us.
  if (r.stack_requested_at >= 0 && r.rec.killed_by == StopReason::None)
    r.rec.killed_by = policy_.reason();
  if (r.rec.failed() && !first_failure_) {
    first_failure_ = i;
    policy_.on_rank_failed(t);
  }
}

void TrialWatch::on_exit(size_t i, const ExitStatus& st) {
  Process& p = *procs_[i];
  const double now = t();
  if (!p.agent) return end_rank(p.first, st.exit_code, st.signal, now);
  for (int w = 0; w < 2; ++w) {
    const Stream s = w ? Stream::Err : Stream::Out;
    p.split[w].flush([&](std::string_view line, bool) { on_agent_line(i, s, line, true); });
  }
  // The agent's account of its ranks; ranks it does not name ended with it (exit 0 when it
  // named others, else its own status).
  std::vector<WorkerEnd> ends = p.report.ends();
  for (size_t k = 0; k < p.count; ++k) {
    Rank& r = *ranks_[p.first + k];
    const WorkerEnd* end = nullptr;
    for (const auto& e : ends)
      if (e.local_rank == r.rec.local_rank &&
          (e.rank < 0 || r.real_rank < 0 || e.rank == r.real_rank))
        end = &e;
    if (end && end->pid > 0) r.rec.pid = static_cast<int>(end->pid);
    if (end && end->stopped_by_agent && r.rec.killed_by == StopReason::None)
      r.rec.killed_by = StopReason::EarlyStop;  // torchrun stopped it after another rank failed
    if (end) {
      r.ended = false;  // the banner's exit status wins over the live failure line
      end_rank(p.first + k, end->exit_code, end->signal, now);
    } else if (!r.ended) {
      if (st.signal && r.rec.killed_by == StopReason::None) r.rec.killed_by = policy_.reason();
      end_rank(p.first + k, ends.empty() ? st.exit_code : 0, st.signal, now);
    }
  }
}

// A torchrun agent's workers are its children with LOCAL_RANK in their environment (here, or
// in a namespace sharing our /proc); remote agents' workers stay unknown.
void TrialWatch::find_workers(const RankSet& set) {
  for (size_t i = 0; i < procs_.size(); ++i) {
    Process& p = *procs_[i];
    if (!p.agent || !set.running(i)) continue;
    bool missing = false;
    for (size_t k = 0; k < p.count; ++k) missing = missing || ranks_[p.first + k]->pid < 0;
    if (!missing) continue;
    for (pid_t child : child_pids(set.pid(i))) {
      auto env = process_environment(child);
      auto local = env.find("LOCAL_RANK");
      if (local == env.end()) continue;
      const size_t k = static_cast<size_t>(std::atoi(local->second.c_str()));
      if (k >= p.count) continue;
      Rank& r = *ranks_[p.first + k];
      r.pid = child;
      if (r.rec.pid < 0) r.rec.pid = child;
      if (auto g = env.find("RANK"); g != env.end() && r.real_rank < 0)
        r.real_rank = std::atoi(g->second.c_str());
    }
  }
}

// A warm-started rank (launch/warm_server.hpp) is forked by the fork server, not by its stub: its
// CPU time and its stacks are the forked process's, once the stub names it.
void TrialWatch::find_warm_ranks(const RankSet& set) {
  if (setup_.place.warm_socket.empty()) return;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = *ranks_[i];
    // Still the stub's pid (set at start) until the forked rank is found.
    if (procs_[r.process]->agent || !set.running(r.process) || r.pid != set.pid(r.process))
      continue;
    if (pid_t forked = warm_rank_pid(r.pid); forked > 0) r.pid = forked;
  }
}

bool TrialWatch::running(const RankSet& set, size_t i) const {
  return set.running(ranks_[i]->process) && !ranks_[i]->ended;
}

// Every 250 ms: each rank's CPU time and I/O (its whole process tree), torchrun's workers, the
// cgroup's limits.
void TrialWatch::sample(const RankSet& set) {
  const double now = t();
  if (now < next_sample_) return;
  find_workers(set);
  find_warm_ranks(set);
  const ProcessTable table = ProcessTable::read();
  std::vector<pid_t> ours;
  // A torchrun rank not started yet: its agent's work (imports, rendezvous) is its progress.
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (running(set, i)) {
      Rank& r = *ranks_[i];
      const pid_t root = r.pid > 0 ? r.pid : set.pid(r.process);
      r.tree.update(table, root);
      for (pid_t p : table.tree(root)) ours.push_back(p);
      hang_.on_cpu(static_cast<int>(i), r.tree.cpu_seconds(), now);
      hang_.on_io(static_cast<int>(i), r.tree.io_bytes(), now);
      if (r.tree.io_wait()) hang_.on_io_wait(static_cast<int>(i), now);
    }
  // The load beside the trial (busy processes, other trials), smoothed over a few samples.
  static const double cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const double beside = table.runnable_except(ours);
  foreign_ = foreign_ < 0 ? beside : 0.7 * foreign_ + 0.3 * beside;
  hang_.on_load(std::clamp(foreign_ / cpus, 1.0, 1.5));
  if (!out_.resource) {
    out_.resource = resource_fault(spec_.limits, setup_.cgroup.events());
    if (out_.resource) resource_seen_at_ = now;
  }
  next_sample_ = now + 0.25;
}

bool TrialWatch::resource_exceeded(double now) const {
  if (!out_.resource) return false;
  // The OOM killer's victim is a rank (or one of its processes): a moment to reap it, so that
  // the outcome names the rank; refused forks have no victim.
  if (out_.resource->limit == "limits.memory" && !first_failure_)
    return now - resource_seen_at_ > 0.3;
  return true;
}

void TrialWatch::kill_all(RankSet& set, StopReason why) {
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (running(set, i) && ranks_[i]->rec.killed_by == StopReason::None)
      ranks_[i]->rec.killed_by = why;
  set.kill_all();
  setup_.cgroup.kill_all();
}

void TrialWatch::watch(RankSet& set) {
  while (set.any_running()) {
    RankSet::Events ev = set.wait(0.05);
    for (size_t i : ev.exited) on_exit(i, set.status(i));
    sample(set);
    const double now = t();
    const bool cancelled = setup_.cancelled && setup_.cancelled();
    const bool hung = hang_.hung(now);
    if (!hung) sampled_at_.reset(), sample_matched_ = false;
    // The trial's end confirms a hang suspected by then (a long confirmation window, a short
    // timeout).
    const bool confirmed = hung && (hang_.hung(now, confirm_window() - hang_.threshold()) ||
                                    now > limits_.timeout_s || sample_matches_expected());
    StopDecision d =
        policy_.decide({now, hung, ev.stopped, resource_exceeded(now), cancelled, confirmed});
    if (d.action == StopAction::SampleStacks) sample_stacks(set);
    if (d.action == StopAction::RequestStacks) request_stacks(set, d.reason);
    if (d.action == StopAction::KillAll) kill_all(set, d.reason);
  }
}

// torchrun's rendezvous, not ddpbisect, decides which node gets which ranks: the files and
// records take the ranks the agents reported (two renames, so that no file is overwritten).
void TrialWatch::rename_to_real_ranks() {
  std::vector<size_t> moved;
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i]->real_rank >= 0 && ranks_[i]->real_rank != ranks_[i]->rec.rank)
      moved.push_back(i);
  std::error_code ec;
  for (int phase = 0; phase < 2; ++phase)
    for (size_t i : moved) {
      RankRecord& rec = ranks_[i]->rec;
      const fs::path dir = fs::path(rec.stdout_path).parent_path();
      const std::string to = (dir / ("rank" + std::to_string(ranks_[i]->real_rank))).string() +
                             (phase == 0 ? ".moving" : "");
      for (auto [from, ext] :
           {std::pair{&rec.stdout_path, ".stdout"}, {&rec.stderr_path, ".stderr"}}) {
        const std::string target = to + ext;
        fs::rename(*from, target, ec);
        fs::rename(*from + ".times", target + ".times", ec);
        *from = target;
      }
      if (phase == 1) rec.rank = ranks_[i]->real_rank;
    }
}

void TrialWatch::finish(TrialOutcome& out) {
  out.duration_s = t();
  out.hang_threshold_s = hang_.threshold();
  out.first_step_s = hang_.first_heartbeat();
  out.slowest_step_s = hang_.slowest_step();
  out.longest_pause_s = hang_.longest_pause();
  for (auto& p : procs_)
    for (auto& c : p->own)
      if (c) c->close(out.duration_s * 1000.0);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = *ranks_[i];
    r.out->close(out.duration_s * 1000.0);
    r.err->close(out.duration_s * 1000.0);
    r.rec.bytes = r.out->bytes_seen() + r.err->bytes_seen();
    r.rec.dropped = r.out->bytes_dropped() + r.err->bytes_dropped();
    // Progress as it was when the trial was stopped: the stack dumps that follow are not progress.
    r.rec.last_progress_s = i < progress_at_stop_.size() ? progress_at_stop_[i]
                                                         : hang_.last_progress(static_cast<int>(i));
  }
  rename_to_real_ranks();
  bool frames = false, any_asked = false, blocked = false;
  for (auto& r : ranks_) {
    if (r->stack_requested_at >= 0)
      r->rec.stack = read_stack(r->rec.stderr_path, r->stack_requested_at);
    frames = frames || (r->asked && has_frames(r->rec.stack));
    any_asked = any_asked || r->asked;
    blocked = blocked || !r->rec.blocked_in.empty();
    if (r->rec.finished_s >= 0 && r->rec.end_s - r->rec.finished_s >= 5.0)
      out.notes.push_back("slow exit: rank " + std::to_string(r->rec.rank) + " took " +
                          std::to_string(std::lround(r->rec.end_s - r->rec.finished_s)) +
                          " s from the end of its training to its exit");
    out.ranks.push_back(r->rec);
  }
  if (policy_.reason() == StopReason::Hang)
    out.hang_evidence = frames ? "stacks" : (!any_asked && blocked ? "kernel" : "");
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const RankRecord& a, const RankRecord& b) { return a.rank < b.rank; });
  if (first_failure_) out.first_failure_rank = ranks_[*first_failure_]->rec.rank;
  out.log_cap_hit = budget_.exhausted;
  out.stop = policy_.reason();
  if (out.resource && out.first_failure_rank) out.resource->rank = *out.first_failure_rank;
  for (size_t i = 0; i < procs_.size(); ++i)
    if (procs_[i]->agent)
      out.agent_logs.push_back(
          (fs::path(out.dir) / ("node" + std::to_string(setup_.slots[i].node)) / "torchrun.stderr")
              .string());
}

}  // namespace ddpbisect
