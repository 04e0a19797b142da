#include "reduce/timings.hpp"

#include <algorithm>

namespace ddpbisect {

namespace {
constexpr double kPauseMargin = 2.0, kTimeoutMargin = 4.0, kLeastTimeout = 60.0;
}

void JobTimings::learn(const RunRecord& r) {
  if (r.status != TrialStatus::Pass && r.status != TrialStatus::Fail) return;
  pause_ = std::max(pause_, r.pause_s);
  longest_ = std::max(longest_, r.duration_s);
}

std::optional<double> JobTimings::hang_floor_s(const Limits& limits) const {
  if (limits.hang_after || pause_ <= 0) return std::nullopt;
  return kPauseMargin * pause_;
}

std::optional<double> JobTimings::timeout_s(const Limits& limits) const {
  if (!limits.trial_timeout_auto || longest_ <= 0) return std::nullopt;
  const double first = static_cast<double>(limits.trial_timeout.count()) / 1000.0;
  return std::min(first, std::max(kLeastTimeout, kTimeoutMargin * longest_));
}

}  // namespace ddpbisect
