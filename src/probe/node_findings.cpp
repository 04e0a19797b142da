#include "probe/node_findings.hpp"

#include <cmath>
#include <map>
#include <set>

#include "common/json_util.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"

namespace ddpbisect {

using nlohmann::json;

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
  return json_text(v);
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1 << 30));
  return buf;
}

std::string node_list(const std::vector<int>& nodes) {
  return (nodes.size() == 1 ? "node " : "nodes ") + join(nodes, ", ");
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

void check_reach(const std::vector<json>& reports, std::vector<json>& ok,
                 std::vector<Finding>& out) {
  const int n = static_cast<int>(reports.size());
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
}

void check_versions(const std::vector<json>& ok, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
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
                   "the same on all " + plural(n, "node") + ": python " + text_of(r["python"]) +
                       ", torch " + text_of(r.value("torch", json(nullptr))) + ", CUDA " +
                       text_of(r.value("cuda", json(nullptr))) + ", cuDNN " +
                       text_of(r.value("cudnn", json(nullptr))) + ", NCCL " +
                       text_of(r.value("nccl", json(nullptr))) + ", GPUs " +
                       text_of(r.value("gpus", json(nullptr))),
                   ""});
  }
}

void check_gpus(const std::vector<json>& ok, const Stage& stage, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
  for (int i = 0; i < n; ++i) {
    const json& r = ok[static_cast<size_t>(i)];
    if (!r.is_object() || stage.device != "cuda") continue;
    auto gpus = r.value("gpus", json::array()).size();
    if (static_cast<int64_t>(gpus) < stage.procs_per_node)
      out.push_back({FindingStatus::Fail, "gpus", i, false,
                     "node " + std::to_string(i) + " has " +
                         plural(static_cast<long long>(gpus), "GPU") + " for " +
                         std::to_string(stage.procs_per_node) + " ranks",
                     "lower procs_per_node or check CUDA_VISIBLE_DEVICES on this host"});
  }
}

void check_clocks(const std::vector<json>& ok, const std::vector<double>& driver_offsets,
                  std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
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
    out.push_back(
        {FindingStatus::Pass, "clock", -1, false, "clocks agree within 0.25 s on every node", ""});
}

void check_resources(const std::vector<json>& ok, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
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
}

void check_paths(const std::vector<json>& ok, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
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
    out.push_back({FindingStatus::Pass, "paths", -1, false,
                   plural(static_cast<long long>(paths.size()), "data path") +
                       " present and readable on every node",
                   ""});
}

void check_variables(const std::vector<json>& ok, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
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
                   plural(static_cast<long long>(names.size()), "NCCL_*/TORCH_*/GLOO_* variable") +
                       ", the same on every node",
                   ""});
}

void check_master(const NodeReports& in, const std::vector<json>& ok, std::vector<Finding>& out) {
  const int n = static_cast<int>(ok.size());
  const json& master = in.master;
  const std::string& master_addr = in.master_addr;
  const int master_port = in.master_port;
  const bool fixed_port = in.fixed_port;
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
}

std::vector<Finding> node_findings(const NodeReports& in) {
  std::vector<Finding> out;
  std::vector<json> ok;  // the reports that ran
  check_reach(in.reports, ok, out);
  check_versions(ok, out);
  check_gpus(ok, in.stage, out);
  check_clocks(ok, in.driver_offsets, out);
  check_resources(ok, out);
  check_paths(ok, out);
  check_variables(ok, out);
  check_master(in, ok, out);
  return out;
}

std::vector<Finding> node_findings(const std::vector<json>& reports,
                                   const std::vector<double>& driver_offsets, const json& master,
                                   const std::string& master_addr, int master_port, bool fixed_port,
                                   const Stage& stage) {
  return node_findings(
      NodeReports{reports, driver_offsets, master, master_addr, master_port, fixed_port, stage});
}

}  // namespace ddpbisect
