// JUnit XML, the format CI systems read test results from (Jenkins' junit plugin, GitLab's
// test reports): testsuites > testsuite > testcase, with <failure type= message=> and the
// failure's text (a traceback) as its body, which is what both show.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddpbisect {

struct JUnitFailure {
  std::string type;     // the exception type, or what kind of mismatch
  std::string message;  // one line
  std::string body;     // the root-cause traceback
};

struct JUnitCase {
  std::string name;
  double seconds = 0;
  std::optional<JUnitFailure> failure;  // none: passed
  std::string skipped;                  // empty: not skipped
  std::string output;                   // <system-out>
};

// `timestamp`: when the suite started (ISO 8601, local time), "" to leave it out.
std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases,
                      const std::string& timestamp = "");

}  // namespace ddpbisect
