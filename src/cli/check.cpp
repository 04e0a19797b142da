// `ddpbisect check REPRO.yaml [--expect fail|pass] [--repeats N] [--junit FILE] [--bisect]`:
// the regression check for CI, and a `git bisect run` script.
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "observe/trial_runner.hpp"
#include "report/headline.hpp"
#include "report/junit.hpp"
#include "spec/loader.hpp"

namespace ddpbisect::cli {

namespace {

enum class Verdict { Reproduced, Passed, Different, Infra };

struct Judged {
  Verdict verdict = Verdict::Infra;
  std::string words;  // "reproduced: rank 1: RuntimeError: ... (train.py:12)"
  std::string exception, headline, traceback;
};

Judged judge(const Spec& spec, const TrialOutcome& out) {
  Judged j;
  const Signature* sig = out.failure();
  if (sig && out.diagnosis) {
    nlohmann::json root = out.diagnosis->to_json()["root_cause"];
    j.headline = root_cause_headline(root);
    j.traceback = root_cause_traceback(root, /*fold=*/false);
    j.exception = sig->exception.empty() ? sig->category : sig->exception;
  }
  const MatchSpec& m = spec.match;
  if (out.status == TrialStatus::Pass) {
    j.verdict = Verdict::Passed;
    j.words = "passed";
  } else if (out.status == TrialStatus::Fail && sig) {
    bool pinned =
        matches_pinned(m.signature_category, m.signature_exception, m.signature_frame, *sig);
    j.verdict = pinned ? Verdict::Reproduced : Verdict::Different;
    j.words = (pinned ? "reproduced: " : "failed differently: ") + j.headline;
  } else {
    j.verdict = Verdict::Infra;
    j.words = std::string(to_string(out.status)) + ": " + out.reason;
  }
  return j;
}

// The JUnit case of one run: a <failure> when the run went against the expectation.
JUnitCase junit_case(const Spec& spec, const CheckOptions& o, int i, const TrialOutcome& out,
                     const Judged& j) {
  JUnitCase c;
  c.name = spec.name + " (run " + std::to_string(i + 1) + " of " + std::to_string(o.repeats) + ")";
  c.seconds = out.duration_s;
  c.output = j.words + "\ntrial folder: " + out.dir + "\n" + j.traceback;
  const bool want_fail = o.expect == "fail";
  if (j.verdict == Verdict::Infra) {
    c.skipped = j.words;
  } else if (want_fail && j.verdict == Verdict::Passed) {
    c.failure =
        JUnitFailure{"NotReproduced", "the pinned failure did not reproduce: the job passed",
                     "The job passed: the failure pinned in " + spec.file +
                         " did not reproduce.\nTrial folder: " + out.dir + "\n"};
  } else if (j.verdict == Verdict::Different || (!want_fail && j.verdict == Verdict::Reproduced)) {
    c.failure = JUnitFailure{j.exception, j.headline, j.traceback};
  }
  return c;
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  return buf;
}

}  // namespace

int check(const CheckOptions& o) {
  if (o.expect != "fail" && o.expect != "pass") {
    error("--expect: expected fail or pass, found '" + o.expect + "'");
    return bad_input();
  }
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return bad_input();
  const Spec& spec = *loaded;
  auto trial = trial_config_or_report(spec, o.stage, {}, /*first=*/true);
  if (!trial) return bad_input();
  std::ofstream junit;
  if (!o.junit.empty()) {
    junit.open(o.junit);
    if (!junit) {
      error("--junit: cannot write " + o.junit);
      return bad_input();
    }
  }
  const std::string root = o.out.empty() ? spec.report_dir : o.out;
  const std::string started = now_iso8601();
  int reproduced = 0, passed = 0, different = 0, infra = 0;
  std::vector<JUnitCase> cases;
  for (int i = 0; i < o.repeats; ++i) {
    if (int sig = interrupt_signal()) return exit_code::interrupted(sig);
    TrialRequest req{&spec, *trial, next_trial_dir(root), {}};
    TrialOutcome out = run_trial(req);
    if (out.status == TrialStatus::Interrupted) return exit_code::interrupted(out.interrupt_signal);
    Judged j = judge(spec, out);
    (j.verdict == Verdict::Reproduced  ? reproduced
     : j.verdict == Verdict::Passed    ? passed
     : j.verdict == Verdict::Different ? different
                                       : infra)++;
    std::cout << "run " << i + 1 << "/" << o.repeats << ": " << visible_text(j.words) << " ("
              << out.dir << ")\n";
    cases.push_back(junit_case(spec, o, i, out, j));
  }
  if (junit.is_open()) junit << junit_xml("ddpbisect.check." + spec.name, cases, started);
  const std::string counts = std::to_string(reproduced) + " reproduced, " + std::to_string(passed) +
                             " passed, " + std::to_string(different) + " failed differently, " +
                             std::to_string(infra) + " infra";
  if (o.bisect) {
    int code = reproduced            ? exit_code::kBad
               : passed == o.repeats ? exit_code::kGood
                                     : exit_code::kSkip;
    std::cout << "bisect: "
              << (code == exit_code::kBad    ? "bad"
                  : code == exit_code::kGood ? "good"
                                             : "skip")
              << " (" << counts << ")\n";
    return code;
  }
  if (reproduced + passed + different == 0) {
    std::cout << "no run could be judged (" << counts << ")\n";
    return exit_code::kSkip;
  }
  const bool held = o.expect == "fail" ? reproduced > 0 : reproduced + different == 0;
  std::cout << (held ? "as expected: " : "not as expected: ") << "expected the job to "
            << (o.expect == "fail" ? "fail with the pinned failure" : "pass") << "; " << counts
            << "\n";
  return held ? exit_code::kOk : exit_code::kFailed;
}

}  // namespace ddpbisect::cli
