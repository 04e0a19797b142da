// RankSet on tiny real commands, in the manner of ninja's subprocess_test.cc.
#include "launch/rank_set.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "common/interrupt.hpp"
#include "launch/process_tree.hpp"

using namespace ddpbisect;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ProcessSpec sh(const std::string& script, const std::string& token = "") {
  ProcessSpec p{{"sh", "-c", script}, current_environment(), ""};
  if (!token.empty()) p.env["DDPBISECT_TRIAL_TOKEN"] = token;
  return p;
}

struct Collected {
  std::map<size_t, std::string> out, err;
  RankSet::OutputSink sink() {
    return [this](size_t i, Stream s, const char* d, size_t n) {
      (s == Stream::Out ? out : err)[i].append(d, n);
    };
  }
};

void run_to_end(RankSet& set, double limit_s = 10) {
  auto t0 = std::chrono::steady_clock::now();
  while (set.any_running() && since(t0) < limit_s) set.wait(0.1);
  set.drain(0.5);
}

}  // namespace

TEST(RankSet, SeparatesStreamsAndRecordsTheExitCode) {
  Collected c;
  RankSet set(c.sink(), [] { return false; });
  ASSERT_TRUE(set.start(sh("echo out; echo err >&2; exit 3")).ok());
  run_to_end(set);
  EXPECT_FALSE(set.running(0));
  EXPECT_EQ(set.status(0).exit_code, 3);
  EXPECT_EQ(set.status(0).signal, 0);
  EXPECT_EQ(c.out[0], "out\n");
  EXPECT_EQ(c.err[0], "err\n");
}

TEST(RankSet, RecordsTheSignalThatEndedAChild) {
  RankSet set({}, [] { return false; });
  ASSERT_TRUE(set.start(sh("kill -SEGV $$")).ok());
  run_to_end(set);
  EXPECT_EQ(set.status(0).signal, SIGSEGV);
  EXPECT_EQ(set.status(0).shell_code(), 128 + SIGSEGV);
}

TEST(RankSet, WatchesSeveralChildrenAndReportsEachExitOnce) {
  Collected c;
  RankSet set(c.sink(), [] { return false; });
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(set.start(sh("sleep 0.$((2 - " + std::to_string(i) + ")); echo " +
                             std::to_string(i) + "; exit " + std::to_string(i)))
                    .ok());
  std::map<size_t, int> exits;
  auto t0 = std::chrono::steady_clock::now();
  while (set.any_running() && since(t0) < 10)
    for (size_t i : set.wait(0.1).exited) exits[i]++;
  set.drain(0.5);
  ASSERT_EQ(exits.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(exits[i], 1);
    EXPECT_EQ(set.status(i).exit_code, static_cast<int>(i));
    EXPECT_EQ(c.out[i], std::to_string(i) + "\n");
  }
}

TEST(RankSet, AProgramThatCannotStartAddsNoChild) {
  RankSet set({}, [] { return false; });
  StartResult r = set.start({{"no-such-program-ddpbisect"}, current_environment(), ""});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("cannot run no-such-program-ddpbisect"), std::string::npos) << r.error;
  EXPECT_EQ(set.size(), 0u);
}

TEST(RankSet, AnExitWakesTheWaitBeforeItsTimeout) {
  RankSet set({}, [] { return false; });
  // The child closes its pipes first, so only the exit itself can end the wait early.
  ASSERT_TRUE(set.start(sh("exec >/dev/null 2>&1; sleep 0.2")).ok());
  auto t0 = std::chrono::steady_clock::now();
  while (set.any_running() && since(t0) < 10) set.wait(5);
  EXPECT_LT(since(t0), 2.0) << "the exit did not end the wait";
}

TEST(RankSet, AnInterruptEndsTheWaitAtOnce) {
  install_interrupt_handlers();
  RankSet set({});  // the driver's interrupt flag
  ASSERT_TRUE(set.start(sh("sleep 30")).ok());
  const pthread_t waiter = pthread_self();
  std::thread signaller([waiter] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pthread_kill(waiter, SIGINT);
  });
  auto t0 = std::chrono::steady_clock::now();
  RankSet::Events ev = set.wait(20);
  double took = since(t0);
  signaller.join();
  EXPECT_TRUE(ev.stopped);
  EXPECT_LT(took, 5.0) << "the signal did not interrupt the wait";
  EXPECT_TRUE(set.running(0));
  clear_interrupt();  // the tests after this one in the same process
}

TEST(RankSet, DestroyingTheSetKillsAndReapsEveryChild) {
  const std::string token = random_token();
  {
    RankSet set({}, [] { return false; });
    ASSERT_TRUE(set.start(sh("sleep 30", token)).ok());
    ASSERT_TRUE(set.start(sh("sleep 30", token)).ok());
    set.wait(0.05);
    EXPECT_GE(find_token(token).size(), 2u);
  }
  EXPECT_TRUE(find_token(token).empty()) << "a child outlived its set";
}

TEST(RankSet, DrainStopsWaitingForAPipeAGrandchildHolds) {
  const std::string token = random_token();
  Collected c;
  RankSet set(c.sink(), [] { return false; });
  ASSERT_TRUE(set.start(sh("sleep 30 & echo parent done", token)).ok());
  auto t0 = std::chrono::steady_clock::now();
  while (set.any_running() && since(t0) < 10) set.wait(0.1);
  auto t1 = std::chrono::steady_clock::now();
  set.drain(0.3);
  EXPECT_LT(since(t1), 2.0);
  EXPECT_EQ(c.out[0], "parent done\n");
  sweep_token(token);
  EXPECT_TRUE(find_token(token).empty());
}

TEST(RankSet, AFloodingChildDoesNotStarveTheWait) {
  size_t bytes = 0;
  RankSet set([&](size_t, Stream, const char*, size_t n) { bytes += n; }, [] { return false; });
  ASSERT_TRUE(set.start(sh("exec cat /dev/zero")).ok());
  auto t0 = std::chrono::steady_clock::now();
  set.wait(0.5);
  EXPECT_LT(since(t0), 0.5) << "one wait read without bound";
  EXPECT_GT(bytes, 0u);
  EXPECT_LE(bytes, size_t{4} * (64 << 10));
}

// /proc files of a process are read whole while it lives, and as "" once it is gone: a process
// that exits mid-read ends the read (ESRCH) instead of throwing out of the sweep or the
// stack request that was reading it.
TEST(ProcFiles, AProcessThatIsGoneReadsAsEmptyNeverAsAThrow) {
  const pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  const std::string dir = "/proc/" + std::to_string(child);
  std::string cmdline;
  for (int i = 0; i < 500 && cmdline.rfind("sleep", 0) != 0; ++i) {  // until it has exec'd
    cmdline = read_kernel_file(dir + "/cmdline");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(cmdline, std::string("sleep\0"
                                 "30\0",
                                 9));
  EXPECT_NE(read_kernel_file(dir + "/status").find("Name:\tsleep"), std::string::npos);
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(read_kernel_file(dir + "/cmdline"), "");
  EXPECT_EQ(read_kernel_file("/nonexistent/ddpbisect/file"), "");
}
