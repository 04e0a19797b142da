#include "report/junit.hpp"

#include <cstdio>

#include "common/text.hpp"

namespace ddpbisect {

namespace {
std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

// An attribute keeps its newlines only as references (a parser turns a raw one into a space).
std::string attribute(const std::string& s) {
  std::string out = markup_escape(s);
  replace_all(out, "\n", "&#10;");
  replace_all(out, "\t", "&#9;");
  return out;
}
}  // namespace

std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases,
                      const std::string& timestamp) {
  int failures = 0, skipped = 0;
  double total = 0;
  for (const auto& c : cases) {
    failures += c.failure.has_value();
    skipped += !c.skipped.empty() && !c.failure;
    total += c.seconds;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" +
                  attribute(suite) + "\" tests=\"" + std::to_string(cases.size()) +
                  "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                  std::to_string(skipped) + "\" time=\"" + seconds_text(total) + "\">\n";
  x += "  <testsuite name=\"" + attribute(suite) + "\" tests=\"" + std::to_string(cases.size()) +
       "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
       std::to_string(skipped) + "\" time=\"" + seconds_text(total) + "\"" +
       (timestamp.empty() ? "" : " timestamp=\"" + attribute(timestamp) + "\"") + ">\n";
  for (const auto& c : cases) {
    x += "    <testcase classname=\"" + attribute(suite) + "\" name=\"" + attribute(c.name) +
         "\" time=\"" + seconds_text(c.seconds) + "\">\n";
    if (c.failure)
      x += "      <failure type=\"" + attribute(c.failure->type) + "\" message=\"" +
           attribute(c.failure->message) + "\">" + markup_escape(c.failure->body) + "</failure>\n";
    else if (!c.skipped.empty())
      x += "      <skipped message=\"" + attribute(c.skipped) + "\"/>\n";
    if (!c.output.empty()) x += "      <system-out>" + markup_escape(c.output) + "</system-out>\n";
    x += "    </testcase>\n";
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace ddpbisect
