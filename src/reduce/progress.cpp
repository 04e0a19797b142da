#include "reduce/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace ddpbisect {

Progress::Progress(bool quiet) : tty_(isatty(STDERR_FILENO) != 0), quiet_(quiet) {}

void Progress::redraw() {
  if (quiet_ || !tty_) return;
  std::string line = "[" + phase_ + "] " + last_ + (best_.empty() ? "" : " | best: " + best_);
  if (line.size() > 150) line = line.substr(0, 147) + "...";
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
}

void Progress::phase(const std::string& text) {
  phase_ = text;
  if (!tty_ && !quiet_) std::fprintf(stderr, "== %s\n", text.c_str());
  redraw();
}

void Progress::trial(const TrialConfig& c, const RunRecord& r, std::optional<bool> interesting,
                     int64_t trials) {
  std::string verdict = r.replayed ? "replayed " : "";
  const std::string category = r.signature ? r.signature->category : std::string("?");
  if (r.status != TrialStatus::Fail)
    verdict += to_string(r.status);
  else if (!interesting)
    verdict += "fail (" + category + ")";
  else
    verdict += *interesting ? "fail (target)" : "fail (other: " + category + ")";
  last_ = "trial " + std::to_string(trials) + ": " + describe_config(c) + " -> " + verdict;
  if (!tty_ && !quiet_) std::fprintf(stderr, "  %s\n", last_.c_str());
  redraw();
}

void Progress::best(const TrialConfig& c) {
  best_ = describe_config(c);
  redraw();
}

void Progress::note(const std::string& line) {
  if (quiet_) return;
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", line.c_str());
  redraw();
}

void Progress::done() {
  if (!quiet_ && tty_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace ddpbisect
