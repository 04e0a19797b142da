// `ddpbisect doctor`: the pre-flight checklist. A single-process sanity run of the workload; on
// every node of the largest stage (through the spec's launcher) the node probe (node_probe.hpp);
// an all-reduce probe over Gloo across the stage's topology (the worker's DDPBISECT_PROBE); the
// native NCCL probe on nodes with GPUs. Findings are pass / warn / fail, each with the fix to try,
// differences between nodes first.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/finding.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct DoctorOptions {
  std::string stage;    // default: the stage with the most ranks
  std::string out_dir;  // trial folders of the sanity run and the probes go under it
  bool sanity = true;   // the single-process run of the workload
  bool comm = true;     // the Gloo (and NCCL) all-reduce probes
};

struct DoctorResult {
  std::vector<Finding> findings;  // sorted: differences first, then fail, warn, pass
  nlohmann::json nodes = nlohmann::json::array();  // each node probe's report
  nlohmann::json comm = nlohmann::json::object();  // gloo / nccl bandwidth tables
  bool failed() const;
};

DoctorResult run_doctor(const Spec& spec, const DoctorOptions& options);

// The findings about nodes alone (pure: unit-testable without running anything). `reports[i]`
// is node i's probe JSON (null when the probe did not run); `driver_offsets[i]` its clock minus
// the driver's; `master` the master probe's JSON.
std::vector<Finding> node_findings(const std::vector<nlohmann::json>& reports,
                                   const std::vector<double>& driver_offsets,
                                   const nlohmann::json& master, const std::string& master_addr,
                                   int master_port, bool fixed_port, const Stage& stage);

}  // namespace ddpbisect
