#include "reduce/reruns.hpp"

#include <algorithm>
#include <cmath>

namespace ddpbisect {

int reruns_to_trust(double confidence) {
  const double miss = std::clamp(1.0 - confidence, 1e-9, 0.5);
  return static_cast<int>(std::ceil(std::log(miss) / std::log(0.5) - 1e-9));
}

int repeats_for(double rate, double confidence) {
  if (rate >= 0.999) return 1;
  const double p = std::max(rate, 0.05);
  const double miss = std::clamp(1.0 - confidence, 1e-9, 0.5);
  const int n = static_cast<int>(std::ceil(std::log(miss) / std::log(1.0 - p) - 1e-9));
  return std::clamp(n, 2, 30);
}

int repeats_for(const Tally& measured, double confidence) {
  if (measured.every_time()) return 1;
  const double miss = std::clamp(1.0 - confidence, 1e-9, 0.5);
  // E[(1 - p)^n] for p ~ Beta(a, b) is the product over i < n of (b + i) / (a + b + i).
  const double a = measured.failures + 1.0, b = measured.runs - measured.failures + 1.0;
  double all_missed = 1.0;
  for (int n = 1; n <= 30; ++n) {
    all_missed *= (b + n - 1) / (a + b + n - 1);
    if (all_missed <= miss) return std::max(n, 2);
  }
  return 30;
}

std::string Tally::text() const {
  return std::to_string(failures) + " of " + std::to_string(runs);
}

int confirm_reruns(int requested, bool flaky, int seen, double confidence) {
  if (requested >= 0) return requested;
  if (flaky) return kFlakyConfirmRuns;
  return std::max(0, reruns_to_trust(confidence) - seen);
}

}  // namespace ddpbisect
