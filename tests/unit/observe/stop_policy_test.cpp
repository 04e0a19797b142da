// StopPolicy on synthetic timelines: no clock, no process.
#include "observe/stop_policy.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

namespace {

StopPolicy policy() {
  return StopPolicy({/*grace_s=*/2, /*timeout_s=*/60, /*dump_wait_s=*/1.5});
}

StopDecision at(StopPolicy& p, double t, bool hung = false, bool interrupted = false,
                bool resource = false, bool cancelled = false, bool confirmed = true) {
  return p.decide({t, hung, interrupted, resource, cancelled, confirmed});
}

// A hang suspected (quiet for the threshold) but not yet confirmed.
StopDecision suspected(StopPolicy& p, double t) {
  return at(p, t, /*hung=*/true, false, false, false, /*confirmed=*/false);
}

void expect(const StopDecision& d, StopAction action, StopReason reason) {
  EXPECT_EQ(d.action, action);
  EXPECT_EQ(d.reason, reason);
}

}  // namespace

TEST(StopPolicy, ATrialLeftAloneRunsUntilItsTimeout) {
  StopPolicy p = policy();
  for (double t = 0; t <= 60; t += 0.5) expect(at(p, t), StopAction::None, StopReason::None);
  EXPECT_EQ(p.reason(), StopReason::None);
  expect(at(p, 60.1), StopAction::RequestStacks, StopReason::Timeout);
  expect(at(p, 61.0), StopAction::None, StopReason::None);  // waiting for the dumps
  expect(at(p, 61.6), StopAction::KillAll, StopReason::Timeout);
  expect(at(p, 70), StopAction::None, StopReason::None);
  EXPECT_EQ(p.reason(), StopReason::Timeout);
}

TEST(StopPolicy, AFailureStopsTheOthersAfterTheGrace) {
  StopPolicy p = policy();
  p.on_rank_failed(1.0);
  p.on_rank_failed(1.5);  // a later failure does not move the deadline
  expect(at(p, 2.9), StopAction::None, StopReason::None);
  expect(at(p, 3.0), StopAction::RequestStacks, StopReason::EarlyStop);
  expect(at(p, 4.5), StopAction::KillAll, StopReason::EarlyStop);
}

TEST(StopPolicy, SilenceAfterAFailureIsNotAHang) {
  StopPolicy p = policy();
  p.on_rank_failed(1.0);
  expect(at(p, 1.5, /*hung=*/true), StopAction::None, StopReason::None);
  expect(at(p, 3.0, /*hung=*/true), StopAction::RequestStacks, StopReason::EarlyStop);
}

TEST(StopPolicy, AHangAsksForStacksThenKills) {
  StopPolicy p = policy();
  expect(at(p, 7.0, /*hung=*/true), StopAction::RequestStacks, StopReason::Hang);
  // A failure seen while the dumps come in (faulthandler aborts) changes nothing.
  p.on_rank_failed(7.2);
  expect(at(p, 8.0, true), StopAction::None, StopReason::None);
  expect(at(p, 8.5, true), StopAction::KillAll, StopReason::Hang);
  EXPECT_EQ(p.reason(), StopReason::Hang);
}

TEST(StopPolicy, ASuspectedHangIsSampledOnceAndStoppedOnlyWhenConfirmed) {
  StopPolicy p = policy();
  expect(suspected(p, 5.0), StopAction::SampleStacks, StopReason::Hang);
  EXPECT_EQ(p.reason(), StopReason::None);  // the trial runs on
  for (double t = 5.5; t < 15; t += 0.5)
    expect(suspected(p, t), StopAction::None, StopReason::None);
  expect(at(p, 15.0, true), StopAction::RequestStacks, StopReason::Hang);
  expect(at(p, 16.5, true), StopAction::KillAll, StopReason::Hang);
}

TEST(StopPolicy, ProgressAfterASampleEndsTheSuspicion) {
  StopPolicy p = policy();
  expect(suspected(p, 5.0), StopAction::SampleStacks, StopReason::Hang);
  expect(at(p, 6.0), StopAction::None, StopReason::None);                  // a heartbeat: not hung
  expect(suspected(p, 11.0), StopAction::SampleStacks, StopReason::Hang);  // a new quiet spell
  EXPECT_EQ(p.reason(), StopReason::None);
}

TEST(StopPolicy, StacksReadFromOutsideNeedNoWait) {
  StopPolicy p = policy();
  p.on_stacks_collected();  // before any request: nothing happens
  expect(at(p, 1.0), StopAction::None, StopReason::None);
  StopPolicy q = policy();
  expect(at(q, 7.0, true), StopAction::RequestStacks, StopReason::Hang);
  q.on_stacks_collected();
  expect(at(q, 7.05, true), StopAction::KillAll, StopReason::Hang);
}

TEST(StopPolicy, AnInterruptKillsAtOnceEvenDuringAStackRequest) {
  StopPolicy p = policy();
  expect(at(p, 7.0, true), StopAction::RequestStacks, StopReason::Hang);
  expect(at(p, 7.1, true, /*interrupted=*/true), StopAction::KillAll, StopReason::Interrupt);
  expect(at(p, 7.2, true, true), StopAction::None, StopReason::None);
  expect(at(p, 9.0, true, true), StopAction::None, StopReason::None);
  EXPECT_EQ(p.reason(), StopReason::Interrupt);
}

TEST(StopPolicy, ACancellationKillsAtOnceAndAnInterruptStillWins) {
  StopPolicy p = policy();
  expect(at(p, 3.0), StopAction::None, StopReason::None);
  expect(at(p, 7.0, true), StopAction::RequestStacks, StopReason::Hang);
  expect(at(p, 7.1, true, false, false, /*cancelled=*/true), StopAction::KillAll,
         StopReason::Cancel);
  expect(at(p, 7.2, true, false, false, true), StopAction::None, StopReason::None);
  expect(at(p, 7.3, true, /*interrupted=*/true, false, true), StopAction::KillAll,
         StopReason::Interrupt);
  expect(at(p, 7.4, true, true, false, true), StopAction::None, StopReason::None);
  EXPECT_EQ(p.reason(), StopReason::Interrupt);
}

TEST(StopPolicy, AStartFailureKillsTheStartedRanks) {
  StopPolicy p = policy();
  p.on_start_failure();
  expect(at(p, 0.1), StopAction::KillAll, StopReason::StartFailure);
  expect(at(p, 0.2), StopAction::None, StopReason::None);
}

TEST(StopPolicy, AResourceLimitKillsWithoutWaitingForDumps) {
  StopPolicy p = policy();
  expect(at(p, 5.0, false, false, /*resource=*/true), StopAction::KillAll,
         StopReason::ResourceLimit);
  StopPolicy q = policy();
  expect(at(q, 61.0), StopAction::RequestStacks, StopReason::Timeout);
  expect(at(q, 61.1, false, false, true), StopAction::KillAll, StopReason::ResourceLimit);
}

TEST(StopReason, SpellsEveryReasonAndReadsItBack) {
  for (StopReason r : {StopReason::None, StopReason::EarlyStop, StopReason::Hang,
                       StopReason::Timeout, StopReason::Interrupt, StopReason::Cancel,
                       StopReason::StartFailure, StopReason::ResourceLimit})
    EXPECT_EQ(parse_stop_reason(to_string(r)), r) << to_string(r);
  EXPECT_STREQ(to_string(StopReason::EarlyStop), "early_stop");
  EXPECT_FALSE(parse_stop_reason("later"));
}
