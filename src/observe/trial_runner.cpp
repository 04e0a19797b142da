#include "observe/trial_runner.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/interrupt.hpp"
#include "common/output.hpp"
#include "common/signals.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/launcher.hpp"
#include "launch/ports.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "observe/hang_detector.hpp"
#include "observe/log_capture.hpp"

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

struct LiveRank {
  RankRecord rec;
  int out_fd = -1, err_fd = -1;
  bool alive = false;
  std::unique_ptr<StreamCapture> out, err;
  double stack_requested_at = -1;
};

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
  out.dir = req.dir;
  out.config = req.config;
  fs::create_directories(req.dir);

  auto launcher = make_launcher(spec.launcher);
  TrialPlace place;
  place.dir = fs::absolute(req.dir).string();
  place.config_path = (fs::path(place.dir) / "config.json").string();
  place.master_addr = launcher->master_addr();
  place.master_port = pick_free_port(place.master_addr);
  place.token = random_token();
  place.extra_env = req.extra_env;
  out.master_addr = place.master_addr;
  out.launcher = launcher->name();
  out.master_port = place.master_port;
  out.token = place.token;
  write_file_atomically(place.config_path, rank_config_json(spec, req.config).dump(2) + "\n");

  auto slots = plan_ranks(spec, req.config, place);
  auto processes = launcher->wrap(slots);
  const int n = static_cast<int>(slots.size());
  std::vector<LiveRank> ranks(static_cast<size_t>(n));
  LogBudget budget{spec.limits.log_cap_bytes};
  std::optional<double> fixed;
  if (spec.limits.hang_after) fixed = spec.limits.hang_after->count() / 1000.0;
  HangDetector hang(n, fixed);

  const double t0 = now_s();
  out.started_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto rel = [&] { return now_s() - t0; };
  std::string start_error;
  for (int i = 0; i < n; ++i) {
    auto& r = ranks[static_cast<size_t>(i)];
    r.rec.rank = slots[i].rank;
    r.rec.local_rank = slots[i].local_rank;
    r.rec.node = slots[i].node;
    r.rec.argv = processes[i].argv;
    fs::path node_dir = fs::path(req.dir) / ("node" + std::to_string(slots[i].node));
    fs::create_directories(node_dir);
    std::string base = (node_dir / ("rank" + std::to_string(slots[i].rank))).string();
    r.rec.stdout_path = base + ".stdout";
    r.rec.stderr_path = base + ".stderr";
    auto sink = [&, i](std::string_view line, double t_ms) {
      double t = t_ms / 1000.0;
      if (auto hb = parse_heartbeat(line)) {
        ranks[static_cast<size_t>(i)].rec.heartbeats++;
        ranks[static_cast<size_t>(i)].rec.last_step = hb->step;
        auto& times = ranks[static_cast<size_t>(i)].rec.step_times;
        if (times.size() < 4096) times.push_back(t);
        hang.on_heartbeat(i, hb->step, t);
      } else {
        hang.on_output(i, t);
        if (is_port_clash(line)) out.port_clash = true;
      }
    };
    r.out = std::make_unique<StreamCapture>(r.rec.stdout_path, r.rec.stdout_path + ".times",
                                            &budget, sink);
    r.err = std::make_unique<StreamCapture>(r.rec.stderr_path, r.rec.stderr_path + ".times",
                                            &budget, sink);
  }
  for (int i = 0; i < n && start_error.empty(); ++i) {
    auto& r = ranks[static_cast<size_t>(i)];
    Child child;
    r.rec.start_s = rel();
    std::string err = start_process(processes[i], child);
    if (!err.empty()) {
      start_error = "rank " + std::to_string(slots[i].rank) + ": " + err;
      break;
    }
    r.rec.pid = child.pid;
    r.out_fd = child.out_fd;
    r.err_fd = child.err_fd;
    r.alive = true;
  }
  hang.on_start(0);

  const int stack_sig = stack_signal(spec);
  const double timeout_s = spec.limits.trial_timeout.count() / 1000.0;
  const double grace_s = spec.limits.grace.count() / 1000.0;
  std::optional<double> early_deadline, kill_at;
  std::string stop_kind;  // what ended the trial early: early_stop, hang, timeout, interrupt
  double next_cpu_sample = 0;
  char buf[65536];

  std::vector<double> progress_at_stop;
  auto request_stacks = [&](const std::string& why, double t) {
    stop_kind = why;
    for (int i = 0; i < n; ++i) progress_at_stop.push_back(hang.last_progress(i));
    std::vector<int> nodes;
    for (auto& r : ranks)
      if (r.alive) {
        r.stack_requested_at = t;
        nodes.push_back(r.rec.node);
      }
    // Through the launcher when the local processes are only clients (ssh, srun).
    if (!launcher->signal_remote(place.token, nodes, stack_sig))
      for (auto& r : ranks)
        if (r.alive) kill(r.rec.pid, stack_sig);
    kill_at = t + 1.5;  // time to print the dump
  };
  auto kill_alive = [&](const std::string& why) {
    for (auto& r : ranks)
      if (r.alive) {
        if (r.rec.killed_by.empty()) r.rec.killed_by = why;
        kill_group(r.rec.pid);
      }
  };
  if (!start_error.empty()) kill_alive("start_failure");

  auto any_alive = [&] {
    for (auto& r : ranks)
      if (r.alive) return true;
    return false;
  };
  while (any_alive()) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> owners;  // rank index, is stderr
    for (int i = 0; i < n; ++i) {
      auto& r = ranks[static_cast<size_t>(i)];
      if (r.out_fd >= 0) fds.push_back({r.out_fd, POLLIN, 0}), owners.push_back({i, false});
      if (r.err_fd >= 0) fds.push_back({r.err_fd, POLLIN, 0}), owners.push_back({i, true});
    }
    poll(fds.data(), fds.size(), 50);
    double t = rel();
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto& r = ranks[static_cast<size_t>(owners[k].first)];
      ssize_t got = read(fds[k].fd, buf, sizeof buf);
      if (got > 0) {
        (owners[k].second ? r.err : r.out)->feed(buf, static_cast<size_t>(got), t * 1000.0);
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fds[k].fd);
        (owners[k].second ? r.err_fd : r.out_fd) = -1;
      }
    }
    for (int i = 0; i < n; ++i) {
      auto& r = ranks[static_cast<size_t>(i)];
      if (!r.alive) continue;
      int status = 0;
      if (waitpid(r.rec.pid, &status, WNOHANG) == r.rec.pid) {
        r.alive = false;
        r.rec.end_s = t;
        hang.on_exit(i);
        if (WIFEXITED(status)) r.rec.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.rec.signal = WTERMSIG(status);
        // A rank that died of our stack request (faulthandler aborts) was stopped by us.
        if (r.stack_requested_at >= 0 && r.rec.killed_by.empty()) r.rec.killed_by = stop_kind;
        if (r.rec.failed() && !out.first_failure_rank) {
          out.first_failure_rank = r.rec.rank;
          if (stop_kind.empty()) early_deadline = t + grace_s;
        }
      }
    }
    if (t >= next_cpu_sample) {
      for (int i = 0; i < n; ++i)
        if (ranks[static_cast<size_t>(i)].alive)
          hang.on_cpu(i, process_cpu_seconds(ranks[static_cast<size_t>(i)].rec.pid), t);
      next_cpu_sample = t + 0.25;
    }
    if (int sig = interrupt_signal(); sig && stop_kind != "interrupt") {
      stop_kind = "interrupt";
      kill_alive("interrupt");
    } else if (req.cancelled && stop_kind != "interrupt" && stop_kind != "cancel" &&
               req.cancelled()) {
      stop_kind = "cancel";
      kill_alive("cancel");
    }
    if (stop_kind.empty()) {
      // Once a rank has failed, the others' silence is its consequence: the early stop owns it.
      if (!early_deadline && hang.hung(t)) {
        out.hang_declared_s = t;
        request_stacks("hang", t);
      } else if (t > timeout_s) {
        request_stacks("timeout", t);
      } else if (early_deadline && t >= *early_deadline) {
        request_stacks("early_stop", t);
      }
    }
    if (kill_at && t >= *kill_at) {
      kill_alive(stop_kind);
      kill_at.reset();
    }
  }
  // Anything still holding the trial's token (an escaped grandchild) goes now; then drain pipes.
  sweep_token(place.token);
  {  // ... and on the hosts, for launchers that run ranks elsewhere.
    std::vector<int> nodes;
    for (const auto& sl : slots) nodes.push_back(sl.node);
    out.cleanup_notes = launcher->cleanup(place.token, nodes);
  }
  const double drain_until = rel() + 0.5;
  for (auto& r : ranks) {
    for (int* fd : {&r.out_fd, &r.err_fd}) {
      while (*fd >= 0 && rel() < drain_until) {
        pollfd p{*fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) continue;
        ssize_t got = read(*fd, buf, sizeof buf);
        if (got > 0) {
          (fd == &r.err_fd ? r.err : r.out)->feed(buf, static_cast<size_t>(got), rel() * 1000.0);
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          close(*fd);
          *fd = -1;
        }
      }
      if (*fd >= 0) close(*fd), *fd = -1;
    }
  }
  out.duration_s = rel();
  out.hang_threshold_s = hang.threshold();
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto& r = ranks[i];
    r.out->close(out.duration_s * 1000.0);
    r.err->close(out.duration_s * 1000.0);
    r.rec.bytes = r.out->bytes_seen() + r.err->bytes_seen();
    r.rec.dropped = r.out->bytes_dropped() + r.err->bytes_dropped();
    // Progress as it was when the trial was stopped: the stack dumps that follow are not progress.
    r.rec.last_progress_s =
        i < progress_at_stop.size() ? progress_at_stop[i] : hang.last_progress(static_cast<int>(i));
    if (r.stack_requested_at >= 0) {
      // The dump: the stderr lines the rank printed after the request.
      std::ifstream err(r.rec.stderr_path), times(r.rec.stderr_path + ".times");
      std::string line, tline;
      while (std::getline(err, line) && std::getline(times, tline)) {
        if (std::stod(tline) / 1000.0 + 1e-3 >= r.stack_requested_at &&
            r.rec.stack.size() < (64 << 10))
          r.rec.stack += line + "\n";
      }
    }
    out.ranks.push_back(r.rec);
  }
  out.log_cap_hit = budget.exhausted;

  bool all_ok = start_error.empty();
  for (const auto& r : out.ranks) all_ok = all_ok && r.exit_code == 0 && r.signal == 0;
  if (stop_kind == "interrupt") {
    out.status = TrialStatus::Interrupted;
    out.interrupt_signal = interrupt_signal();
    out.reason = "interrupted by " + std::string(signal_name(out.interrupt_signal));
  } else if (stop_kind == "cancel") {
    out.status = TrialStatus::Interrupted;  // interrupt_signal 0: stopped, never judged
    out.reason = "cancelled: the reducer no longer needed its answer";
  } else if (!start_error.empty()) {
    out.status = TrialStatus::Infra;
    out.reason = start_error;
  } else if (out.port_clash) {
    out.status = TrialStatus::Infra;
    out.reason =
        "MASTER_PORT " + std::to_string(out.master_port) + " was taken (address already in use)";
  } else if (stop_kind == "hang") {
    out.status = TrialStatus::Fail;
    out.reason = "hang: no rank made progress for " +
                 std::to_string(static_cast<int>(out.hang_threshold_s)) + " s";
  } else if (stop_kind == "timeout") {
    out.status = TrialStatus::Fail;
    out.reason = "trial timeout after " + format_duration(spec.limits.trial_timeout);
  } else if (all_ok) {
    out.status = TrialStatus::Pass;
    out.reason = "every rank exited 0";
  } else {
    out.status = TrialStatus::Fail;
    const RankRecord* first = nullptr;
    for (const auto& r : out.ranks)
      if (out.first_failure_rank && r.rank == *out.first_failure_rank) first = &r;
    if (first && first->signal)
      out.reason =
          "rank " + std::to_string(first->rank) + " was killed by " + signal_name(first->signal);
    else if (first)
      out.reason = "rank " + std::to_string(first->rank) + " exited with code " +
                   std::to_string(first->exit_code);
    else
      out.reason = "a rank failed";
  }
  if (out.status == TrialStatus::Fail) {
    DiagnosisInput din = inputs_from_outcome(out.to_json());
    din.library_patterns = spec.match.ignore_frames;
    out.diagnosis = diagnose(din);
    const Diagnosis& d = *out.diagnosis;
    // A failure whose root cause is the infrastructure (port in use, master unreachable) is not
    // the bug: it is retried, never counted.
    if (d.failed && d.root.category == "infra") {
      out.status = TrialStatus::Infra;
      out.reason = "infrastructure: " + d.root.message.substr(0, 200);
    } else if (d.failed) {
      out.reason = rank_words(d.root.origin.rank) + ": " + d.signature.to_string();
    }
  }
  // Whole or not at all: a driver killed here leaves no half outcome.json.
  write_file_atomically((fs::path(req.dir) / "outcome.json").string(),
                        out.to_json().dump(2) + "\n");
  return out;
}

}  // namespace ddpbisect
