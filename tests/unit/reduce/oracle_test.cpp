// The Oracle on a synthetic workload: cache, repeats for flaky targets, journal replay, budget,
// infra retries and interrupts, with no process started.
#include "reduce/oracle.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "common/interrupt.hpp"
#include "synthetic.hpp"

using namespace ddpbisect;
using namespace ddpbisect::testing;

namespace {
bool has_37(const TrialConfig& c) {
  for (int64_t i : c.samples.indices())
    if (i == 37) return true;
  return false;
}

struct OracleTest : ::testing::Test {
  ScratchDir dir;
  Spec spec;
  Synthetic world;
  OracleOptions options() {
    OracleOptions o;
    o.out_dir = dir.path;
    return o;
  }
  TrialConfig with_samples(std::vector<int64_t> s) {
    TrialConfig c = big_config();
    c.samples = IndexSet::from_indices(s);
    return c;
  }
};
}  // namespace

TEST_F(OracleTest, AnswersFromItsCacheAfterTheFirstTrial) {
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_TRUE(oracle.interesting(with_samples({37})));
  EXPECT_FALSE(oracle.interesting(with_samples({36})));
  EXPECT_TRUE(oracle.interesting(with_samples({37})));
  EXPECT_FALSE(oracle.interesting(with_samples({36})));
  EXPECT_EQ(world.trials.load(), 2);
  EXPECT_EQ(oracle.stats().trials, 2);
  EXPECT_EQ(oracle.stats().cached, 2);
  ASSERT_NE(oracle.matching_run(with_samples({37})), nullptr);
  EXPECT_EQ(oracle.matching_run(with_samples({36})), nullptr);
}

TEST_F(OracleTest, AFlakyTargetGetsRepeatsAndStopsAtTheFirstMatch) {
  // Fails on its third run only: one trial would call it uninteresting.
  world.fails = [](const TrialConfig&, int before) { return before == 2; };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 0.5);
  EXPECT_EQ(oracle.repeats(), 5);  // 0.5^5 <= 1 - 0.95
  TrialConfig c = with_samples({1, 2});
  EXPECT_TRUE(oracle.interesting(c));
  EXPECT_EQ(world.runs_of(c), 3);  // stopped at the match
  world.fails = [](const TrialConfig&, int) { return false; };
  TrialConfig d = with_samples({3});
  EXPECT_FALSE(oracle.interesting(d));
  EXPECT_EQ(world.runs_of(d), 5);  // every repeat before calling it uninteresting
}

TEST_F(OracleTest, ResumeReplaysFinishedTrialsWithoutRunningThem) {
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, options(), journal, nullptr, world.runner());
    oracle.set_target(target_signature(), 1.0);
    oracle.interesting(with_samples({37}));
    oracle.interesting(with_samples({1}));
  }
  Synthetic fresh;
  fresh.fails = world.fails;
  Journal journal(dir.journal(), true);
  Oracle oracle(spec, options(), journal, nullptr, fresh.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_TRUE(oracle.interesting(with_samples({37})));
  EXPECT_FALSE(oracle.interesting(with_samples({1})));
  EXPECT_EQ(fresh.trials.load(), 0);
  EXPECT_EQ(oracle.stats().replayed, 2);
  EXPECT_FALSE(oracle.interesting(with_samples({2})));  // new: runs
  EXPECT_EQ(fresh.trials.load(), 1);
}

TEST_F(OracleTest, AFreshRunsTextIsTheTextItsReplayWillRead) {
  // match.regex must see the same text either way: a rank's bytes that are not UTF-8 are
  // replaced in the journal, so they are replaced in a fresh record too.
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  world.signature.exception = std::string("Bad\xff\xfe") + "Error";
  std::string fresh_text;
  Signature target;
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, options(), journal, nullptr, world.runner());
    const RunRecord first = oracle.run(with_samples({37}));  // as escalation finds the target
    ASSERT_TRUE(first.signature.has_value());
    target = *first.signature;
    oracle.set_target(target, 1.0);
    ASSERT_TRUE(oracle.interesting(with_samples({37, 38})));
    fresh_text = oracle.matching_run(with_samples({37, 38}))->text;
  }
  EXPECT_EQ(fresh_text.find('\xff'), std::string::npos);
  Journal journal(dir.journal(), true);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  const RunRecord replayed = oracle.run(with_samples({37}));
  ASSERT_TRUE(replayed.signature.has_value());
  EXPECT_EQ(replayed.signature->to_string(), target.to_string());
  oracle.set_target(*replayed.signature, 1.0);
  ASSERT_TRUE(oracle.interesting(with_samples({37, 38})));
  EXPECT_EQ(oracle.matching_run(with_samples({37, 38}))->text, fresh_text);
  EXPECT_EQ(oracle.stats().replayed, 2);
  EXPECT_TRUE(
      oracle.interesting(with_samples({37, 39})));  // a fresh run matches the replayed target
}

TEST_F(OracleTest, ABudgetStopsTrialsAndSaysSo) {
  world.fails = [](const TrialConfig&, int) { return false; };
  OracleOptions o = options();
  o.max_trials = 2;
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, o, journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  oracle.interesting(with_samples({1}));
  oracle.interesting(with_samples({2}));
  EXPECT_FALSE(oracle.budget_hit());
  EXPECT_TRUE(oracle.exhausted());
  EXPECT_FALSE(oracle.interesting(with_samples({3})));
  EXPECT_TRUE(oracle.budget_hit());
  EXPECT_EQ(world.trials.load(), 2);
}

TEST_F(OracleTest, InfraIsRetriedAndNeverCountedAsAnAnswer) {
  world.status_override = [](const TrialConfig&, int before) {
    return before < 2 ? TrialStatus::Infra : TrialStatus::Pass;
  };
  world.fails = [](const TrialConfig&, int) { return true; };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_TRUE(oracle.interesting(with_samples({5})));
  EXPECT_EQ(world.trials.load(), 3);
  EXPECT_EQ(oracle.stats().trials, 1);  // one answer, after two infra retries
}

TEST_F(OracleTest, AnInterruptedTrialThrowsAndIsNotJournaled) {
  world.status_override = [](const TrialConfig& c, int) {
    return has_37(c) ? TrialStatus::Interrupted : TrialStatus::Pass;
  };
  world.fails = [](const TrialConfig&, int) { return false; };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_FALSE(oracle.interesting(with_samples({1})));
  EXPECT_THROW(oracle.interesting(with_samples({37})), Interrupted);
  std::ifstream in(dir.journal());
  std::string line;
  int trials = 0;
  while (std::getline(in, line)) trials += line.find("\"type\":\"trial\"") != std::string::npos;
  EXPECT_EQ(trials, 1);
}

TEST_F(OracleTest, ADifferentFailureIsNotInteresting) {
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  world.other_failure = [](const TrialConfig&) { return true; };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_FALSE(oracle.interesting(with_samples({1})));
  EXPECT_EQ(oracle.stats().failed, 1);
  EXPECT_TRUE(oracle.interesting(with_samples({37})));
}

TEST_F(OracleTest, SpeculativeTrialsUseFreeSlotsAndMootOnesAreCancelled) {
  world.fails = [](const TrialConfig&, int) { return false; };
  TrialConfig a = with_samples({1}), b = with_samples({2}), c = with_samples({3}),
              slow = with_samples({4});
  world.duration_ms = [&](const TrialConfig& t) {
    // `a` lasts long enough for the three speculative trials to start beside it under load.
    if (t.canonical() == slow.canonical()) return 5000;
    return t.canonical() == a.canonical() ? 300 : 30;
  };
  OracleOptions o = options();
  o.jobs = 4;
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, o, journal, nullptr, world.runner());
    oracle.set_target(target_signature(), 1.0);
    EXPECT_FALSE(oracle.interesting(a, {b, c, slow}));
    EXPECT_EQ(world.peak.load(), 4);           // the question and three speculative trials at once
    EXPECT_FALSE(oracle.interesting(b, {c}));  // its speculative trial answers: no new one
    EXPECT_FALSE(oracle.interesting(c));
    EXPECT_EQ(oracle.stats().trials, 3);  // `slow` is still running, now unwanted
  }
  EXPECT_EQ(world.cancelled.load(), 1);
  std::ifstream in(dir.journal());
  std::string line;
  int trials = 0;
  while (std::getline(in, line)) trials += line.find("\"type\":\"trial\"") != std::string::npos;
  EXPECT_EQ(trials, 3);  // a cancelled trial is never journaled: it had no answer
}

TEST_F(OracleTest, AnInterruptDuringABatchRecordsTheTrialsThatFinished) {
  world.fails = [](const TrialConfig&, int) { return false; };
  world.status_override = [](const TrialConfig& c, int) {
    return has_37(c) ? TrialStatus::Interrupted : TrialStatus::Pass;
  };
  world.duration_ms = [](const TrialConfig& c) { return has_37(c) ? 200 : 10; };
  OracleOptions o = options();
  o.jobs = 2;
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, o, journal, nullptr, world.runner());
    oracle.set_target(target_signature(), 1.0);
    EXPECT_THROW(oracle.interesting(with_samples({37}), {with_samples({5})}), Interrupted);
  }
  Journal journal(dir.journal(), true);
  int trials = 0;
  for (const auto& e : journal.loaded())
    if (e.value("type", "") == "trial") {
      ++trials;
      EXPECT_EQ(e["config"]["samples"], "5");
    }
  EXPECT_EQ(trials, 1);
}

TEST_F(OracleTest, ARecheckGivesEveryRejectionFreshRepeats) {
  world.fails = [](const TrialConfig&, int) { return false; };
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, options(), journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 0.5);  // 5 repeats
  const TrialConfig no = with_samples({4}), yes = with_samples({5});
  world.fails = [&](const TrialConfig& c, int) { return c.canonical() == yes.canonical(); };
  EXPECT_FALSE(oracle.interesting(no));
  EXPECT_TRUE(oracle.interesting(yes));
  EXPECT_EQ(world.runs_of(no), 5);
  oracle.recheck_rejections();
  EXPECT_FALSE(oracle.known(no).has_value());               // a "no" needs its repeats again
  EXPECT_EQ(oracle.known(yes), std::optional<bool>(true));  // a match stays a match
  world.fails = [&](const TrialConfig& c, int before) {
    return before == 7 || c.canonical() == yes.canonical();
  };
  EXPECT_TRUE(oracle.interesting(no));  // the third fresh trial fails
  EXPECT_EQ(world.runs_of(no), 8);
  EXPECT_EQ(world.runs_of(yes), 1);
}

TEST_F(OracleTest, AFlakyQuestionRunsItsRepeatsSideBySide) {
  world.fails = [](const TrialConfig&, int) { return false; };
  world.sleep_ms = 20;
  OracleOptions o = options();
  o.jobs = 3;
  Journal journal(dir.journal(), false);
  Oracle oracle(spec, o, journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 0.5);  // 5 repeats
  EXPECT_FALSE(oracle.interesting(with_samples({9})));
  EXPECT_EQ(world.runs_of(with_samples({9})), 5);
  EXPECT_EQ(world.peak.load(), 3);
}

// Issue #19 (fuzz): a journal record with bad samples ('3k') threw out of the Oracle. A record
// that does not read back whole is dropped like a torn one, with a warning: its trial runs again.
TEST_F(OracleTest, MalformedJournalRecordsAreIgnoredWithAWarningAndRunAgain) {
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, options(), journal, nullptr, world.runner());
    oracle.set_target(target_signature(), 1.0);
    oracle.interesting(with_samples({37}));
    oracle.interesting(with_samples({1}));
    oracle.interesting(with_samples({2}));
  }
  std::vector<nlohmann::json> records;
  {
    std::ifstream in(dir.journal());
    for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(records.size(), 4u);  // the header, three trials
  records[1]["config"]["samples"] = "3k";
  records[2]["last_step"] = "twelve";
  records[3]["config"]["params"] = {{"steps", 1e300}};  // no integer: never converted
  {
    std::ofstream out(dir.journal(), std::ios::trunc);
    for (const auto& r : records) out << r.dump() << "\n";
  }
  Synthetic fresh;
  fresh.fails = world.fails;
  Journal journal(dir.journal(), true);
  Oracle oracle(spec, options(), journal, nullptr, fresh.runner());
  ASSERT_EQ(journal.warnings().size(), 3u);
  EXPECT_NE(journal.warnings()[0].find("journal.jsonl:2: trial.samples: "), std::string::npos)
      << journal.warnings()[0];
  EXPECT_NE(journal.warnings()[1].find("journal.jsonl:3: last_step: "), std::string::npos)
      << journal.warnings()[1];
  EXPECT_NE(journal.warnings()[2].find("journal.jsonl:4: steps: "), std::string::npos)
      << journal.warnings()[2];
  oracle.set_target(target_signature(), 1.0);
  EXPECT_TRUE(oracle.interesting(with_samples({37})));
  EXPECT_FALSE(oracle.interesting(with_samples({1})));
  EXPECT_EQ(fresh.trials.load(), 2);  // neither was replayed
  EXPECT_EQ(oracle.stats().replayed, 0);
}

// The trials the HTML trace draws are judged by the oracle's own rule, match.regex included,
// earlier sessions' trials first: a failure with the target's signature whose text the regex
// does not find is not the target.
TEST_F(OracleTest, TrialMarksAreJudgedWithTheRegexAcrossSessions) {
  world.fails = [](const TrialConfig& c, int) { return has_37(c); };
  world.crash = [](const TrialRequest& req) -> std::optional<Signature> {
    for (int64_t i : req.config.samples.indices())
      if (i == 5) {  // the target's signature in other words
        Signature s = target_signature();
        s.message = "other words";
        return s;
      }
    return std::nullopt;
  };
  OracleOptions o = options();
  o.regex = "planted";
  {
    Journal journal(dir.journal(), false);
    Oracle oracle(spec, o, journal, nullptr, world.runner());
    oracle.set_target(target_signature(), 1.0);
    EXPECT_TRUE(oracle.interesting(with_samples({37})));
    EXPECT_FALSE(oracle.interesting(with_samples({5})));
  }
  Journal journal(dir.journal(), true);
  Oracle oracle(spec, o, journal, nullptr, world.runner());
  oracle.set_target(target_signature(), 1.0);
  EXPECT_FALSE(oracle.interesting(with_samples({1})));  // a fresh trial, after the journal's
  const Signature target = target_signature();
  const std::vector<TrialMark> marks = oracle.trial_marks(&target);
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0].config.canonical(), with_samples({37}).canonical());
  EXPECT_EQ(marks[0].status, TrialStatus::Fail);
  EXPECT_TRUE(marks[0].target);
  EXPECT_EQ(marks[1].status, TrialStatus::Fail);
  EXPECT_FALSE(marks[1].target);
  EXPECT_EQ(marks[2].status, TrialStatus::Pass);
  EXPECT_FALSE(marks[2].target);
  for (const TrialMark& m : oracle.trial_marks(nullptr)) EXPECT_FALSE(m.target);
}
