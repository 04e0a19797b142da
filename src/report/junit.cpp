#include "report/junit.hpp"

#include "common/text.hpp"

#include <cstdio>

namespace ddpbisect {

std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases) {
  int failures = 0, skipped = 0;
  double total = 0;
  for (const auto& c : cases) {
    failures += !c.failure.empty();
    skipped += !c.skipped.empty();
    total += c.seconds;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", total);
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"" +
                  markup_escape(suite) + "\" tests=\"" + std::to_string(cases.size()) +
                  "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                  std::to_string(skipped) + "\" time=\"" + buf + "\">\n";
  for (const auto& c : cases) {
    std::snprintf(buf, sizeof buf, "%.3f", c.seconds);
    x += "    <testcase classname=\"" + markup_escape(suite) + "\" name=\"" +
         markup_escape(c.name) + "\" time=\"" + buf + "\">\n";
    if (!c.failure.empty()) x += "      <failure message=\"" + markup_escape(c.failure) + "\"/>\n";
    if (!c.skipped.empty()) x += "      <skipped message=\"" + markup_escape(c.skipped) + "\"/>\n";
    if (!c.output.empty()) x += "      <system-out>" + markup_escape(c.output) + "</system-out>\n";
    x += "    </testcase>\n";
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace ddpbisect
