// TrialCgroup on this host: as root a real group (skipped where none can be made).
#include "launch/cgroup.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "launch/rank_set.hpp"

using namespace ddpbisect;

TEST(TrialCgroup, KillsADescendantThatLeftTheProcessGroup) {
  const std::string token = random_token();
  TrialCgroup group = TrialCgroup::create("ddpbisect-unit-" + token, {});
  if (!group.contains()) GTEST_SKIP() << "no cgroup here: " << group.describe();
  ProcessSpec p{{"sh", "-c", "setsid sleep 30 & echo started"}, current_environment(), ""};
  p.env["DDPBISECT_TRIAL_TOKEN"] = token;
  p.join_cgroups = group.procs_files();
  {
    RankSet set({}, [] { return false; });
    StartResult started = set.start(p);
    ASSERT_TRUE(started.ok());
    // The set kills sh's process group when it ends: the sleeper must have left it first (on a
    // loaded machine the background child may not have run setsid yet when sh exits).
    auto left_the_group = [&] {
      for (pid_t pid : find_token(token))
        if (pid != started.child.pid && getpgid(pid) >= 0 && getpgid(pid) != started.child.pid)
          return true;
      return false;
    };
    for (int i = 0; i < 500 && !left_the_group(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(left_the_group()) << "the setsid'd sleeper did not start";
    while (set.any_running()) set.wait(0.1);
  }
  for (int i = 0; i < 500 && find_token(token).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(find_token(token).empty()) << "the setsid'd sleeper did not start";
  EXPECT_GE(group.kill_all(), 1);
  for (int i = 0; i < 500 && !find_token(token).empty(); ++i) {
    reap_orphans();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(find_token(token).empty()) << "the cgroup kill missed the sleeper";
  std::vector<std::string> dirs = group.dirs();
  group.remove();
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

TEST(TrialCgroup, CountsRefusedForksAgainstMaxProcs) {
  TrialCgroup group = TrialCgroup::create("ddpbisect-unit-" + random_token(), {std::nullopt, 4});
  if (!group.contains() || !group.unenforced().empty())
    GTEST_SKIP() << "no pids controller here: " << group.describe() << group.unenforced();
  ProcessSpec p{
      {"sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait"}, current_environment(), ""};
  p.join_cgroups = group.procs_files();
  RankSet set({}, [] { return false; });
  ASSERT_TRUE(set.start(p).ok());
  for (int i = 0; i < 100 && group.events().fork_refusals == 0; ++i) set.wait(0.02);
  EXPECT_GT(group.events().fork_refusals, 0);
  EXPECT_EQ(group.events().oom_kills, 0);
}
