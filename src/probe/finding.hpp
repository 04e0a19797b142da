// A finding of `doctor`: fail / warn / pass / skip (a check that does not apply here, such as
// NCCL without a GPU), what was checked, on which node, and the fix to try.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/vocabulary.hpp"
#include "probe/finding_statuses.def"

namespace ddpbisect {

// From probe/finding_statuses.def, in the order of the sorted findings.
DDPBISECT_DECLARE_VOCABULARY(FindingStatus, DDPBISECT_FINDING_STATUSES, parse_finding_status)

struct Finding {
  FindingStatus status = FindingStatus::Pass;
  std::string check;     // sanity, versions.torch, clock, paths, master.port, comm.gloo, ...
  int node = -1;         // -1: not about one node
  bool differs = false;  // a difference between nodes
  std::string message;
  std::string fix;
  nlohmann::json to_json() const;
};

// Differences between nodes first, then fail, warn, pass, skip; stable otherwise.
void sort_findings(std::vector<Finding>& findings);

}  // namespace ddpbisect
