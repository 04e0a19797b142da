#include "observe/agent_report.hpp"

#include <cstdlib>
#include <string>

namespace ddpbisect {

namespace {

// The integer after `key` in `text` (skipping spaces), or nullopt.
std::optional<long> after(std::string_view text, std::string_view key) {
  size_t pos = text.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  pos += key.size();
  while (pos < text.size() && text[pos] == ' ') ++pos;
  size_t end = pos;
  if (end < text.size() && text[end] == '-') ++end;
  while (end < text.size() && end - pos < 12 && text[end] >= '0' && text[end] <= '9') ++end;
  if (end == pos || (end == pos + 1 && text[pos] == '-')) return std::nullopt;
  return std::strtol(std::string(text.substr(pos, end - pos)).c_str(), nullptr, 10);
}

void set_exit(WorkerEnd& w, long code) {
  if (code < 0) {
    w.signal = static_cast<int>(-code);
    w.exit_code = -1;
  } else {
    w.exit_code = static_cast<int>(code);
  }
}

}  // namespace

std::optional<WorkerEnd> AgentReport::line(std::string_view text) {
  if (text.find("failed (exitcode:") != std::string_view::npos) {
    auto code = after(text, "failed (exitcode:");
    auto local = after(text, "local_rank:");
    if (!code || !local) return std::nullopt;
    WorkerEnd w;
    w.local_rank = static_cast<int>(*local);
    set_exit(w, *code);
    w.pid = after(text, "(pid:").value_or(-1);
    for (const auto& seen : failed_lines_)
      if (seen.local_rank == w.local_rank) return std::nullopt;
    failed_lines_.push_back(w);
    return w;
  }
  if (text.find("closing signal SIGTERM") != std::string_view::npos) {
    if (auto pid = after(text, "Sending process")) sigtermed_.insert(*pid);
    return std::nullopt;
  }
  // The banner: "  rank      : 3 (local_rank: 1)" then "  exitcode  : -15 (pid: 29862)".
  size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return std::nullopt;
  std::string_view t = text.substr(first);
  if (t.substr(0, 4) == "rank" && t.find("(local_rank:") != std::string_view::npos) {
    auto rank = after(t, ":");
    auto local = after(t, "(local_rank:");
    if (rank && local) {
      pending_ = WorkerEnd{};
      pending_->rank = static_cast<int>(*rank);
      pending_->local_rank = static_cast<int>(*local);
    }
  } else if (t.substr(0, 8) == "exitcode" && pending_) {
    if (auto code = after(t, ":")) {
      set_exit(*pending_, *code);
      pending_->pid = after(t, "(pid:").value_or(-1);
      banner_.push_back(*pending_);
    }
    pending_.reset();
  }
  return std::nullopt;
}

std::vector<WorkerEnd> AgentReport::ends() const {
  std::vector<WorkerEnd> out = banner_;
  for (const auto& f : failed_lines_) {
    bool known = false;
    for (const auto& b : banner_) known = known || b.local_rank == f.local_rank;
    if (!known) out.push_back(f);
  }
  for (auto& w : out) w.stopped_by_agent = w.pid >= 0 && sigtermed_.count(w.pid) > 0;
  return out;
}

}  // namespace ddpbisect
