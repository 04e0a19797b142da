// When to rerun a configuration that is known to fail, and how many trials a candidate gets: a
// failure that has reproduced every time so far is treated as deterministic (one trial per
// candidate); flakiness is looked for where it costs least (two reruns before reducing, the rest
// on the minimum) and, once seen, measured and paid for with repeats.
#pragma once

#include <string>

namespace ddpbisect {

// Reruns of the first failing configuration before reducing, when every one reproduces.
constexpr int kRerunsBeforeReduction = 2;
// Runs that measure a flaky failure's reproduction rate (the first failure included).
constexpr int kMeasureRuns = 10;
// Reruns of a flaky minimum in the confirm phase.
constexpr int kFlakyConfirmRuns = 10;

// Runs after the first failure that must all reproduce before a failure is called
// deterministic: a failure that reproduces half the time or less then shows a miss with
// probability `confidence` (0.5^n <= 1 - confidence: 5 at 0.95, 10 at 0.999).
int reruns_to_trust(double confidence);

// Trials that call a candidate uninteresting when the target reproduces at `rate`: an
// interesting candidate shows its failure at least once with probability `confidence`
// ((1 - rate)^n <= 1 - confidence), at least 2 and at most 30; 1 for a deterministic target.
int repeats_for(double rate, double confidence);

struct Tally;

// Trials that call a candidate uninteresting given what `measured` runs of a failing
// configuration showed, at least 2 and at most 30 (1 when every run failed). Ten runs only
// bound the rate loosely (7 of 10 fits a true rate of 0.4 as well as 0.9), so the rate is not
// taken at its estimate: n is the smallest count whose miss chance averaged over every rate
// the runs leave possible (a uniform prior updated by them: E[(1 - p)^n] under
// Beta(failures + 1, misses + 1)) is at most 1 - confidence.
int repeats_for(const Tally& measured, double confidence);

// Runs of one configuration that is known to fail, and how many of them failed the same way.
struct Tally {
  int runs = 0, failures = 0;
  void add(bool reproduced) {
    ++runs;
    failures += reproduced ? 1 : 0;
  }
  bool every_time() const { return failures == runs; }
  double rate() const { return runs ? static_cast<double>(failures) / runs : 0.0; }
  std::string text() const;  // "7 of 10"
};

// Confirm-phase reruns of the minimum: `requested` when the user chose (--confirm), else, for a
// failure that reproduced every time, what trust still needs after the `seen` reruns so far,
// and kFlakyConfirmRuns for a flaky one.
int confirm_reruns(int requested, bool flaky, int seen, double confidence);

}  // namespace ddpbisect
