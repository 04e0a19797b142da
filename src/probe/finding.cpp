#include "probe/finding.hpp"

#include <algorithm>

namespace ddpbisect {

using nlohmann::json;

json Finding::to_json() const {
  return {{"status", to_string(status)},
          {"check", check},
          {"node", node < 0 ? json(nullptr) : json(node)},
          {"differs", differs},
          {"message", message},
          {"fix", fix}};
}

void sort_findings(std::vector<Finding>& findings) {
  auto rank = [](const Finding& f) {
    return std::make_pair(f.differs ? 0 : 1, static_cast<int>(f.status));
  };
  std::stable_sort(findings.begin(), findings.end(),
                   [&](const Finding& a, const Finding& b) { return rank(a) < rank(b); });
}

}  // namespace ddpbisect
