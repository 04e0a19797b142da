#include "report/junit.hpp"

#include <cstdio>

namespace ddpbisect {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') continue;
        out += c;
    }
  }
  return out;
}
}  // namespace

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
                  escape(suite) + "\" tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
                  std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                  std::to_string(skipped) + "\" time=\"" + buf + "\">\n";
  for (const auto& c : cases) {
    std::snprintf(buf, sizeof buf, "%.3f", c.seconds);
    x += "    <testcase classname=\"" + escape(suite) + "\" name=\"" + escape(c.name) +
         "\" time=\"" + buf + "\">\n";
    if (!c.failure.empty()) x += "      <failure message=\"" + escape(c.failure) + "\"/>\n";
    if (!c.skipped.empty()) x += "      <skipped message=\"" + escape(c.skipped) + "\"/>\n";
    if (!c.output.empty()) x += "      <system-out>" + escape(c.output) + "</system-out>\n";
    x += "    </testcase>\n";
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace ddpbisect
