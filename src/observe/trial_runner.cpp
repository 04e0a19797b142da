#include "observe/trial_runner.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/duration.hpp"
#include "common/interrupt.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/cgroup.hpp"
#include "launch/ports.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "observe/abandoned.hpp"
#include "observe/hang_detector.hpp"
#include "observe/log_capture.hpp"
#include "observe/verdict.hpp"

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

// How to ask a rank for its stack: faulthandler (SIGABRT) for Python, the worker's SIGUSR1 dump.
int stack_signal(const Spec& spec) {
  if (spec.builtin) return SIGUSR1;
  const std::string exe = fs::path(spec.command->argv[0]).filename().string();
  return exe.find("python") != std::string::npos ? SIGABRT : SIGUSR1;
}

// Everything decided before a rank starts: where the trial lives, where ranks rendezvous, its
// token, and the processes the launcher turns the ranks into.
struct TrialSetup {
  std::shared_ptr<const Launcher> launcher;
  TrialPlace place;
  std::vector<RankSlot> slots;
  std::vector<ProcessSpec> processes;
  TrialCgroup cgroup;  // every process of the trial on this machine, killed as one
};

TrialSetup prepare_trial(const TrialRequest& req, TrialOutcome& out) {
  const Spec& spec = *req.spec;
  TrialSetup s;
  s.launcher = req.launcher ? req.launcher : make_launcher(spec.launcher);
  fs::create_directories(req.dir);
  s.place.dir = fs::absolute(req.dir).string();
  s.place.config_path = (fs::path(s.place.dir) / "config.json").string();
  s.place.master_addr = s.launcher->master_addr();
  s.place.master_port = pick_free_port(s.place.master_addr);
  s.place.token = random_token();
  s.place.extra_env = req.extra_env;
  std::ofstream(s.place.config_path) << rank_config_json(spec, req.config).dump(2) << "\n";
  s.slots = plan_ranks(spec, req.config, s.place);
  s.processes = s.launcher->wrap(s.slots);
  s.cgroup = TrialCgroup::create("ddpbisect-" + s.place.token,
                                 {spec.limits.memory_bytes, spec.limits.max_procs});
  LiveRecord live{s.place.token, s.cgroup.dirs(), s.launcher->name(), {}};
  for (auto& p : s.processes) p.join_cgroups = s.cgroup.procs_files();
  for (const auto& sl : s.slots) live.nodes.push_back(sl.node);
  write_live_record(req.dir, live);
  out.containment = s.cgroup.describe();
  if (!s.cgroup.unenforced().empty())
    out.containment += "; not enforced: " + s.cgroup.unenforced();
  out.dir = req.dir;
  out.config = req.config;
  out.launcher = s.launcher->name();
  out.master_addr = s.place.master_addr;
  out.master_port = s.place.master_port;
  out.token = s.place.token;
  return s;
}

struct LiveRank {
  RankRecord rec;
  std::unique_ptr<StreamCapture> out, err;
  double stack_requested_at = -1;
};

// The trial as it runs: every rank's record and captured streams, heartbeats into the hang
// detector, the stop policy fed with what happens. Times are seconds since the trial started.
class TrialWatch {
 public:
  TrialWatch(const Spec& spec, const TrialSetup& setup, TrialOutcome& out);
  double t() const { return now_s() - t0_; }

  void on_output(size_t i, Stream s, const char* data, size_t n) {
    (s == Stream::Out ? ranks_[i].out : ranks_[i].err)->feed(data, n, t() * 1000.0);
  }
  void on_exit(size_t i, const ExitStatus& st);
  // Every 250 ms: CPU time (progress for ranks without heartbeats) and the cgroup's limits.
  void sample(const RankSet& set);
  bool resource_exceeded(double now) const;
  void request_stacks(RankSet& set, StopReason why);
  void kill_all(RankSet& set, StopReason why);
  // The loop until every rank has ended: output, exits, the hang detector, the stop policy.
  void watch(RankSet& set);
  void finish(TrialOutcome& out);

  StopPolicy policy;
  std::vector<LiveRank> ranks_;

 private:
  void open_captures(const TrialSetup& setup, const std::string& dir);
  const TrialSetup& setup_;
  TrialOutcome& out_;
  LogBudget budget_;
  HangDetector hang_;
  const int stack_sig_;
  const double t0_ = now_s();
  double next_sample_ = 0, resource_seen_at_ = 0;
  const Limits limits_;
  std::vector<double> progress_at_stop_;
};

std::optional<double> fixed_hang(const Spec& spec) {
  if (!spec.limits.hang_after) return std::nullopt;
  return spec.limits.hang_after->count() / 1000.0;
}

TrialWatch::TrialWatch(const Spec& spec, const TrialSetup& setup, TrialOutcome& out)
    : policy({spec.limits.grace.count() / 1000.0, spec.limits.trial_timeout.count() / 1000.0}),
      setup_(setup),
      out_(out),
      budget_{spec.limits.log_cap_bytes},
      hang_(static_cast<int>(setup.slots.size()), fixed_hang(spec)),
      stack_sig_(stack_signal(spec)),
      limits_(spec.limits) {
  out.started_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  open_captures(setup, out.dir);
}

void TrialWatch::open_captures(const TrialSetup& setup, const std::string& dir) {
  ranks_.resize(setup.slots.size());
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const RankSlot& slot = setup.slots[i];
    RankRecord& rec = ranks_[i].rec;
    rec.rank = slot.rank;
    rec.local_rank = slot.local_rank;
    rec.node = slot.node;
    rec.argv = setup.processes[i].argv;
    fs::path node_dir = fs::path(dir) / ("node" + std::to_string(slot.node));
    fs::create_directories(node_dir);
    std::string base = (node_dir / ("rank" + std::to_string(slot.rank))).string();
    rec.stdout_path = base + ".stdout";
    rec.stderr_path = base + ".stderr";
    auto sink = [this, i](std::string_view line, double t_ms) {
      const double t = t_ms / 1000.0;
      RankRecord& r = ranks_[i].rec;
      if (auto hb = parse_heartbeat(line)) {
        r.heartbeats++;
        r.last_step = hb->step;
        if (r.step_times.size() < 4096) r.step_times.push_back(t);
        hang_.on_heartbeat(static_cast<int>(i), hb->step, t);
      } else {
        hang_.on_output(static_cast<int>(i), t);
        if (is_port_clash(line)) out_.port_clash = true;
      }
    };
    ranks_[i].out = std::make_unique<StreamCapture>(rec.stdout_path, rec.stdout_path + ".times",
                                                    &budget_, sink);
    ranks_[i].err = std::make_unique<StreamCapture>(rec.stderr_path, rec.stderr_path + ".times",
                                                    &budget_, sink);
  }
}

void TrialWatch::on_exit(size_t i, const ExitStatus& st) {
  RankRecord& r = ranks_[i].rec;
  r.end_s = t();
  hang_.on_exit(static_cast<int>(i));
  r.exit_code = st.signal ? -1 : st.exit_code;
  r.signal = st.signal;
  // A rank that died of our stack request (faulthandler aborts) was stopped by us.
  if (ranks_[i].stack_requested_at >= 0 && r.killed_by == StopReason::None)
    r.killed_by = policy.reason();
  if (r.failed() && !out_.first_failure_rank) {
    out_.first_failure_rank = r.rank;
    policy.on_rank_failed(r.end_s);
  }
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

void TrialWatch::sample(const RankSet& set) {
  const double now = t();
  if (now < next_sample_) return;
  for (size_t i = 0; i < set.size() && i < ranks_.size(); ++i)
    if (set.running(i)) hang_.on_cpu(static_cast<int>(i), process_cpu_seconds(set.pid(i)), now);
  if (!out_.resource) {
    out_.resource = resource_fault(limits_, setup_.cgroup.events());
    if (out_.resource) resource_seen_at_ = now;
  }
  next_sample_ = now + 0.25;
}

bool TrialWatch::resource_exceeded(double now) const {
  if (!out_.resource) return false;
  // The OOM killer's victim is a rank (or one of its processes): a moment to reap it, so that
  // the outcome names the rank; refused forks have no victim.
  if (out_.resource->limit == "limits.memory" && !out_.first_failure_rank)
    return now - resource_seen_at_ > 0.3;
  return true;
}

void TrialWatch::request_stacks(RankSet& set, StopReason why) {
  const double now = t();
  if (why == StopReason::Hang) out_.hang_declared_s = now;
  for (size_t i = 0; i < ranks_.size(); ++i)
    progress_at_stop_.push_back(hang_.last_progress(static_cast<int>(i)));
  std::vector<int> nodes;
  for (size_t i = 0; i < set.size(); ++i)
    if (set.running(i)) {
      ranks_[i].stack_requested_at = now;
      nodes.push_back(ranks_[i].rec.node);
    }
  // Through the launcher when the local processes are only clients (ssh, srun).
  if (!setup_.launcher->signal_remote(setup_.place.token, nodes, stack_sig_))
    for (size_t i = 0; i < set.size(); ++i)
      if (set.running(i)) kill(set.pid(i), stack_sig_);
}

void TrialWatch::kill_all(RankSet& set, StopReason why) {
  for (size_t i = 0; i < set.size(); ++i)
    if (set.running(i) && ranks_[i].rec.killed_by == StopReason::None)
      ranks_[i].rec.killed_by = why;
  set.kill_all();
}

void TrialWatch::watch(RankSet& set) {
  while (set.any_running()) {
    RankSet::Events ev = set.wait(0.05);
    for (size_t i : ev.exited) on_exit(i, set.status(i));
    sample(set);
    const double now = t();
    StopDecision d = policy.decide({now, hang_.hung(now), ev.stopped, resource_exceeded(now)});
    if (d.action == StopAction::RequestStacks) request_stacks(set, d.reason);
    if (d.action == StopAction::KillAll) kill_all(set, d.reason);
  }
}

// What a rank printed on stderr after the stack request: its dump.
std::string read_stack(const RankRecord& rec, double requested_at) {
  std::ifstream err(rec.stderr_path), times(rec.stderr_path + ".times");
  std::string line, tline, stack;
  while (std::getline(err, line) && std::getline(times, tline))
    if (std::stod(tline) / 1000.0 + 1e-3 >= requested_at && stack.size() < (64 << 10))
      stack += line + "\n";
  return stack;
}

void TrialWatch::finish(TrialOutcome& out) {
  out.duration_s = t();
  out.hang_threshold_s = hang_.threshold();
  for (size_t i = 0; i < ranks_.size(); ++i) {
    LiveRank& r = ranks_[i];
    r.out->close(out.duration_s * 1000.0);
    r.err->close(out.duration_s * 1000.0);
    r.rec.bytes = r.out->bytes_seen() + r.err->bytes_seen();
    r.rec.dropped = r.out->bytes_dropped() + r.err->bytes_dropped();
    // Progress as it was when the trial was stopped: the stack dumps that follow are not progress.
    r.rec.last_progress_s = i < progress_at_stop_.size()
                                ? progress_at_stop_[i]
                                : hang_.last_progress(static_cast<int>(i));
    if (r.stack_requested_at >= 0) r.rec.stack = read_stack(r.rec, r.stack_requested_at);
    out.ranks.push_back(r.rec);
  }
  out.log_cap_hit = budget_.exhausted;
  out.stop = policy.reason();
  if (out.resource && out.first_failure_rank) out.resource->rank = *out.first_failure_rank;
}

// Starts every rank in order; the first that cannot start ends the trial (infra).
std::string start_ranks(RankSet& set, TrialWatch& watch, const TrialSetup& setup) {
  for (size_t i = 0; i < setup.processes.size(); ++i) {
    watch.ranks_[i].rec.start_s = watch.t();
    StartResult r = set.start(setup.processes[i]);
    if (!r.ok()) {
      watch.policy.on_start_failure();
      return "rank " + std::to_string(setup.slots[i].rank) + ": " + r.error;
    }
    watch.ranks_[i].rec.pid = r.child.pid;
  }
  return "";
}

// Everything that still carries the trial's token (an escaped grandchild) goes, here and on
// the hosts of launchers that run ranks elsewhere.
void sweep_trial(const TrialSetup& setup, TrialOutcome& out) {
  setup.cgroup.kill_all();
  sweep_token(setup.place.token);
  std::vector<int> nodes;
  for (const auto& sl : setup.slots) nodes.push_back(sl.node);
  out.cleanup_notes += setup.launcher->cleanup(setup.place.token, nodes);
}

void diagnose_failure(const Spec& spec, TrialOutcome& out) {
  DiagnosisInput din = inputs_from_outcome(out.to_json());
  din.library_patterns = spec.match.ignore_frames;
  out.diagnosis = diagnose(din);
  if (out.resource) out.diagnosis = resource_limit_diagnosis(*out.resource, *out.diagnosis);
}

}  // namespace

std::string next_trial_dir(const std::string& root) {
  fs::path trials = fs::path(root) / "trials";
  fs::create_directories(trials);
  int next = 1;
  for (const auto& e : fs::directory_iterator(trials)) {
    try {
      next = std::max(next, std::stoi(e.path().filename().string()) + 1);
    } catch (const std::exception&) {
    }
  }
  while (true) {
    char name[16];
    std::snprintf(name, sizeof name, "%04d", next);
    fs::path dir = trials / name;
    if (mkdir(dir.c_str(), 0755) == 0) return dir.string();
    if (errno != EEXIST)
      throw fs::filesystem_error("cannot create trial folder", dir,
                                 std::error_code(errno, std::generic_category()));
    ++next;
  }
}

TrialOutcome run_trial(const TrialRequest& req) {
  const Spec& spec = *req.spec;
  TrialOutcome out;
  TrialSetup setup = prepare_trial(req, out);
  // What trials of a dead driver left on this output folder goes before this one starts.
  const std::string root = fs::path(req.dir).parent_path().parent_path().string();
  for (const auto& note : sweep_abandoned_trials(root, *setup.launcher))
    out.cleanup_notes += note + "\n";
  TrialWatch watch(spec, setup, out);
  TrialEnd end;
  {
    RankSet set([&](size_t i, Stream s, const char* data, size_t n) {
      watch.on_output(i, s, data, n);
    });
    end.start_error = start_ranks(set, watch, setup);
    watch.watch(set);
    sweep_trial(setup, out);
    set.drain(0.5);
  }
  setup.cgroup.remove();
  reap_orphans();
  watch.finish(out);
  out.interrupt_signal = interrupt_signal();
  end.timeout_text = format_duration(spec.limits.trial_timeout);
  Verdict v = judge_trial(out, end);
  if (v.status == TrialStatus::Fail) {
    diagnose_failure(spec, out);
    v = refine_verdict(v, *out.diagnosis);
  }
  out.status = v.status;
  out.reason = v.reason;
  std::ofstream(fs::path(req.dir) / "outcome.json") << out.to_json().dump(2) << "\n";
  remove_live_record(req.dir);
  return out;
}

}  // namespace ddpbisect
