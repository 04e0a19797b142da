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

TEST(HangDetector, DefaultThresholdIsFiveSecondsUntilStepsAreSlow) {
  HangDetector d(2, std::nullopt);
  d.on_start(0);
  EXPECT_DOUBLE_EQ(d.threshold(), 5.0);
  d.on_heartbeat(0, 0, 1.0);
  d.on_heartbeat(0, 1, 3.0);  // a 2 s step
  EXPECT_DOUBLE_EQ(d.threshold(), 10.0);
  d.on_heartbeat(0, 3, 4.0);  // two steps in 1 s do not lower the slowest
  EXPECT_DOUBLE_EQ(d.threshold(), 10.0);
}

TEST(HangDetector, HungOnlyWhenNoLiveRankProgresses) {
  HangDetector d(2, 2.0);
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
  HangDetector d(1, 2.0);
  d.on_start(0);
  d.on_cpu(0, 1.00, 1.0);
  d.on_cpu(0, 1.50, 2.5);  // busy importing
  EXPECT_FALSE(d.hung(4.0));
  d.on_cpu(0, 1.50, 4.0);  // idle since 2.5
  EXPECT_TRUE(d.hung(4.6));
}

TEST(HangDetector, CpuTimeIsNotProgressOnceARankSendsHeartbeats) {
  HangDetector d(1, 2.0);
  d.on_start(0);
  d.on_heartbeat(0, 0, 0.5);
  d.on_cpu(0, 1.0, 1.0);
  d.on_cpu(0, 5.0, 3.0);  // a library thread spinning after the rank stopped beating
  EXPECT_TRUE(d.hung(2.6));
}

TEST(HangDetector, SmallCpuSlicesAddUpOnALoadedMachine) {
  HangDetector d(1, 2.0);
  d.on_start(0);
  d.on_cpu(0, 1.000, 0.1);
  // 10 ms of CPU per 100 ms sample: each sample alone is under the 20 ms mark, together they are
  // a rank still importing torch.
  for (int i = 2; i <= 40; ++i) d.on_cpu(0, 1.0 + 0.01 * (i - 1), 0.1 * i);
  EXPECT_FALSE(d.hung(4.1));
  d.on_cpu(0, 1.39, 6.5);  // then idle
  EXPECT_TRUE(d.hung(6.5));
}

// torchrun: the agent's CPU time counts until its worker is found; the worker starts with less
// CPU time than the agent had spent, and its own must count from its own start.
TEST(HangDetector, AnotherProcessStartsItsOwnCpuCount) {
  HangDetector d(1, 2.0);
  d.on_start(0);
  d.on_cpu(0, 0.5, 0.5);  // the agent importing
  d.on_cpu(0, 2.5, 2.5);
  d.on_process_changed(0);  // the worker, found: 0.4 s of CPU so far
  d.on_cpu(0, 0.4, 2.75);
  for (int i = 1; i <= 12; ++i) d.on_cpu(0, 0.4 + 0.1 * i, 2.75 + 0.25 * i);  // busy to 5.75
  EXPECT_FALSE(d.hung(6.0));
  d.on_cpu(0, 1.6, 8.0);  // then idle
  EXPECT_TRUE(d.hung(8.0));
}
