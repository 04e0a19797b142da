#include "probe/comm_probe.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "launch/rank_plan.hpp"
#include "observe/trial_runner.hpp"
#include "spec/trial_config.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

namespace {

// The JSON of a `DDPBISECT_PROBE {...}` bandwidth line (worker or NCCL probe), else null.
json probe_row(const std::string& line) {
  if (!starts_with(line, "DDPBISECT_PROBE ")) return nullptr;
  json j = json::parse(line.substr(16), nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

}  // namespace

void gloo_probe(const Spec& spec, const Stage& stage, const std::string& out_dir,
                DoctorResult& res) {
  std::error_code ec;
  if (!fs::exists(worker_path(), ec)) {
    res.findings.push_back({FindingStatus::Warn, "comm.gloo", -1, false,
                            "not run: ddpbisect-worker (the libtorch probe) is not installed "
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
        {FindingStatus::Skip, "comm.nccl", -1, false,
         std::string("no node has a usable GPU") +
             (built ? " (the native probe is built: " + nccl_probe_path() + ")" : ""),
         ""});
    return;
  }
  if (!built) {
    res.findings.push_back({FindingStatus::Warn, "comm.nccl", -1, false,
                            "not run: ddpbisect-nccl-probe was not built (no CUDA toolkit with "
                            "NCCL at build time)",
                            "rebuild ddpbisect where /usr/local/cuda has nccl.h and libnccl"});
    return;
  }
  json per_node = json::object();
  for (int node : with_gpus) {
    std::string out;
    // Ctrl-C ends the probe at once, as it ends a trial.
    if (interrupt_signal()) break;
    int rc = run_capture(on_node(node), 300, out, 1 << 20, [] { return interrupt_signal() != 0; });
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

}  // namespace ddpbisect
