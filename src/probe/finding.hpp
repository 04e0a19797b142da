// A finding of `doctor`: fail / warn / pass / skip (a check that does not apply here, such as
// NCCL without a GPU), what was checked, on which node, and the fix to try.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/vocabulary.hpp"

namespace ddpbisect {

// From probe/finding_statuses.def, in the order of the sorted findings.
enum class FindingStatus {
#define DDPBISECT_FINDING_STATUS(id, name, meaning) id,
#include "probe/finding_statuses.def"
#undef DDPBISECT_FINDING_STATUS
};
inline constexpr const char* kFindingStatusNames[] = {
#define DDPBISECT_FINDING_STATUS(id, name, meaning) name,
#include "probe/finding_statuses.def"
#undef DDPBISECT_FINDING_STATUS
};
inline const char* to_string(FindingStatus status) {
  return vocabulary_name(status, kFindingStatusNames);
}

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
