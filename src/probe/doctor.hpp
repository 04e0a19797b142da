// `ddpbisect doctor`: the pre-flight checklist. A single-process sanity run of the workload; on
// every node of the largest stage (through the spec's launcher) the node probe (node_probe.hpp)
// and what it says (node_findings.hpp, one function per check), the clocks (clock.hpp); the
// all-reduce probes over Gloo and NCCL (comm_probe.hpp). Findings are fail / warn / pass / skip,
// each with the fix to try, differences between nodes first.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/finding.hpp"
#include "probe/node_findings.hpp"
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

}  // namespace ddpbisect
