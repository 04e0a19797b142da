// Process exit codes, the contract users' scripts, CI and `git bisect run` rely on. Each
// subcommand documents its own subset in its --help (cli/main.cpp) and in the README.
#pragma once

namespace ddpbisect::exit_code {
inline constexpr int kOk = 0;
inline constexpr int kBadInput = 2;         // a spec, a flag, a path
inline constexpr int kNotReproduced = 3;    // reduce: no stage failed; explain: no failure found
inline constexpr int kBudgetExhausted = 4;  // reduce: the best so far is reported, not a minimum
// An error of ddpbisect itself, never a verdict about the workload: sysexits.h's EX_SOFTWARE.
inline constexpr int kInternal = 70;
// `run` (the trial's verdict), `check` (the expectation), `doctor` (a check failed):
inline constexpr int kFailed = 1;
// `run` and `check`: no trial could be judged fairly (infra: a port clash, a missing program).
inline constexpr int kSkip = 125;
// `check --bisect` speaks git bisect run's language: 0 good, 1 bad, 125 skip, and 128 or more
// aborts the bisection, which is what bad input and our own errors must do rather than name a
// commit. git's own fatal errors exit 128; 255 keeps an internal error apart from it.
inline constexpr int kGood = 0;
inline constexpr int kBad = 1;
inline constexpr int kBisectBadInput = 128;
inline constexpr int kBisectInternal = 255;
// Interrupted by signal N (SIGINT, SIGTERM) after every rank was stopped: 128 + N.
inline constexpr int interrupted(int signal) {
  return 128 + signal;
}
}  // namespace ddpbisect::exit_code
