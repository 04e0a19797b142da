// AgentReport on lines torchrun 2.13 printed here (a ValueError on rank 2 of a 2x2 job, the agent
// of node 0) and on 1.13's form.
#include "observe/agent_report.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(AgentReport, ReadsTheFailureAsItHappensAndTheBanner) {
  AgentReport r;
  EXPECT_FALSE(
      r.line("W1130 07:26:30.608000 29162 torch/distributed/elastic/multiprocessing/"
             "api.py:1028] Sending process 29862 closing signal SIGTERM"));
  auto failed = r.line(
      "E1130 07:26:30.818000 29162 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
      "(exitcode: 1) local_rank: 0 (pid: 29854) of binary: /work/main/.venv/bin/python3");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->local_rank, 0);
  EXPECT_EQ(failed->exit_code, 1);
  EXPECT_EQ(failed->pid, 29854);
  for (const char* line :
       {"Failures:", "[1]:", "  time      : 2026-11-30_07:26:30", "  host      : localhost",
        "  rank      : 3 (local_rank: 1)", "  exitcode  : -15 (pid: 29862)  (SIGTERM)",
        "  error_file: <N/A>", "  traceback : Signal 15 (SIGTERM) received by PID 29862",
        "Root Cause (first observed failure):", "[0]:", "  rank      : 2 (local_rank: 0)",
        "  exitcode  : 1 (pid: 29854) ", "  error_file: <N/A>"})
    EXPECT_FALSE(r.line(line));
  auto ends = r.ends();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].rank, 3);
  EXPECT_EQ(ends[0].local_rank, 1);
  EXPECT_EQ(ends[0].signal, 15);
  EXPECT_EQ(ends[0].pid, 29862);
  EXPECT_TRUE(ends[0].stopped_by_agent);
  EXPECT_EQ(ends[1].rank, 2);
  EXPECT_EQ(ends[1].exit_code, 1);
  EXPECT_EQ(ends[1].signal, 0);
  EXPECT_FALSE(ends[1].stopped_by_agent);
}

TEST(AgentReport, AFailureLineWithoutABannerStillCounts) {
  AgentReport r;
  ASSERT_TRUE(
      r.line("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
             "local_rank: 1 (pid: 13341) of binary: /usr/bin/python3"));
  EXPECT_FALSE(
      r.line("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
             "local_rank: 1 (pid: 13341) of binary: /usr/bin/python3"))
      << "a failure is reported once";
  auto ends = r.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].rank, -1);
  EXPECT_EQ(ends[0].local_rank, 1);
  EXPECT_EQ(ends[0].signal, 9);
}

TEST(AgentReport, IgnoresTheRanksOwnLinesThatLookAlike) {
  AgentReport r;
  EXPECT_FALSE(r.line("rank 1 step 3 loss 0.5"));
  EXPECT_FALSE(r.line("  exitcode  : 1 (pid: 5)"));  // no banner entry before it
  EXPECT_FALSE(r.line("failed (exitcode: x) local_rank: y"));
  EXPECT_TRUE(r.ends().empty());
}
