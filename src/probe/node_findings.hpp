// What doctor concludes from the node probes' reports: one function per check (reachability,
// versions, GPUs, clocks, memory and disk, data paths, variables, the master address), each pure
// (JSON in, findings out), so each is unit-tested without running anything.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/finding.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

// What the checks read. `reports[i]` is node i's probe JSON (null when it did not run);
// `driver_offsets[i]` its clock minus the driver's; `master` the master probe's JSON.
struct NodeReports {
  std::vector<nlohmann::json> reports;
  std::vector<double> driver_offsets;
  nlohmann::json master;
  std::string master_addr;
  int master_port = 0;
  bool fixed_port = false;  // MASTER_PORT was set by the user
  Stage stage;
};

// Every check below, in this order.
std::vector<Finding> node_findings(const NodeReports& in);
// The same, with the reports given one by one (what the unit tests and run_doctor call).
std::vector<Finding> node_findings(const std::vector<nlohmann::json>& reports,
                                   const std::vector<double>& driver_offsets,
                                   const nlohmann::json& master, const std::string& master_addr,
                                   int master_port, bool fixed_port, const Stage& stage);

// The checks; each appends its findings. `ok` holds the reports that ran (null where not).
void check_reach(const std::vector<nlohmann::json>& reports, std::vector<nlohmann::json>& ok,
                 std::vector<Finding>& out);
void check_versions(const std::vector<nlohmann::json>& ok, std::vector<Finding>& out);
void check_gpus(const std::vector<nlohmann::json>& ok, const Stage& stage,
                std::vector<Finding>& out);
void check_clocks(const std::vector<nlohmann::json>& ok, const std::vector<double>& offsets,
                  std::vector<Finding>& out);
void check_resources(const std::vector<nlohmann::json>& ok, std::vector<Finding>& out);
void check_paths(const std::vector<nlohmann::json>& ok, std::vector<Finding>& out);
void check_variables(const std::vector<nlohmann::json>& ok, std::vector<Finding>& out);
void check_master(const NodeReports& in, const std::vector<nlohmann::json>& ok,
                  std::vector<Finding>& out);

}  // namespace ddpbisect
