// Process exit codes, the contract users' scripts and `git bisect run` rely on (design.md).
#pragma once

namespace ddpbisect::exit_code {
inline constexpr int kOk = 0;
inline constexpr int kInternal = 1;
inline constexpr int kBadInput = 2;
inline constexpr int kNotReproduced = 3;
inline constexpr int kChecksFailed = 1;  // doctor: a check failed
// `run` and `check --bisect`:
inline constexpr int kGood = 0;
inline constexpr int kBad = 1;
inline constexpr int kSkip = 125;
}  // namespace ddpbisect::exit_code
