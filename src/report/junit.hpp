// JUnit XML, the format CI systems (Jenkins, GitLab, GitHub actions) read test results from.
#pragma once

#include <string>
#include <vector>

namespace ddpbisect {

struct JUnitCase {
  std::string name;
  double seconds = 0;
  std::string failure;  // empty: passed
  std::string skipped;  // empty: not skipped
  std::string output;
};

std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases);

}  // namespace ddpbisect
