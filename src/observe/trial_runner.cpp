#include "observe/trial_runner.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/duration.hpp"
#include "common/interrupt.hpp"
#include "common/json_util.hpp"
#include "common/output.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/cgroup.hpp"
#include "launch/ports.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "observe/abandoned.hpp"
#include "observe/stacks.hpp"
#include "observe/trial_watch.hpp"
#include "observe/verdict.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

namespace {

// OUT/warm-server.log for a reduction's trials (OUT/trials/NNNN), else beside the trial.
std::string warm_log_path(const std::string& trial_dir) {
  const fs::path parent = fs::path(trial_dir).parent_path();
  if (parent.filename() == "trials") return (parent.parent_path() / "warm-server.log").string();
  return (fs::path(trial_dir) / "warm-server.log").string();
}

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
  s.cancelled = req.cancelled;
  s.hang_floor_s = req.hang_floor_s;
  s.timeout_s = req.timeout_s;
  s.expected_hang = req.expected_hang;
  // DDPBISECT_FLIGHT_RECORDER=1 (a hang's debug rerun, or the spec's env): the Flight
  // Recorder's dumps go to <trial>/fr.
  auto asked = [&](const std::map<std::string, std::string>& env) {
    auto it = env.find("DDPBISECT_FLIGHT_RECORDER");
    return it != env.end() && it->second == "1";
  };
  if (asked(req.extra_env) || (spec.command && asked(spec.command->env))) {
    const std::string fr = (fs::path(s.place.dir) / "fr").string();
    fs::create_directories(fr);
    for (const auto& [k, v] : flight_recorder_env(fr)) s.place.extra_env.emplace(k, v);
  }
  write_file_atomically(s.place.config_path,
                        json_text(rank_config_json(spec, req.config), 2) + "\n");
  s.place.warm_socket = s.launcher->warm_socket(spec, warm_log_path(s.place.dir));
  s.slots = plan_ranks(spec, req.config, s.place);
  s.processes = s.launcher->wrap(s.slots);
  s.cgroup = TrialCgroup::create("ddpbisect-" + s.place.token,
                                 {spec.limits.memory_bytes, spec.limits.max_procs});
  LiveRecord live{s.place.token, s.cgroup.dirs(), s.launcher->name(), {}};
  for (auto& p : s.processes) p.join_cgroups = s.cgroup.procs_files();
  for (const auto& sl : s.slots) live.nodes.push_back(sl.node);
  write_live_record(req.dir, live);
  out.containment = s.cgroup.describe();
  if (!s.cgroup.unenforced().empty()) out.containment += "; not enforced: " + s.cgroup.unenforced();
  out.dir = req.dir;
  out.config = req.config;
  out.launcher = s.launcher->name();
  out.master_addr = s.place.master_addr;
  out.master_port = s.place.master_port;
  out.token = s.place.token;
  return s;
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
  for (const auto& log : out.agent_logs) {  // torchrun agents' own lines: banner, errors
    std::string node = fs::path(log).parent_path().filename().string();  // nodeN
    if (starts_with(node, "node")) node = "node " + node.substr(4);
    din.logs.push_back({std::nullopt, log, log + ".times", "the launcher on " + node});
  }
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
    RankSet set(
        [&](size_t i, Stream s, const char* data, size_t n) { watch.on_output(i, s, data, n); });
    end.start_error = watch.start(set);
    watch.watch(set);
    sweep_trial(setup, out);
    set.drain(0.5);
  }
  setup.cgroup.remove();
  reap_orphans();
  watch.finish(out);
  out.interrupt_signal = out.stop == StopReason::Cancel ? 0 : interrupt_signal();
  end.timeout_text = req.timeout_s ? format_duration(std::chrono::milliseconds(
                                         static_cast<long long>(*req.timeout_s * 1000)))
                                   : format_duration(spec.limits.trial_timeout);
  Verdict v = judge_trial(out, end);
  if (v.status == TrialStatus::Fail) {
    diagnose_failure(spec, out);
    v = refine_verdict(v, *out.diagnosis, a_rank_ran(out));
  }
  out.status = v.status;
  out.reason = v.reason;
  out.not_started = v.not_started;
  // Whole or not at all: a driver killed here leaves no half outcome.json.
  write_file_atomically((fs::path(req.dir) / "outcome.json").string(),
                        json_text(out.to_json(), 2) + "\n");
  remove_live_record(req.dir);
  return out;
}

}  // namespace ddpbisect
