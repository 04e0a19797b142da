#include "probe/doctor.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "common/interrupt.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "launch/launcher.hpp"
#include "launch/ports.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "observe/trial_runner.hpp"
#include "probe/environment.hpp"
#include "probe/node_probe.hpp"
#include "spec/placeholders.hpp"
#include "spec/trial_config.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

bool DoctorResult::failed() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.status == FindingStatus::Fail; });
}

namespace {

// j[key] when j is an object holding it, else an empty object (never a temporary to iterate).
const json& member(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it == j.end() ? empty : *it;
}

std::string text_of(const json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array() && v.empty()) return "none";
  return v.dump();
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1 << 30));
  return buf;
}

std::string node_list(const std::vector<int>& nodes) {
  std::vector<std::string> parts;
  for (int n : nodes) parts.push_back(std::to_string(n));
  return (nodes.size() == 1 ? "node " : "nodes ") + join(parts, ", ");
}

// One value per node; the value most nodes share (node 0's on a tie) is the reference, and
// every node that differs from it gets a finding.
void compare(std::vector<Finding>& out, const std::vector<json>& reports, const std::string& key,
             const std::string& what, FindingStatus status, const std::string& fix) {
  std::map<std::string, std::vector<int>> by_value;
  for (size_t i = 0; i < reports.size(); ++i)
    if (reports[i].is_object())
      by_value[text_of(reports[i].value(key, json(nullptr)))].push_back(int(i));
  if (by_value.size() <= 1) return;
  auto ref = by_value.begin();
  for (auto it = by_value.begin(); it != by_value.end(); ++it)
    if (it->second.size() > ref->second.size() ||
        (it->second.size() == ref->second.size() && it->second.front() < ref->second.front()))
      ref = it;
  for (const auto& [value, nodes] : by_value) {
    if (value == ref->first) continue;
    for (int n : nodes)
      out.push_back({status, "versions." + key, n, true,
                     "node " + std::to_string(n) + " has " + what + " " + value + "; " +
                         node_list(ref->second) + " " +
                         (ref->second.size() == 1 ? "has " : "have ") + ref->first,
                     fix});
  }
}

}  // namespace

std::vector<Finding> node_findings(const std::vector<json>& reports,
                                   const std::vector<double>& driver_offsets, const json& master,
                                   const std::string& master_addr, int master_port, bool fixed_port,
                                   const Stage& stage) {
  std::vector<Finding> out;
  const int n = static_cast<int>(reports.size());
  std::vector<json> ok;  // the reports that ran
  for (int i = 0; i < n; ++i) {
    const json& r = reports[static_cast<size_t>(i)];
    if (!r.is_object() || r.contains("probe_error")) {
      out.push_back({FindingStatus::Fail, "node.reach", i, false,
                     "the probe did not run on node " + std::to_string(i) + ": " +
                         (r.is_object() ? r.value("probe_error", "") : std::string("no output")),
                     "check that the launcher reaches this host and that Python runs there"});
      ok.push_back(nullptr);
      continue;
    }
    ok.push_back(r);
    if (r.contains("torch_error"))
      out.push_back({FindingStatus::Fail, "versions.torch", i, false,
                     "torch cannot be imported on node " + std::to_string(i) + ": " +
                         r["torch_error"].get<std::string>(),
                     "install PyTorch for " +
                         r.value("python_executable", "the workload's Python") + " on this host"});
  }

  // Versions: one finding per node that differs from the others.
  size_t before = out.size();
  const std::string same_fix =
      "install the same version on every node (one container image, or "
      "pinned packages)";
  for (const char* k : {"python", "torch", "cuda", "cudnn", "nccl"})
    compare(out, ok, k, k, FindingStatus::Fail, same_fix);
  compare(out, ok, "gpus", "GPUs", FindingStatus::Fail,
          "give every node the same GPU model and count");
  compare(out, ok, "gpu_driver", "GPU driver", FindingStatus::Warn,
          "install the same GPU driver on every node");
  if (out.size() == before && !ok.empty() && ok[0].is_object()) {
    const json& r = ok[0];
    out.push_back({FindingStatus::Pass, "versions", -1, false,
                   "the same on all " + std::to_string(n) + " node(s): python " +
                       text_of(r["python"]) + ", torch " +
                       text_of(r.value("torch", json(nullptr))) + ", CUDA " +
                       text_of(r.value("cuda", json(nullptr))) + ", cuDNN " +
                       text_of(r.value("cudnn", json(nullptr))) + ", NCCL " +
                       text_of(r.value("nccl", json(nullptr))) + ", GPUs " +
                       text_of(r.value("gpus", json(nullptr))),
                   ""});
  }
  for (int i = 0; i < n; ++i) {
    const json& r = ok[static_cast<size_t>(i)];
    if (!r.is_object() || stage.device != "cuda") continue;
    auto gpus = r.value("gpus", json::array()).size();
    if (static_cast<int64_t>(gpus) < stage.procs_per_node)
      out.push_back({FindingStatus::Fail, "gpus", i, false,
                     "node " + std::to_string(i) + " has " + std::to_string(gpus) + " GPU(s) for " +
                         std::to_string(stage.procs_per_node) + " ranks",
                     "lower procs_per_node or check CUDA_VISIBLE_DEVICES on this host"});
  }

  // Clocks: against the driver, and against node 0 (the master) measured over the network.
  bool clock_bad = false;
  for (int i = 0; i < n; ++i) {
    const json& r = ok[static_cast<size_t>(i)];
    if (!r.is_object()) continue;
    double d = driver_offsets.size() > size_t(i) ? driver_offsets[size_t(i)] : 0;
    const json& m = member(r, "master");
    double to_master = m.value("reachable", false) ? m.value("offset_s", 0.0) : 0.0;
    double worst = std::max(std::fabs(d), std::fabs(to_master));
    if (worst > 0.25) {
      clock_bad = true;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "node %d's clock is %+.2f s from the driver's and %+.2f s from node 0's", i, d,
                    -to_master);
      out.push_back({worst > 1.0 ? FindingStatus::Fail : FindingStatus::Warn, "clock", i, true, buf,
                     "synchronize the clocks (chrony or systemd-timesyncd against one NTP "
                     "source); timestamps and timeouts across nodes depend on it"});
    }
  }
  if (!clock_bad)
    out.push_back({FindingStatus::Pass, "clock", -1, false,
                   "clocks agree within 0.25 s on every node", ""});

  // Memory and disk.
  for (int i = 0; i < n; ++i) {
    const json& r = ok[static_cast<size_t>(i)];
    if (!r.is_object()) continue;
    if (r["mem_available_bytes"].is_number() && r["mem_available_bytes"].get<double>() < (1 << 30))
      out.push_back({FindingStatus::Warn, "memory", i, false,
                     "node " + std::to_string(i) + " has " +
                         gib(r["mem_available_bytes"].get<double>()) + " of memory available",
                     "free memory or use fewer ranks per node"});
    if (r["disk_free_bytes"].is_number() && r["disk_free_bytes"].get<double>() < (1 << 30))
      out.push_back({FindingStatus::Warn, "disk", i, false,
                     "node " + std::to_string(i) + " has " +
                         gib(r["disk_free_bytes"].get<double>()) + " free in " +
                         r.value("cwd", "its working folder"),
                     "free disk space: checkpoints and logs need room"});
  }

  // Data paths.
  std::set<std::string> paths;
  for (const auto& r : ok)
    if (r.is_object())
      for (const auto& [p, v] : member(r, "paths").items()) paths.insert(p);
  bool paths_bad = false;
  for (const auto& p : paths) {
    std::vector<int> missing, unreadable, present;
    for (int i = 0; i < n; ++i) {
      const json& r = ok[static_cast<size_t>(i)];
      if (!r.is_object()) continue;
      json st = member(r, "paths").value(p, json::object());
      if (!st.value("exists", false))
        missing.push_back(i);
      else if (!st.value("readable", false))
        unreadable.push_back(i);
      else
        present.push_back(i);
    }
    for (int i : missing) {
      paths_bad = true;
      out.push_back({FindingStatus::Fail, "paths", i, !present.empty(),
                     p + " is missing on node " + std::to_string(i) +
                         (present.empty() ? "" : " (present on " + node_list(present) + ")"),
                     "copy or mount it there (a shared filesystem, or the same path on every "
                     "node)"});
    }
    for (int i : unreadable) {
      paths_bad = true;
      out.push_back({FindingStatus::Fail, "paths", i, !present.empty(),
                     p + " is not readable on node " + std::to_string(i),
                     "fix its permissions for the user the ranks run as"});
    }
  }
  if (!paths_bad)
    out.push_back(
        {FindingStatus::Pass, "paths", -1, false,
         std::to_string(paths.size()) + " data path(s) present and readable on every node", ""});

  // Variables that differ between nodes.
  std::set<std::string> names;
  for (const auto& r : ok)
    if (r.is_object())
      for (const auto& [k, v] : member(r, "variables").items()) names.insert(k);
  bool vars_differ = false;
  for (const auto& name : names) {
    std::map<std::string, std::vector<int>> by;
    for (int i = 0; i < n; ++i) {
      const json& r = ok[static_cast<size_t>(i)];
      if (!r.is_object()) continue;
      json v = member(r, "variables").value(name, json(nullptr));
      by[v.is_string() ? redact_value(name, v.get<std::string>()) : "(unset)"].push_back(i);
    }
    if (by.size() <= 1) continue;
    vars_differ = true;
    std::string msg = name + " differs:";
    for (const auto& [v, nodes] : by) msg += " " + node_list(nodes) + " = " + v + ";";
    out.push_back({FindingStatus::Warn, "variables", -1, true, msg,
                   "set NCCL_*/TORCH_*/GLOO_* the same way on every node"});
  }
  if (!vars_differ)
    out.push_back({FindingStatus::Pass, "variables", -1, false,
                   std::to_string(names.size()) +
                       " NCCL_*/TORCH_*/GLOO_* variable(s), the same on every node",
                   ""});

  // The master address and port.
  std::string where = master_addr + ":" + std::to_string(master_port);
  if (master.is_object() && master.contains("bind_error")) {
    int err = master.value("errno", 0);
    std::string host = master.value("hostname", "node 0");
    if (err == 98)
      out.push_back({FindingStatus::Fail, "master.port", 0, false,
                     "MASTER_PORT " + std::to_string(master_port) + " is taken on node 0 (" + host +
                         "): another process listens on " + where,
                     "choose another MASTER_PORT, or stop that process (ss -ltnp 'sport = :" +
                         std::to_string(master_port) + "')"});
    else if (err == 99)
      out.push_back({FindingStatus::Fail, "master.addr", 0, false,
                     "MASTER_ADDR " + master_addr + " is not an address of node 0 (" + host +
                         "), so rank 0 cannot listen there and no node can reach it",
                     "set launcher.master_addr to an address of the first node that the others "
                     "can route to"});
    else
      out.push_back({FindingStatus::Fail, "master.addr", 0, false,
                     "rank 0 cannot listen on " + where + ": " + master.value("bind_error", ""),
                     "check launcher.master_addr and MASTER_PORT"});
  } else if (!master.is_object() || master.contains("start_error")) {
    out.push_back({FindingStatus::Fail, "master.addr", 0, false,
                   "the master probe did not start on node 0" +
                       (master.is_object() ? ": " + master.value("start_error", "") : ""),
                   "check that the launcher reaches the first host"});
  } else {
    bool unreachable = false;
    for (int i = 0; i < n; ++i) {
      const json& r = ok[static_cast<size_t>(i)];
      if (!r.is_object()) continue;
      const json& m = member(r, "master");
      if (m.value("reachable", false)) continue;
      unreachable = true;
      out.push_back({FindingStatus::Fail, "master.reach", i, true,
                     "node " + std::to_string(i) + " cannot reach MASTER_ADDR " + where + ": " +
                         m.value("error", std::string("?")),
                     "open the port between the nodes (firewall, security group) or pick an "
                     "address on a network every node shares"});
    }
    if (!unreachable)
      out.push_back({FindingStatus::Pass, "master", -1, false,
                     where + " reachable from every node" +
                         (fixed_port ? "" : " (ddpbisect picks a free port for every trial)"),
                     ""});
  }
  return out;
}

namespace {

// The data paths the spec names: the data set file, the command's folder, and the command's
// arguments and variables that are paths on the driver's machine.
std::vector<std::string> spec_paths(const Spec& spec) {
  std::set<std::string> out;
  if (spec.builtin && spec.builtin->dataset.kind != "synthetic")
    out.insert(spec.builtin->dataset.path);
  if (spec.command) {
    const auto& c = *spec.command;
    out.insert(c.cwd);
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

// Doctor's helpers end at once on Ctrl-C, like trials.
bool interrupted() {
  return interrupt_signal() != 0;
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

// The JSON of a `DDPBISECT_PROBE {...}` bandwidth line (worker or NCCL probe), else null.
json probe_row(const std::string& line) {
  if (!starts_with(line, "DDPBISECT_PROBE ")) return nullptr;
  json j = json::parse(line.substr(16), nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

void gloo_probe(const Spec& spec, const Stage& stage, const std::string& out_dir,
                DoctorResult& res) {
  std::error_code ec;
  if (!fs::exists(worker_path(), ec)) {
    res.findings.push_back({FindingStatus::Warn, "comm.gloo", -1, false,
                            "skipped: ddpbisect-worker (the libtorch probe) is not installed "
                            "beside ddpbisect",
                            "build it (cmake --preset default) or set DDPBISECT_WORKER"});
    return;
  }
  Spec probe = spec;
  BuiltinWorkload b;
  b.model = {"linear"};
  b.dataset.samples = std::max<int64_t>(stage.world_size(), 1);
  probe.builtin = b;
  probe.command.reset();
  probe.stages = {stage};
  probe.stages[0].device = "cpu";
  probe.limits.trial_timeout = Millis(240'000);
  probe.limits.hang_after = Millis(60'000);
  probe.name = spec.name + "-gloo-probe";
  TrialRequest req{&probe,
                   initial_config(probe, probe.stages[0]),
                   next_trial_dir(out_dir),
                   {{"DDPBISECT_PROBE", "allreduce"}}};
  if (const char* max = std::getenv("DDPBISECT_PROBE_MAX_BYTES"))
    req.extra_env["DDPBISECT_PROBE_MAX_BYTES"] = max;
  TrialOutcome o = run_trial(req);
  json rows = json::array();
  std::string table;
  if (!o.ranks.empty()) {
    std::ifstream in(o.ranks[0].stdout_path);
    std::string line;
    while (std::getline(in, line)) {
      if (json j = probe_row(line); !j.is_null()) {
        rows.push_back(j);
      } else if (!line.empty() && (line[0] == '#' || line[0] == ' ')) {
        table += line + "\n";
      }
    }
  }
  res.comm["gloo"] = {
      {"world", stage.world_size()}, {"rows", rows}, {"table", table}, {"trial", o.dir}};
  if (o.status != TrialStatus::Pass || rows.empty()) {
    std::string why = o.reason;
    if (const Signature* failure = o.failure()) why += ": " + failure->to_string();
    res.findings.push_back({FindingStatus::Fail, "comm.gloo", -1, false,
                            "the Gloo all-reduce probe over " + std::to_string(stage.world_size()) +
                                " ranks failed (" + why + "; " + o.dir + ")",
                            "check the network between the nodes and GLOO_SOCKET_IFNAME"});
    return;
  }
  const json& last = rows.back();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "all-reduce of %.0f KiB over %lld ranks: %.3f GB/s algorithm, %.3f GB/s bus "
                "bandwidth",
                last.value("bytes", 0.0) / 1024, static_cast<long long>(stage.world_size()),
                last.value("algbw_GBps", 0.0), last.value("busbw_GBps", 0.0));
  res.findings.push_back({FindingStatus::Pass, "comm.gloo", -1, false, buf, ""});
}

// The master probe's clock minus ours, NTP-style over one connection (the best of 5 round
// trips), or nullopt when this machine cannot reach it.
std::optional<double> clock_offset_to(const std::string& addr, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return std::nullopt;
  }
  auto wall = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  std::optional<double> best_rtt, best;
  std::string pending;
  for (int i = 0; i < 5; ++i) {
    double t1 = wall();
    if (write(fd, "t\n", 2) != 2) break;
    char buf[64];
    size_t nl;
    while ((nl = pending.find('\n')) == std::string::npos) {
      ssize_t got = read(fd, buf, sizeof buf);
      if (got <= 0) break;
      pending.append(buf, static_cast<size_t>(got));
    }
    if (nl == std::string::npos) break;
    double t3 = wall();
    double t2 = std::atof(pending.substr(0, nl).c_str());
    pending.erase(0, nl + 1);
    if (!best_rtt || t3 - t1 < *best_rtt) {
      best_rtt = t3 - t1;
      best = t2 - (t1 + t3) / 2;
    }
  }
  close(fd);
  return best;
}

std::string nccl_probe_path() {
  return companion_path("DDPBISECT_NCCL_PROBE", "ddpbisect-nccl-probe");
}

// The native NCCL probe on every node with a GPU, through the launcher.
void nccl_probe(const std::vector<json>& reports, const std::function<ProcessSpec(int)>& on_node,
                DoctorResult& res) {
  std::vector<int> with_gpus;
  for (size_t i = 0; i < reports.size(); ++i)
    if (reports[i].is_object() && reports[i].value("cuda_available", false))
      with_gpus.push_back(static_cast<int>(i));
  std::error_code ec;
  bool built = fs::exists(nccl_probe_path(), ec);
  if (with_gpus.empty()) {
    res.findings.push_back(
        {FindingStatus::Pass, "comm.nccl", -1, false,
         std::string("skipped: no node has a usable GPU") +
             (built ? " (the native probe is built: " + nccl_probe_path() + ")" : ""),
         ""});
    return;
  }
  if (!built) {
    res.findings.push_back({FindingStatus::Warn, "comm.nccl", -1, false,
                            "skipped: ddpbisect-nccl-probe was not built (no CUDA toolkit with "
                            "NCCL at build time)",
                            "rebuild ddpbisect where /usr/local/cuda has nccl.h and libnccl"});
    return;
  }
  json per_node = json::object();
  for (int node : with_gpus) {
    std::string out;
    int rc = run_capture(on_node(node), 300, out, 1 << 20, interrupted);
    json rows = json::array();
    for (const auto& line : split(out, '\n'))
      if (json j = probe_row(line); !j.is_null()) rows.push_back(j);
    per_node[std::to_string(node)] = {{"exit", rc}, {"rows", rows}};
    if (rc != 0 || rows.empty()) {
      res.findings.push_back({FindingStatus::Fail, "comm.nccl", node, false,
                              "the NCCL all-reduce probe failed on node " + std::to_string(node) +
                                  " (exit " + std::to_string(rc) +
                                  "): " + std::string(trim(out.substr(0, 400))),
                              "check the GPU driver, CUDA_VISIBLE_DEVICES and NCCL_* settings"});
      continue;
    }
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "node %d: NCCL all-reduce of %.0f MiB over %d GPU(s): %.2f GB/s algorithm, "
                  "%.2f GB/s bus bandwidth",
                  node, rows.back().value("bytes", 0.0) / (1 << 20), rows.back().value("world", 0),
                  rows.back().value("algbw_GBps", 0.0), rows.back().value("busbw_GBps", 0.0));
    res.findings.push_back({FindingStatus::Pass, "comm.nccl", node, false, buf, ""});
  }
  res.comm["nccl"] = per_node;
}

}  // namespace

DoctorResult run_doctor(const Spec& spec, const DoctorOptions& opt) {
  DoctorResult res;
  const Stage* stage = opt.stage.empty() ? nullptr : spec.find_stage(opt.stage);
  if (!stage)
    for (const auto& s : spec.stages)
      if (!stage || s.world_size() > stage->world_size()) stage = &s;
  fs::create_directories(opt.out_dir);

  // 1. One process, the cheap variant of the first stage.
  if (opt.sanity) {
    TrialConfig c = cheap_variant(initial_config(spec, spec.stages.front()));
    c.nodes = 1;
    c.procs_per_node = 1;
    TrialOutcome o = run_trial({&spec, c, next_trial_dir(opt.out_dir), {}});
    if (o.status == TrialStatus::Pass) {
      res.findings.push_back({FindingStatus::Pass, "sanity", -1, false,
                              "the workload runs on a single process (" + o.dir + ")", ""});
    } else {
      std::string what = o.reason;
      if (const Signature* failure = o.failure()) what = failure->to_string();
      res.findings.push_back(
          {FindingStatus::Fail, "sanity", -1, false,
           "the workload fails on a single process: " + what + " (" + o.dir + ")",
           o.status == TrialStatus::Infra ? "check the command, its cwd and its interpreter"
                               : "fix this first, or reduce it: ddpbisect " + spec.file});
    }
  }

  // 2. The master probe on node 0, then every node's probe, in parallel.
  auto launcher = make_launcher(spec.launcher);
  const std::string master_addr = launcher->master_addr();
  auto driver_env = current_environment();
  bool fixed_port = driver_env.count("MASTER_PORT") && !driver_env["MASTER_PORT"].empty();
  int port = 0;
  if (fixed_port) {
    try {
      port = std::stoi(driver_env["MASTER_PORT"]);
    } catch (const std::exception&) {
      fixed_port = false;
    }
  }
  if (!fixed_port) port = pick_free_port(master_addr);
  const std::string token = random_token();
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : driver_env)
    if (!starts_with(k, "DDPBISECT_") || k == "DDPBISECT_WORKER") env[k] = v;
  if (spec.command)
    for (const auto& [k, v] : spec.command->env) env[k] = v;
  env["DDPBISECT_TRIAL_TOKEN"] = token;
  env["DDPBISECT_DOCTOR_MASTER"] = master_addr + ":" + std::to_string(port);
  env["DDPBISECT_DOCTOR_PATHS"] = json(spec_paths(spec)).dump();
  const std::string python = workload_python(spec);
  const std::string cwd = spec.command ? spec.command->cwd : fs::absolute(opt.out_dir).string();
  auto slot_for = [&](int node, const std::string& role) {
    RankSlot s;
    s.rank = node;
    s.node = node;
    s.process = {{python, "-c", node_probe_script()}, env, cwd};
    s.process.env["DDPBISECT_DOCTOR_ROLE"] = role;
    return launcher->wrap({s}).front();
  };

  std::string master_out, master_error;
  RankSet master_set([&](size_t, Stream stream, const char* data, size_t n) {
    if (stream == Stream::Out && master_out.size() < (1 << 20)) master_out.append(data, n);
  });
  json master = start_master(master_set, master_out, slot_for(0, "master"), master_error);
  if (!master.is_object()) master = nullptr;

  const int nodes = static_cast<int>(stage->nodes);
  std::vector<json> reports(static_cast<size_t>(nodes));
  std::vector<double> offsets(static_cast<size_t>(nodes), 0.0);
  std::vector<std::thread> threads;
  for (int i = 0; i < nodes; ++i) {
    threads.emplace_back([&, i] {
      std::string out;
      int rc = run_capture(slot_for(i, "node"), 120, out, 1 << 20, interrupted);
      double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      json r = parse_probe_line(out);
      if (!r.is_object())
        r = {{"probe_error",
              "exit " + std::to_string(rc) + ": " + std::string(trim(out.substr(0, 600)))}};
      else if (r["time"].is_number())
        offsets[static_cast<size_t>(i)] = r["time"].get<double>() - now;
      r["node"] = i;
      reports[static_cast<size_t>(i)] = r;
    });
  }
  for (auto& t : threads) t.join();
  // Clocks against the driver: through the master probe when this machine reaches it (precise),
  // else from the time each probe printed (late by its exit time).
  if (auto d = master.is_object() && master.value("listening", false)
                   ? clock_offset_to(master_addr, port)
                   : std::nullopt) {
    for (int i = 0; i < nodes; ++i) {
      const json& m = member(reports[static_cast<size_t>(i)], "master");
      if (m.value("reachable", false))
        offsets[static_cast<size_t>(i)] = *d - m.value("offset_s", 0.0);
    }
  }
  master_set.kill_all();
  while (master_set.any_running()) master_set.wait(0.1);
  sweep_token(token);
  std::vector<int> all;
  for (int i = 0; i < nodes; ++i) all.push_back(i);
  launcher->cleanup(token, all);
  if (master.is_null()) master = {{"start_error", master_error}};
  for (auto& f : node_findings(reports, offsets, master, master_addr, port, fixed_port, *stage))
    res.findings.push_back(f);
  for (auto& r : reports) res.nodes.push_back(r);

  // 3. Communication.
  if (opt.comm) {
    gloo_probe(spec, *stage, opt.out_dir, res);
    nccl_probe(
        reports,
        [&](int node) {
          RankSlot s;
          s.rank = node;
          s.node = node;
          s.process = {{nccl_probe_path()}, env, cwd};
          return launcher->wrap({s}).front();
        },
        res);
  }
  sort_findings(res.findings);
  return res;
}

}  // namespace ddpbisect
