// What the user watches during a reduction: on a terminal one status line that updates in place
// (stage, pass, trials, best so far); otherwise one plain line per trial, fit for a CI log.
#pragma once

#include <optional>
#include <string>

#include "reduce/oracle.hpp"

namespace ddpbisect {

class Progress {
 public:
  explicit Progress(bool quiet);
  void phase(const std::string& text);  // "escalate", "pass samples", "confirm"
  // `interesting`: whether it failed with the target; nullopt before there is one.
  void trial(const TrialConfig& c, const RunRecord& r, std::optional<bool> interesting,
             int64_t trials);
  void best(const TrialConfig& c);
  void note(const std::string& line);  // a plain line, above the status line
  void done();

 private:
  void redraw();
  bool tty_, quiet_;
  std::string phase_, best_, last_;
};

}  // namespace ddpbisect
