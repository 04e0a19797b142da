// Ctrl-C and SIGTERM as values. main() installs the handlers once, before any trial; library code
// never installs one. The handler only records the signal: a trial's poll loop stops its ranks
// when it sees it (TrialStatus::Interrupted), and whoever cannot finish its work throws
// Interrupted, which futures carry from trial threads back to the thread that turns it into
// exit 128+signal (and a resumable journal).
#pragma once

#include <exception>
#include <string>

namespace ddpbisect {

class Interrupted : public std::exception {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }
  int exit_code() const { return 128 + signal_; }
  const char* what() const noexcept override { return what_.c_str(); }  // "interrupted by SIGINT"

 private:
  int signal_;
  std::string what_;
};

// SIGINT and SIGTERM set the flag below instead of ending the process. Idempotent; main only.
void install_interrupt_handlers();
// 0, or the signal (SIGINT, SIGTERM) that asked the driver to stop.
int interrupt_signal();
// Throws Interrupted when a signal asked the driver to stop.
void throw_if_interrupted();
// Forgets the signal recorded: for tests that send one, so that the tests after them in the same
// process start clean (the driver itself never forgets one).
void clear_interrupt();

}  // namespace ddpbisect
