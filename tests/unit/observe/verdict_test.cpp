// The trial's verdict from synthetic outcomes and diagnoses.
#include "observe/verdict.hpp"

#include <gtest/gtest.h>
#include <signal.h>

using namespace ddpbisect;

namespace {

RankRecord rank(int r, int exit_code, int sig = 0, StopReason by = StopReason::None) {
  RankRecord x;
  x.rank = r;
  x.exit_code = exit_code;
  x.signal = sig;
  x.killed_by = by;
  return x;
}

TrialOutcome two_ranks(RankRecord a, RankRecord b) {
  TrialOutcome o;
  o.ranks = {a, b};
  o.master_port = 29501;
  o.hang_threshold_s = 5.4;
  return o;
}

}  // namespace

TEST(Verdict, EveryRankExitingZeroPasses) {
  Verdict v = judge_trial(two_ranks(rank(0, 0), rank(1, 0)), {});
  EXPECT_EQ(v.status, TrialStatus::Pass);
  EXPECT_EQ(v.reason, "every rank exited 0");
}

TEST(Verdict, TheFirstFailedRankNamesTheFailure) {
  TrialOutcome o = two_ranks(rank(0, -1, SIGKILL, StopReason::EarlyStop), rank(1, -1, SIGSEGV));
  o.first_failure_rank = 1;
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Fail);
  EXPECT_EQ(v.reason, "rank 1 was killed by SIGSEGV");
  o.ranks[1] = rank(1, 3);
  EXPECT_EQ(judge_trial(o, {}).reason, "rank 1 exited with code 3");
}

TEST(Verdict, HangAndTimeoutAreFailuresWithTheirOwnReason) {
  TrialOutcome o =
      two_ranks(rank(0, -1, SIGKILL, StopReason::Hang), rank(1, -1, SIGKILL, StopReason::Hang));
  o.stop = StopReason::Hang;
  o.hang_evidence = "stacks";
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Fail);
  EXPECT_EQ(v.reason, "hang: no rank made progress for 5 s");
  o.stop = StopReason::Timeout;
  EXPECT_EQ(judge_trial(o, {"", "2m"}).reason, "trial timeout after 2m");
}

// A hang whose stacks show nothing (empty dumps, a teardown with no Python frame) is no evidence.
TEST(Verdict, AHangWithoutStacksIsNotJudged) {
  TrialOutcome o =
      two_ranks(rank(0, -1, SIGKILL, StopReason::Hang), rank(1, -1, SIGKILL, StopReason::Hang));
  o.stop = StopReason::Hang;
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Infra);
  EXPECT_NE(v.reason.find("no stack showed where any rank waited"), std::string::npos);
}

TEST(Verdict, ATimeoutWhileExitingIsAPassAndOneWhileProgressingIsNotJudged) {
  TrialOutcome o = two_ranks(rank(0, 0), rank(1, -1, SIGKILL, StopReason::Timeout));
  o.stop = StopReason::Timeout;
  o.timed_out_exiting = true;
  Verdict v = judge_trial(o, {"", "2m"});
  EXPECT_EQ(v.status, TrialStatus::Pass);
  EXPECT_NE(v.reason.find("every rank finished training"), std::string::npos);
  o.timed_out_exiting = false;
  o.timed_out_progressing = true;
  v = judge_trial(o, {"", "2m"});
  EXPECT_EQ(v.status, TrialStatus::Infra);
  EXPECT_NE(v.reason.find("still making progress"), std::string::npos);
}

TEST(Verdict, NotTheBugIsInfra) {
  TrialOutcome o = two_ranks(rank(0, -1, SIGKILL, StopReason::Timeout), rank(1, 1));
  o.stop = StopReason::Timeout;
  o.port_clash = true;
  Verdict v = judge_trial(o, {"", "2m"});
  EXPECT_EQ(v.status, TrialStatus::Infra);
  EXPECT_EQ(v.reason, "MASTER_PORT 29501 was taken (address already in use)");
  Verdict s =
      judge_trial(two_ranks(rank(0, 0), rank(1, -1)), {"rank 1: cannot run x: No such file", ""});
  EXPECT_EQ(s.status, TrialStatus::Infra);
  EXPECT_EQ(s.reason, "rank 1: cannot run x: No such file");
}

// A bind failure some process printed and recovered from (a torchrun agent that joins the store
// as a client) is not the trial's verdict: a pass stays a pass, a failure goes to the diagnosis.
TEST(Verdict, APortClashInTheLogsOfATrialThatEndedIsNotItsVerdict) {
  TrialOutcome o = two_ranks(rank(0, 0), rank(1, 0));
  o.port_clash = true;
  EXPECT_EQ(judge_trial(o, {}).status, TrialStatus::Pass);
  o = two_ranks(rank(0, 0), rank(1, 1));
  o.port_clash = true;
  o.first_failure_rank = 1;
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Fail);
  EXPECT_EQ(v.reason, "rank 1 exited with code 1");
}

TEST(Verdict, AnInterruptIsNeverJudged) {
  TrialOutcome o = two_ranks(rank(0, -1, SIGKILL, StopReason::Interrupt), rank(1, 1));
  o.first_failure_rank = 1;
  o.stop = StopReason::Interrupt;
  o.interrupt_signal = SIGINT;
  Verdict v = judge_trial(o, {"rank 1: cannot run", ""});
  EXPECT_EQ(v.status, TrialStatus::Interrupted);
  EXPECT_EQ(v.reason, "interrupted by SIGINT");
}

TEST(Verdict, AResourceLimitIsReportedAsSuch) {
  TrialOutcome o = two_ranks(rank(0, -1, SIGKILL, StopReason::ResourceLimit), rank(1, -1, SIGKILL));
  o.stop = StopReason::ResourceLimit;
  o.resource = ResourceFault{"limits.memory", "(64MB): the kernel's OOM killer ended 1 process", 1};
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Fail);
  EXPECT_EQ(v.reason,
            "resource limit: limits.memory (64MB): the kernel's OOM killer ended 1 process");
  Diagnosis d = resource_limit_diagnosis(*o.resource, Diagnosis{});
  EXPECT_TRUE(d.failed);
  EXPECT_EQ(d.signature.category, "resource_limit");
  EXPECT_EQ(d.signature.exception, "limits.memory");
  EXPECT_EQ(d.root.rank(), 1);
  EXPECT_EQ(refine_verdict(v, d, true).reason, v.reason);
}

TEST(Verdict, TheDiagnosisRefinesAFailure) {
  Verdict fail{TrialStatus::Fail, "rank 1 exited with code 1"};
  Diagnosis d;
  d.failed = true;
  d.root.origin.rank = 1;
  d.root.category = "infra";
  d.root.message = "The server socket has failed to listen on any local network address.";
  Verdict infra = refine_verdict(fail, d, true);
  EXPECT_EQ(infra.status, TrialStatus::Infra);
  EXPECT_EQ(infra.reason, "infrastructure: " + d.root.message);
  d.root.category = "python_exception";
  d.signature.category = "python_exception";
  d.signature.exception = "ValueError";
  d.signature.frame = "train.py:step";
  Verdict named = refine_verdict(fail, d, true);
  EXPECT_EQ(named.status, TrialStatus::Fail);
  EXPECT_EQ(named.reason, "rank 1: " + d.signature.to_string());
  EXPECT_EQ(refine_verdict({TrialStatus::Pass, "ok"}, d, true).status, TrialStatus::Pass);
}

// A launcher whose own traceback is the root cause while no rank ever ran (Debian's torchrun on
// Python 3.11 dies in its first lines): the job never started, which no reduction can change.
// Once a rank ran, the same diagnosis is the trial's failure, as any other.
TEST(Verdict, ALauncherThatFailsBeforeAnyRankRanIsNotTheJobsFailure) {
  TrialOutcome o = two_ranks(rank(0, 1), rank(1, 1));
  EXPECT_FALSE(a_rank_ran(o));
  Diagnosis d;
  d.failed = true;
  d.root.origin.process = "the launcher on node 0";
  d.root.category = "python_exception";
  d.root.exception = "AttributeError";
  d.root.message = "'NoneType' object has no attribute 'get'";
  d.signature.category = "python_exception";
  d.signature.exception = "AttributeError";
  d.signature.frame = "/usr/bin/torchrun:33";
  Verdict fail{TrialStatus::Fail, "a rank failed"};
  Verdict v = refine_verdict(fail, d, a_rank_ran(o));
  EXPECT_EQ(v.status, TrialStatus::Infra);
  EXPECT_TRUE(v.not_started);
  EXPECT_EQ(v.reason,
            "the job never started: the launcher on node 0 failed before any rank ran: "
            "AttributeError: 'NoneType' object has no attribute 'get' (at /usr/bin/torchrun:33)");
  TrialOutcome started = o;
  started.ranks[1].bytes = 12;  // rank 1 printed something: it ran
  EXPECT_TRUE(a_rank_ran(started));
  Verdict job = refine_verdict(fail, d, a_rank_ran(started));
  EXPECT_EQ(job.status, TrialStatus::Fail);
  EXPECT_FALSE(job.not_started);
  started = o;
  started.ranks[0].pid = 4242;
  EXPECT_TRUE(a_rank_ran(started));
  started = o;
  started.ranks[0].heartbeats = 1;
  EXPECT_TRUE(a_rank_ran(started));
  // A rank's own failure with no rank seen running is still the job's (the rank is named).
  d.root.origin.process.clear();
  d.root.origin.rank = 1;
  EXPECT_EQ(refine_verdict(fail, d, false).status, TrialStatus::Fail);
}

TEST(Verdict, ACancelledTrialIsNeverJudged) {
  TrialOutcome o;
  o.stop = StopReason::Cancel;
  o.ranks.push_back(RankRecord{});
  o.ranks.back().exit_code = 1;  // a failure seen before the cancellation does not count
  Verdict v = judge_trial(o, {});
  EXPECT_EQ(v.status, TrialStatus::Interrupted);
  EXPECT_EQ(v.reason, "cancelled: the reducer no longer needed its answer");
}
