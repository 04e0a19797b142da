#include "probe/doctor.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "common/interrupt.hpp"
#include "common/json_util.hpp"
#include "common/text.hpp"
#include "launch/helpers.hpp"
#include "launch/launcher.hpp"
#include "launch/ports.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "observe/trial_runner.hpp"
#include "probe/clock.hpp"
#include "probe/comm_probe.hpp"
#include "probe/environment.hpp"
#include "probe/node_probe.hpp"
#include "spec/trial_config.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

bool DoctorResult::failed() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.status == FindingStatus::Fail; });
}

namespace {

bool interrupted() {
  return interrupt_signal() != 0;
}

// The data paths the spec names: the data set file, the command's folder, its `workload.state`
// paths (which validation checks only where ranks run here), and the command's arguments and
// variables that are paths on the driver's machine.
std::vector<std::string> spec_paths(const Spec& spec) {
  std::set<std::string> out;
  if (spec.builtin && spec.builtin->dataset.kind != "synthetic")
    out.insert(spec.builtin->dataset.path);
  if (spec.command) {
    const auto& c = *spec.command;
    out.insert(c.cwd);
    out.insert(c.state.begin(), c.state.end());
    auto consider = [&](const std::string& word) {
      if (word.empty() || word.find('{') != std::string::npos || word[0] == '-') return;
      fs::path p = fs::path(word).is_absolute() ? fs::path(word) : fs::path(c.cwd) / word;
      std::error_code ec;
      bool pathlike = word.find('/') != std::string::npos || fs::exists(p, ec);
      if (pathlike && (fs::exists(p, ec) || fs::path(word).is_absolute()))
        out.insert(fs::weakly_canonical(p, ec).string());
    };
    for (size_t i = 1; i < c.argv.size(); ++i) consider(c.argv[i]);
    for (const auto& [k, v] : c.env)
      for (const auto& part : split(v, ':'))
        if (!part.empty() && part[0] == '/') consider(part);
  }
  return {out.begin(), out.end()};
}

// Starts the master probe on node 0 in `set` (whose sink fills `out`) and waits for its report
// line, its exit or an interrupt.
json start_master(RankSet& set, const std::string& out, const ProcessSpec& p, std::string& error) {
  StartResult started = set.start(p);
  if (!started.ok()) {
    error = started.error;
    return nullptr;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && set.running(0)) {
    if (set.wait(0.2).stopped) break;
    json j = parse_probe_line(out);
    if (j.is_object()) return j;
  }
  error = "no answer from the master probe: " + out.substr(0, 300);
  return nullptr;
}

// 0. Where this ddpbisect found its helpers and the agent (the build tree, an install, a venv,
// an override variable), and whether the spec needs one that is missing.
Finding helpers_finding(const Spec& spec) {
  const bool command = spec.command.has_value();
  // Needed: the spec cannot run without it. Useful: trials run, but share the working folder
  // (isolate) or start cold (warm).
  const std::map<std::string, std::pair<bool, bool>> needs = {
      {"worker", {spec.builtin.has_value(), false}},
      {"isolate", {false, command}},
      {"warm", {false, command}},
      {"agent", {command && spec.command->agent, false}}};
  std::vector<std::string> where, missing_needed, missing_useful;
  for (const Helper& h : helpers()) {
    where.push_back(std::string(h.name) + " " +
                    (h.found          ? h.path
                     : h.path.empty() ? std::string("not found")
                                      : h.path + " (missing)"));
    if (h.found) continue;
    const auto [needed, useful] = needs.at(h.name);
    const std::string named = std::string(h.name) + " (" + h.variable + ")";
    if (needed)
      missing_needed.push_back(named);
    else if (useful)
      missing_useful.push_back(named);
  }
  const std::string message = join(where, "; ");
  if (!missing_needed.empty())
    return {FindingStatus::Fail,
            "helpers",
            -1,
            false,
            message + "; this spec needs " + join(missing_needed, ", "),
            "reinstall ddpbisect (cmake --install, pip install), or point the variable at it"};
  if (!missing_useful.empty())
    return {FindingStatus::Warn,
            "helpers",
            -1,
            false,
            message + "; without " + join(missing_useful, ", ") +
                " trials share the working folder or start cold",
            "reinstall ddpbisect, or point the variable at it"};
  return {FindingStatus::Pass, "helpers", -1, false, message, ""};
}

// 1. The workload on one process: the first stage's cheap variant.
Finding sanity_finding(const Spec& spec, const std::string& out_dir) {
  TrialConfig c = cheap_variant(initial_config(spec, spec.stages.front()));
  c.nodes = 1;
  c.procs_per_node = 1;
  TrialOutcome o = run_trial({&spec, c, next_trial_dir(out_dir), {}});
  if (o.status == TrialStatus::Pass)
    return {FindingStatus::Pass,
            "sanity",
            -1,
            false,
            "the workload runs on a single process (" + o.dir + ")",
            ""};
  std::string what = o.reason;
  if (const Signature* failure = o.failure()) what = failure->to_string();
  return {FindingStatus::Fail,
          "sanity",
          -1,
          false,
          "the workload fails on a single process: " + what + " (" + o.dir + ")",
          o.status == TrialStatus::Infra ? "check the command, its cwd and its interpreter"
                                         : "fix this first, or reduce it: ddpbisect " + spec.file};
}

// Where and how every probe runs: the launcher, the master's address and port, the variables.
struct ProbeSetup {
  std::unique_ptr<Launcher> launcher;
  std::string master_addr, token, python, cwd;
  int port = 0;
  bool fixed_port = false;  // the user's MASTER_PORT
  std::map<std::string, std::string> env;

  // Node `node`'s process running `argv` (the node probe in `role`, or another program).
  ProcessSpec on_node(int node, std::vector<std::string> argv, const std::string& role) const {
    RankSlot s;
    s.rank = node;
    s.node = node;
    s.process = {std::move(argv), env, cwd};
    if (!role.empty()) s.process.env["DDPBISECT_DOCTOR_ROLE"] = role;
    return launcher->wrap({s}).front();
  }
  ProcessSpec node_probe(int node, const std::string& role) const {
    return on_node(node, {python, "-c", node_probe_script()}, role);
  }
};

ProbeSetup probe_setup(const Spec& spec, const std::string& out_dir) {
  ProbeSetup p;
  p.launcher = make_launcher(spec.launcher);
  p.master_addr = p.launcher->master_addr();
  auto driver_env = current_environment();
  if (auto it = driver_env.find("MASTER_PORT"); it != driver_env.end() && !it->second.empty()) {
    try {
      p.port = std::stoi(it->second);
      p.fixed_port = true;
    } catch (const std::exception&) {
    }
  }
  if (!p.fixed_port) p.port = pick_free_port(p.master_addr);
  p.token = random_token();
  for (const auto& [k, v] : driver_env)
    if (!starts_with(k, "DDPBISECT_") || k == "DDPBISECT_WORKER") p.env[k] = v;
  if (spec.command)
    for (const auto& [k, v] : spec.command->env) p.env[k] = v;
  p.env["DDPBISECT_TRIAL_TOKEN"] = p.token;
  p.env["DDPBISECT_DOCTOR_MASTER"] = p.master_addr + ":" + std::to_string(p.port);
  p.env["DDPBISECT_DOCTOR_PATHS"] = json_text(json(spec_paths(spec)));
  p.python = workload_python(spec);
  p.cwd = spec.command ? spec.command->cwd : fs::absolute(out_dir).string();
  return p;
}

// 2. The master probe on node 0, then every node's probe in parallel; the clocks.
NodeReports run_node_probes(const ProbeSetup& p, const Stage& stage) {
  NodeReports in;
  in.master_addr = p.master_addr;
  in.master_port = p.port;
  in.fixed_port = p.fixed_port;
  in.stage = stage;
  std::string master_out, master_error;
  RankSet master_set([&](size_t, Stream stream, const char* data, size_t n) {
    if (stream == Stream::Out && master_out.size() < (1 << 20)) master_out.append(data, n);
  });
  in.master = start_master(master_set, master_out, p.node_probe(0, "master"), master_error);
  const int nodes = static_cast<int>(stage.nodes);
  in.reports.assign(static_cast<size_t>(nodes), nullptr);
  in.driver_offsets.assign(static_cast<size_t>(nodes), 0.0);
  std::vector<std::thread> threads;
  for (int i = 0; i < nodes; ++i)
    threads.emplace_back([&, i] {
      std::string out;
      int rc = run_capture(p.node_probe(i, "node"), 120, out, 1 << 20, interrupted);
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      json r = parse_probe_line(out);
      if (!r.is_object())
        r = {{"probe_error",
              "exit " + std::to_string(rc) + ": " + std::string(trim(out.substr(0, 600)))}};
      else if (r["time"].is_number())
        in.driver_offsets[static_cast<size_t>(i)] = r["time"].get<double>() - now;
      r["node"] = i;
      in.reports[static_cast<size_t>(i)] = r;
    });
  for (auto& t : threads) t.join();
  // Clocks against the driver: through the master probe when this machine reaches it (precise),
  // else from the time each probe printed (late by its exit time).
  if (auto d = in.master.is_object() && in.master.value("listening", false)
                   ? clock_offset_to(p.master_addr, p.port)
                   : std::nullopt)
    for (int i = 0; i < nodes; ++i) {
      const json& r = in.reports[static_cast<size_t>(i)];
      if (r.contains("master") && r["master"].is_object() && r["master"].value("reachable", false))
        in.driver_offsets[static_cast<size_t>(i)] = *d - r["master"].value("offset_s", 0.0);
    }
  master_set.kill_all();
  while (master_set.any_running()) master_set.wait(0.1);
  sweep_token(p.token);
  std::vector<int> all(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) all[static_cast<size_t>(i)] = i;
  p.launcher->cleanup(p.token, all);
  if (!in.master.is_object()) in.master = {{"start_error", master_error}};
  return in;
}

}  // namespace

DoctorResult run_doctor(const Spec& spec, const DoctorOptions& opt) {
  DoctorResult res;
  const Stage* stage = opt.stage.empty() ? nullptr : spec.find_stage(opt.stage);
  if (!stage)
    for (const auto& s : spec.stages)
      if (!stage || s.world_size() > stage->world_size()) stage = &s;
  fs::create_directories(opt.out_dir);
  res.findings.push_back(helpers_finding(spec));
  if (opt.sanity && !interrupted()) res.findings.push_back(sanity_finding(spec, opt.out_dir));
  if (interrupted()) return res;

  const ProbeSetup setup = probe_setup(spec, opt.out_dir);
  const NodeReports reports = run_node_probes(setup, *stage);
  for (auto& f : node_findings(reports)) res.findings.push_back(f);
  for (const auto& r : reports.reports) res.nodes.push_back(r);

  if (opt.comm && !interrupted()) {
    gloo_probe(spec, *stage, opt.out_dir, res);
    nccl_probe(
        reports.reports, [&](int node) { return setup.on_node(node, {nccl_probe_path()}, ""); },
        res);
  }
  sort_findings(res.findings);
  return res;
}

}  // namespace ddpbisect
