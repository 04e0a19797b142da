#include "observe/hang_detector.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(Heartbeat, ParsesTheProtocolLine) {
  auto h =
      parse_heartbeat(R"(DDPBISECT_HEARTBEAT {"rank":1,"step":5,"t":12.5,"loss":0.25,"seq":9})");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rank, 1);
  EXPECT_EQ(h->step, 5);
  EXPECT_DOUBLE_EQ(*h->loss, 0.25);
  EXPECT_EQ(*h->seq, 9);
  EXPECT_TRUE(parse_heartbeat(R"([rank1]: DDPBISECT_HEARTBEAT {"step":2})"));  // prefixed
  EXPECT_FALSE(parse_heartbeat("DDPBISECT_HEARTBEAT not json"));
  EXPECT_FALSE(parse_heartbeat(R"(DDPBISECT_HEARTBEAT {"loss":1})"));  // no step
  EXPECT_FALSE(parse_heartbeat("step 5 loss 0.3"));
}

TEST(Activity, ParsesTheAgentsStateLines) {
  auto a = parse_activity(
      R"(DDPBISECT_STATE {"rank":1,"pid":42,"role":"rank","state":"collective","op":"barrier"})");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pid, 42);
  EXPECT_EQ(a->activity, Activity::Collective);
  auto e = parse_activity(R"([rank0]: DDPBISECT_STATE {"pid":7,"state":"exiting","error":true})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->activity, Activity::Exiting);
  EXPECT_TRUE(e->error);
  EXPECT_FALSE(parse_activity(R"(DDPBISECT_STATE {"pid":7,"state":"dancing"})"));
  EXPECT_FALSE(parse_activity("DDPBISECT_STATE {"));
  EXPECT_FALSE(parse_activity("state: exiting"));
}

namespace {
// A fixed threshold, and no startup allowance beyond it (the ranks of these tests have not
// started their distributed work).
HangOptions fixed(double s) {
  HangOptions o;
  o.fixed_threshold_s = s;
  o.startup_s = 0;
  return o;
}
ActivityLine told(pid_t pid, Activity a, bool error = false) {
  return {pid, a, error};
}
}  // namespace

TEST(HangDetector, DefaultThresholdIsItsFloorUntilStepsAreSlow) {
  HangDetector d(2, HangOptions{});
  d.on_start(0);
  EXPECT_DOUBLE_EQ(d.threshold(), 5.0);
  d.on_heartbeat(0, 0, 1.0);
  d.on_heartbeat(0, 1, 3.0);  // a 2 s step
  EXPECT_DOUBLE_EQ(d.threshold(), 10.0);
  d.on_heartbeat(0, 3, 4.0);  // two steps in 1 s do not lower the slowest
  EXPECT_DOUBLE_EQ(d.threshold(), 10.0);
  HangOptions learned;
  learned.floor_s = 12;  // the reduction saw the job pause 6 s in an earlier trial
  EXPECT_DOUBLE_EQ(HangDetector(1, learned).threshold(), 12.0);
}

TEST(HangDetector, HungOnlyWhenNoLiveRankProgresses) {
  HangDetector d(2, fixed(2.0));
  d.on_start(0);
  EXPECT_FALSE(d.hung(1.9));
  d.on_output(1, 1.5);
  EXPECT_TRUE(d.hung(3.6));   // rank 0 silent since 0, rank 1 since 1.5
  EXPECT_FALSE(d.hung(3.4));  // rank 1 still within the threshold
  d.on_exit(1);
  EXPECT_TRUE(d.hung(2.1));  // an exited rank does not count as progress
  d.on_exit(0);
  EXPECT_FALSE(d.hung(100));  // nobody alive: not a hang
}

TEST(HangDetector, CpuTimeCountsAsProgress) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.on_cpu(0, 1.00, 1.0);
  d.on_cpu(0, 1.50, 2.5);  // busy importing
  EXPECT_FALSE(d.hung(4.0));
  d.on_cpu(0, 1.50, 4.0);  // idle since 2.5
  EXPECT_TRUE(d.hung(4.6));
}

// An evaluation phase: no optimizer step, nothing printed, the CPU busy.
TEST(HangDetector, CpuTimeAfterHeartbeatsIsProgressOnCpuRanks) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.on_heartbeat(0, 0, 0.5);
  for (int i = 0; i <= 40; ++i) d.on_cpu(0, 1.0 + 0.25 * i, 1.0 + 0.25 * i);  // 10 s evaluating
  EXPECT_FALSE(d.hung(11.5));
  d.on_cpu(0, 11.0, 13.0);
  EXPECT_TRUE(d.hung(13.1));
}

// CUDA's synchronisation spins the CPU while it waits for a stuck kernel.
TEST(HangDetector, CpuTimeAfterHeartbeatsIsNotProgressOnCudaRanks) {
  HangOptions o = fixed(2.0);
  o.cpu_after_heartbeat = false;
  HangDetector d(1, o);
  d.on_start(0);
  d.on_cpu(0, 0.0, 0.0);
  d.on_cpu(0, 1.0, 1.0);  // importing: progress
  EXPECT_FALSE(d.hung(2.9));
  d.on_heartbeat(0, 0, 1.5);
  d.on_cpu(0, 2.0, 2.0);
  d.on_cpu(0, 5.0, 3.0);
  EXPECT_TRUE(d.hung(3.6));
}

TEST(HangDetector, AnIdlePollerIsNotProgress) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  // A launcher checking its workers: 1 ms of CPU every 250 ms.
  for (int i = 0; i <= 40; ++i) d.on_cpu(0, 0.001 * i, 0.25 * i);
  EXPECT_TRUE(d.hung(10.0));
}

TEST(HangDetector, SmallCpuSlicesAddUpOnALoadedMachine) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  // 10 ms of CPU per 100 ms sample (a tenth of a core): a rank still importing torch.
  for (int i = 1; i <= 40; ++i) d.on_cpu(0, 1.0 + 0.01 * (i - 1), 0.1 * i);
  EXPECT_FALSE(d.hung(4.1));
  d.on_cpu(0, 1.39, 6.5);  // then idle
  EXPECT_TRUE(d.hung(6.5));
}

TEST(HangDetector, ReadsAndWritesAreProgress) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.on_io(0, 1000, 0.5);
  d.on_io(0, 1000 + 4096, 1.5);  // a few small writes: not enough
  EXPECT_TRUE(d.hung(2.1));
  d.on_io(0, 1000 + (8 << 20), 2.5);  // a checkpoint being written
  EXPECT_FALSE(d.hung(4.0));
  EXPECT_TRUE(d.hung(4.6));
}

TEST(HangDetector, ARankThatFinishedTrainingIsNeverHung) {
  HangDetector d(2, fixed(2.0));
  d.on_start(0);
  d.on_activity(0, told(10, Activity::Exiting), 1.0);  // a slow atexit hook
  EXPECT_TRUE(d.finished(0));
  EXPECT_TRUE(d.hung(3.0));                             // rank 1 is still training, and quiet
  d.on_activity(1, told(11, Activity::Finished), 3.0);  // destroy_process_group()
  EXPECT_FALSE(d.hung(60.0));
  EXPECT_FALSE(d.any_training(60.0));
  EXPECT_FALSE(d.exiting_with_error(0));
  d.on_activity(1, told(11, Activity::Exiting, /*error=*/true), 4.0);
  EXPECT_TRUE(d.exiting_with_error(1));
}

TEST(HangDetector, ARankIsFinishedWhenEveryOneOfItsProcessesIs) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.on_activity(0, told(20, Activity::Exiting), 1.0);     // mp.spawn's first child
  d.on_activity(0, told(21, Activity::Collective), 1.0);  // its second, still waiting
  EXPECT_FALSE(d.finished(0));
  EXPECT_TRUE(d.hung(3.1));
  d.on_activity(0, told(21, Activity::Running), 3.2);  // left the collective: progress
  EXPECT_FALSE(d.hung(4.0));
}

TEST(HangDetector, AStackDumpIsNotProgress) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.mute(3.5);  // asked for stacks at 2.0
  d.on_output(0, 2.2);
  EXPECT_TRUE(d.hung(3.0));
  d.on_output(0, 3.6);
  EXPECT_FALSE(d.hung(4.0));
}

TEST(HangDetector, RemembersTheLongestPauseOfTheJob) {
  HangDetector d(2, HangOptions{});
  d.on_start(0);
  d.on_output(0, 1.0);
  d.on_output(1, 4.0);  // 3 s with no progress from anyone
  d.on_output(0, 4.5);
  EXPECT_DOUBLE_EQ(d.longest_pause(), 3.0);
  EXPECT_DOUBLE_EQ(d.quiet_for(5.5), 1.0);
}

// Importing from slow storage, reading a data set before the process group exists: a rank that
// has not started its distributed work waits on no peer.
TEST(HangDetector, ARankStillStartingHasItsStartupAllowance) {
  HangOptions o;
  o.fixed_threshold_s = 2.0;
  o.startup_s = 20.0;
  HangDetector d(2, o);
  d.on_start(0);
  EXPECT_FALSE(d.hung(10.0));
  d.on_heartbeat(0, 0, 1.0);  // rank 0 started; rank 1 is still importing
  EXPECT_FALSE(d.hung(10.0));
  EXPECT_TRUE(d.hung(20.1));
  ActivityLine rendezvous = told(5, Activity::Collective);
  rendezvous.age = 0.5;  // it entered init_process_group at 20.5, told at 21.0
  d.on_activity(1, rendezvous, 21.0);
  EXPECT_FALSE(d.hung(22.4));
  EXPECT_TRUE(d.hung(22.6));
  EXPECT_FALSE(d.hung(22.6, /*extra=*/5.0));  // not yet for the confirmation window
  EXPECT_TRUE(d.hung(27.6, 5.0));
}

TEST(HangDetector, WaitingOnStorageIsNotHung) {
  HangDetector d(1, fixed(2.0));
  d.on_start(0);
  d.on_io_wait(0, 1.5);  // a process of the rank in state D
  EXPECT_FALSE(d.hung(3.0));
  EXPECT_TRUE(d.hung(3.6));
}
