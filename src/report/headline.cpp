#include "report/headline.hpp"

#include <filesystem>
#include <regex>

#include "common/json_util.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"

namespace ddpbisect {

namespace {
std::string text_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// c10's backtrace lines: "frame #3: c10::Error::Error(...) + 0x4c (0x7f... in libc10.so)" and
// the "Exception raised from f at file:line (most recent call first):" line that opens them.
bool cpp_frame_line(const std::string& line) {
  static const std::regex frame(R"(^\s*(\[rank\d+\]:\s*)?frame #\d+: )");
  return std::regex_search(line, frame);
}
}  // namespace

std::string root_cause_headline(const nlohmann::json& root) {
  if (!root.is_object()) return "";
  std::string where;
  const std::string file = text_of(root, "file");
  if (!file.empty()) {
    where = std::filesystem::path(file).filename().string();
    if (root.contains("line") && root["line"].is_number() && root["line"].get<int>() > 0)
      where += ":" + std::to_string(root["line"].get<int>());
  }
  std::vector<int> ranks;
  if (root.contains("rank") && root["rank"].is_number_integer())
    ranks.push_back(root["rank"].get<int>());
  else
    for (const auto& r : json_field(root, "rank_candidates", nlohmann::json::array()))
      if (r.is_number_integer()) ranks.push_back(r.get<int>());
  return redact_value(
      "", failure_headline(ranks, text_of(root, "exception"), text_of(root, "message"), where));
}

std::string fold_cpp_frames(const std::string& text) {
  std::vector<std::string> lines = split(text, '\n'), out;
  const bool newline_at_end = !text.empty() && text.back() == '\n';
  if (newline_at_end) lines.pop_back();
  int run = 0;
  auto flush = [&] {
    if (run) out.push_back("  [" + plural(run, "C++ frame") + " folded]");
    run = 0;
  };
  for (const auto& line : lines) {
    if (cpp_frame_line(line)) {
      ++run;
      continue;
    }
    flush();
    out.push_back(line);
  }
  flush();
  return join(out, "\n") + (newline_at_end ? "\n" : "");
}

std::string root_cause_traceback(const nlohmann::json& root, bool fold) {
  if (!root.is_object() || !root.contains("excerpt") || !root["excerpt"].is_array()) return "";
  std::string s;
  for (const auto& l : root["excerpt"])
    if (l.is_string()) s += redact_value("", l.get<std::string>()) + "\n";
  return fold ? fold_cpp_frames(s) : s;
}

}  // namespace ddpbisect
