// `ddpbisect check REPRO.yaml [--expect fail|pass] [--repeats N] [--junit FILE] [--bisect]`:
// the regression check for CI, and a `git bisect run` script.
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "diagnose/diagnosis.hpp"
#include "observe/trial_runner.hpp"
#include "report/junit.hpp"
#include "spec/loader.hpp"

namespace ddpbisect::cli {

int check(const CheckOptions& o) {
  if (o.expect != "fail" && o.expect != "pass") {
    std::cerr << "ddpbisect check: --expect: expected fail or pass, found '" << o.expect << "'\n";
    return exit_code::kBadInput;
  }
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return exit_code::kBadInput;
  const Spec& spec = *loaded;
  auto trial = trial_config_or_report(spec, o.stage, {}, "check", /*first=*/true);
  if (!trial) return exit_code::kBadInput;
  const MatchSpec& m = spec.match;
  const std::string root = o.out.empty() ? spec.report_dir : o.out;
  int bad = 0, good = 0, skip = 0;
  std::vector<JUnitCase> cases;
  for (int i = 0; i < o.repeats; ++i) {
    if (int sig = interrupt_signal()) return 128 + sig;
    TrialRequest req{&spec, *trial, next_trial_dir(root), {}};
    TrialOutcome out = run_trial(req);
    if (out.status == TrialStatus::Interrupted) return 128 + out.interrupt_signal;
    std::string verdict;
    const Signature* sig = out.failure();
    if (out.status == TrialStatus::Pass) {
      ++good;
      verdict = "good: it passed";
    } else if (out.status == TrialStatus::Fail && sig) {
      if (matches_pinned(m.signature_category, m.signature_exception, m.signature_frame, *sig)) {
        ++bad;
        verdict = "bad: the failure reproduced: " + sig->to_string();
      } else {
        ++skip;
        verdict = "skip: a different failure: " + sig->to_string();
      }
    } else {
      ++skip;
      verdict = "skip: " + std::string(to_string(out.status)) + ": " + out.reason;
    }
    std::cout << "run " << i + 1 << "/" << o.repeats << ": " << verdict << " (" << out.dir << ")\n";
    JUnitCase c;
    c.name = spec.name + " run " + std::to_string(i + 1);
    c.seconds = out.duration_s;
    c.output = verdict + "\n" + out.dir;
    bool held = o.expect == "fail" ? verdict.rfind("bad", 0) == 0 : verdict.rfind("good", 0) == 0;
    if (verdict.rfind("skip", 0) == 0)
      c.skipped = verdict;
    else if (!held)
      c.failure = "expected " + o.expect + "; " + verdict;
    cases.push_back(c);
  }
  if (!o.junit.empty()) {
    std::ofstream f(o.junit);
    if (!f) {
      std::cerr << "ddpbisect check: --junit: cannot write " << o.junit << "\n";
      return exit_code::kBadInput;
    }
    f << junit_xml("ddpbisect.check", cases);
  }
  if (o.bisect)
    return bad ? exit_code::kBad : (good == o.repeats ? exit_code::kGood : exit_code::kSkip);
  bool held = o.expect == "fail" ? bad > 0 : (bad == 0 && good > 0);
  std::cout << (held ? "expectation holds: " : "expectation does not hold: ") << "expected "
            << o.expect << "; " << bad << " reproduced, " << good << " passed, " << skip
            << " skipped\n";
  return held ? exit_code::kOk : exit_code::kBad;
}

}  // namespace ddpbisect::cli
