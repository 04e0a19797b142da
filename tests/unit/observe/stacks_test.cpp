// Which process of a rank is asked for its stack, and how: synthetic facts, then real trees of
// tiny commands (a shell wrapping Python, a Python that catches the agent's signal).
#include "observe/stacks.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "launch/process.hpp"
#include "launch/rank_set.hpp"

using namespace ddpbisect;

namespace {

ProcessFacts facts(std::string exe, std::vector<std::string> argv, uint64_t caught = 0) {
  return {1, std::move(exe), std::move(argv), caught};
}

constexpr uint64_t bit(int sig) {
  return uint64_t{1} << (sig - 1);
}

}  // namespace

TEST(StackSignal, EachKindOfProcessIsAskedInItsOwnWay) {
  const auto py = facts("/usr/bin/python3.11", {"python3", "train.py"});
  EXPECT_EQ(stack_signal_for(py, false, SIGUSR2), SIGABRT);
  EXPECT_EQ(stack_signal_for(py, /*under_python=*/true, SIGUSR2), 0);  // a forked worker
  auto agent = py;
  agent.caught = bit(SIGUSR2) | bit(SIGINT);
  EXPECT_EQ(stack_signal_for(agent, false, SIGUSR2), SIGUSR2);
  EXPECT_EQ(stack_signal_for(agent, true, SIGUSR2), SIGUSR2);  // the agent answers in helpers
  EXPECT_EQ(stack_signal_for(agent, false, 34), SIGABRT);      // another number than it caught
  EXPECT_EQ(stack_signal_for(facts("/opt/ddpbisect/ddpbisect-worker", {"w"}), false, 12), SIGUSR1);
  EXPECT_EQ(stack_signal_for(facts("/usr/bin/dash", {"sh", "-c", "python3 t.py"}), false, 12), 0);
  EXPECT_EQ(stack_signal_for(facts("/usr/bin/env", {"env", "A=1", "python3"}), false, 12), 0);
  EXPECT_EQ(stack_signal_for(facts("/usr/bin/bash", {"bash", "run.sh"}), false, 12), 0);
  EXPECT_EQ(stack_signal_for(facts("/usr/bin/sleep", {"sleep", "9"}), false, 12), 0);
  const auto conda = facts("/opt/conda/bin/python3.12",
                           {"/opt/conda/bin/python", "/opt/conda/bin/conda", "run", "python"});
  EXPECT_EQ(stack_signal_for(conda, false, 12), 0);
}

TEST(StackSignal, TheAgentsSignalComesFromTheRanksEnvironment) {
  EXPECT_EQ(agent_stack_signal({}), SIGUSR2);
  EXPECT_EQ(agent_stack_signal({{"DDPBISECT_STACK_SIGNAL", "34"}}), 34);
  EXPECT_EQ(agent_stack_signal({{"DDPBISECT_STACK_SIGNAL", "usr2"}}), SIGUSR2);
  EXPECT_EQ(agent_stack_signal({{"DDPBISECT_STACK_SIGNAL", "99"}}), SIGUSR2);
}

TEST(StackSignal, AShellWrappingPythonAsksOnlyThePythonAndOnlyOnce) {
  RankSet set({}, [] { return false; });
  // sh -c runs python3, whose own child (a forked helper) must not be aborted.
  const std::string script =
      "python3 -c 'import os, time\nif os.fork() == 0: time.sleep(30)\ntime.sleep(30)'; true";
  ASSERT_TRUE(set.start({{"sh", "-c", script}, current_environment(), ""}).ok());
  std::vector<std::pair<pid_t, int>> got;
  // Until python3 runs and has forked its helper (an event, not a time: on a loaded machine
  // python's start alone can take seconds).
  for (int i = 0; i < 600; ++i) {
    got = stack_requests(set.pid(0), SIGUSR2);
    if (got.size() == 1 && got[0].first != set.pid(0) && !child_pids(got[0].first).empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].first, set.pid(0));
  EXPECT_EQ(got[0].second, SIGABRT);
  EXPECT_EQ(process_facts(got[0].first).exe.find("python"),
            process_facts(got[0].first).exe.rfind('/') + 1);
  EXPECT_GE(child_pids(got[0].first).size(), 1u);
}

TEST(StackSignal, APythonThatCatchesTheAgentsSignalGetsIt) {
  RankSet set({}, [] { return false; });
  const std::string code =
      "import signal, time\nsignal.signal(34, lambda *a: None)\ntime.sleep(30)";
  ASSERT_TRUE(set.start({{"python3", "-c", code}, current_environment(), ""}).ok());
  std::vector<std::pair<pid_t, int>> got;
  for (int i = 0; i < 100; ++i) {  // until the handler is installed
    got = stack_requests(set.pid(0), 34);
    if (!got.empty() && got[0].second == 34) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], std::make_pair(set.pid(0), 34));
  EXPECT_EQ(stack_requests(set.pid(0), SIGUSR2)[0].second, SIGABRT);  // not the signal it caught
}
