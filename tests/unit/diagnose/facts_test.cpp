#include "diagnose/facts.hpp"

#include <gtest/gtest.h>

#include "common/text.hpp"

using namespace ddpbisect;

namespace {
Facts read(const std::string& text, std::optional<int> rank = std::nullopt) {
  Facts facts;
  FactReader r("console.log", facts);
  long long order = 0;
  LineCleaner cleaner;
  for (const auto& physical : split(text, '\n')) {
    std::vector<CleanLine> lines;
    cleaner.clean(physical, "", lines);
    for (const auto& l : lines) {
      Origin o;
      o.rank = l.rank ? l.rank : rank;
      o.local_rank = l.local_rank;
      o.pid = l.pid;
      r.line(l, o, order++);
    }
  }
  return facts;
}
}  // namespace

TEST(Facts, TorchrunBannerEntries) {
  Facts f = read(
      "Failures:\n"
      "[1]:\n"
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -6 (pid: 12670)  (SIGABRT)\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  host      : node017\n"
      "  rank      : 13 (local_rank: 5)\n"
      "  exitcode  : -9 (pid: 12671)\n"
      "  traceback : Signal 9 (SIGKILL) received by PID 12671\n"
      "============================================================\n");
  ASSERT_EQ(f.reports.size(), 2u);
  EXPECT_EQ(f.reports[0].origin.rank, 0);
  EXPECT_EQ(f.reports[0].signal, 6);
  EXPECT_FALSE(f.reports[0].root_cause);
  EXPECT_EQ(f.reports[1].origin.rank, 13);
  EXPECT_EQ(f.reports[1].origin.host, "node017");
  EXPECT_EQ(f.reports[1].origin.pid, 12671);
  EXPECT_EQ(f.reports[1].signal, 9);
  EXPECT_TRUE(f.reports[1].root_cause);
  EXPECT_EQ(f.local_to_global["console.log"][5], 13);
}

// torch 1.10's banner ("Root Cause:", "rank: N" with no padding), cut off before its closing
// rule: the entry still counts once the file ends.
TEST(Facts, OldBannerEntryCutOffBeforeItsRule) {
  Facts facts;
  FactReader r("console.log", facts);
  long long order = 0;
  LineCleaner cleaner;
  for (const char* text : {"Root Cause:", "[0]:", "  time: 2021-08-26_17:12:07",
                           "  rank: 2 (local_rank: 0)", "  exitcode: 1 (pid: 8045)", "  msg:"}) {
    std::vector<CleanLine> lines;
    cleaner.clean(text, "", lines);
    for (const auto& l : lines) r.line(l, Origin{}, order++);
  }
  EXPECT_TRUE(facts.reports.empty());
  r.finish(order);
  ASSERT_EQ(facts.reports.size(), 1u);
  EXPECT_EQ(facts.reports[0].origin.rank, 2);
  EXPECT_EQ(facts.reports[0].exit_code, 1);
  EXPECT_TRUE(facts.reports[0].root_cause);
  EXPECT_TRUE(r.idle());
}

TEST(Facts, LaunchersOwnLines) {
  Facts f = read(
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 5 "
      "(pid: 22) of binary: /usr/bin/python3\n"
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 21 closing signal "
      "SIGTERM\n"
      "srun: error: gpu-node-01: task 3: Out Of Memory\n"
      "mpirun noticed that process rank 3 with PID 0 on node w0 exited on signal 9 (Killed).\n"
      "[2023-04-07 13:09:33,220] [ERROR] [launch.py:324:sigkill_handler] ['python', "
      "'--local_rank=1'] exits with return code = -9\n"
      "sigkill: line 2: 13622 Killed                  RANK=$r python3 train.py\n"
      "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
      "SIGKILL\n");
  ASSERT_EQ(f.reports.size(), 7u);
  EXPECT_EQ(f.reports[0].origin.local_rank, 5);
  EXPECT_EQ(f.reports[0].signal, 9);
  EXPECT_TRUE(f.reports[1].sent);
  EXPECT_EQ(f.reports[2].origin.rank, 3);
  EXPECT_TRUE(f.reports[2].memory);
  EXPECT_EQ(f.reports[3].origin.rank, 3);
  EXPECT_EQ(f.reports[3].signal, 9);
  EXPECT_TRUE(f.reports[4].ambiguous);  // the last spawned command line, not the failed one
  EXPECT_FALSE(f.reports[4].origin.local_rank);
  EXPECT_EQ(f.reports[5].origin.pid, 13622);
  EXPECT_EQ(f.reports[5].signal, 9);
  EXPECT_EQ(f.reports[6].origin.rank, 1);
}

TEST(Facts, ABannerEntryWithoutItsHeaderAndTorch19sNoErrorFileReport) {
  // A post that kept only the root cause's fields.
  Facts f = read(
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -11 (pid: 6421)\n"
      "  traceback : Signal 11 (SIGSEGV) received by PID 6421\n"
      "======================================================\n"
      "Child process 2814 (local_rank 1) FAILED (exitcode 1)\n");
  ASSERT_EQ(f.reports.size(), 2u);
  EXPECT_EQ(f.reports[0].origin.rank, 0);
  EXPECT_EQ(f.reports[0].signal, 11);
  EXPECT_EQ(f.reports[0].origin.pid, 6421);
  EXPECT_EQ(f.reports[1].origin.local_rank, 1);
  EXPECT_EQ(f.reports[1].origin.pid, 2814);
  EXPECT_EQ(f.reports[1].exit_code, 1);
}

TEST(Facts, WherEachRankWasAmongTheCollectives) {
  Facts f = read(
      "[rank3]:[E1113 04:17:59.230 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=3, NumelOut=3, "
      "Timeout(ms)=600000) ran for 600062 milliseconds before timing out.\n"
      "[rank7]:[E1113 04:17:59.241 ProcessGroupNCCL.cpp:1681] [PG ID 0 PG GUID 0(default_pg) Rank "
      "7] Received a dump signal due to a collective timeout from  rank 3. Last enqueued NCCL "
      "work: 1579, last completed NCCL work: 1579.\n"
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE, TensorShape=[25]), but Rank 0 "
      "is running collective: CollectiveFingerPrint(SequenceNumber=485, OpType=BROADCAST)\n");
  ASSERT_EQ(f.positions.size(), 4u);
  EXPECT_EQ(f.positions[0].rank, 3);
  EXPECT_EQ(f.positions[0].seq, 1580);
  EXPECT_EQ(f.positions[0].op, "ALLREDUCE");
  EXPECT_TRUE(f.positions[0].timed_out);
  EXPECT_EQ(f.positions[1].rank, 7);
  EXPECT_EQ(f.positions[1].last_enqueued, 1579);
  EXPECT_FALSE(f.positions[1].timed_out);
  EXPECT_EQ(f.positions[3].rank, 0);
  EXPECT_EQ(f.positions[3].op, "BROADCAST");
  EXPECT_EQ(f.positions[3].seq, 485);
}

TEST(Facts, EchoesPidsMemoryAndSizes) {
  Facts f = read(
      "Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
      "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
      "host:93:356 [2] NCCL INFO [Service thread] Connection closed by localRank 1\n"
      "---> rank 1 pid 48214 device cuda:1 (world size 4, backend nccl)\n"
      "Epoch: [0][0/1736]\t Loss 0.5191 RSS 10.9G\n"
      "[2023-04-07 13:08:55,469] [INFO] [utils.py:838:see_memory_usage] CPU Virtual Memory:  used "
      "= 122.88 GB, percent = 97.7%\n"
      "Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/4\n");
  ASSERT_EQ(f.pointers.size(), 2u);
  EXPECT_EQ(f.pointers[0].to, 0);
  EXPECT_EQ(f.pointers[1].to, 1);
  EXPECT_TRUE(f.pointers[1].local);
  ASSERT_FALSE(f.pids.empty());
  EXPECT_EQ(f.pids[0].pid, 48214);
  EXPECT_EQ(f.pids[0].rank, 1);
  ASSERT_EQ(f.memory.size(), 2u);
  EXPECT_NEAR(f.memory[0].bytes / (1024.0 * 1024 * 1024), 10.9, 0.01);
  EXPECT_EQ(f.memory[1].percent, 97);
  EXPECT_EQ(f.world_size, 4);
  EXPECT_TRUE(f.ranks_seen.count(3));
  EXPECT_EQ(stated_rank("[PG ID 0 PG GUID 0(default_pg) Rank 3] Timeout at NCCL work"), 3);
  EXPECT_EQ(normalize_op("gloo:all_reduce"), "ALLREDUCE");
  EXPECT_EQ(normalize_op("_ALLGATHER_BASE"), "ALLGATHERBASE");
}

TEST(Facts, HeartbeatsAndTheAgentsTrace) {
  Facts f = read(
      "DDPBISECT_HEARTBEAT {\"rank\":2,\"step\":5,\"t\":1.0,\"seq\":12}\n"
      "DDPBISECT_COLLECTIVES {\"rank\":1,\"pid\":7,\"events\":[{\"i\":0,\"op\":\"all_reduce\","
      "\"pg\":0,\"seq\":11,\"site\":\"train.py:40\",\"fn\":\"step\",\"state\":\"completed\"},{"
      "\"i\":1,"
      "\"op\":\"barrier\",\"pg\":0,\"seq\":12,\"site\":\"train.py:52\",\"fn\":\"save\",\"state\":"
      "\"issued\"}]}\n");
  EXPECT_EQ(f.heartbeat_seq[2], 12);
  ASSERT_EQ(f.positions.size(), 1u);
  EXPECT_EQ(f.positions[0].rank, 1);
  EXPECT_EQ(f.positions[0].op, "BARRIER");
  EXPECT_TRUE(f.positions[0].waiting);
  ASSERT_EQ(f.positions[0].frames.size(), 1u);
  EXPECT_EQ(f.positions[0].frames[0].function, "save");
}

TEST(Facts, DdpsUnusedParameterReportNamesItsRank) {
  EXPECT_EQ(stated_rank("Parameter indices which did not receive grad for rank 3: 0 1"), 3);
  EXPECT_EQ(stated_rank("Parameters which did not receive grad for rank 1: fc.weight"), 1);
}

TEST(Facts, SubprocessNamesTheSignalThatKilledAChild) {
  Facts f = read(
      "subprocess.CalledProcessError: Command '['python', '-u', 'train.py', '--local_rank=3']' "
      "died with <Signals.SIGSEGV: 11>.\n");
  ASSERT_EQ(f.reports.size(), 1u);
  EXPECT_EQ(f.reports[0].signal, 11);
  EXPECT_TRUE(f.reports[0].ambiguous);  // the launcher's last command line, not the failed one
  EXPECT_EQ(f.reports[0].last_spawned, 3);
}

// Issue 26: the launch era's CalledProcessError and DeepSpeed's launcher show the command of the
// last process started; its --local_rank (either spelling) is kept as a hint, never as the rank.
TEST(Facts, TheLastSpawnedCommandsLocalRankIsAHint) {
  Facts f = read(
      "subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'train.py', "
      "'--local_rank=1']' returned non-zero exit status 1.\n"
      "[2024-01-01 00:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
      "'-u', 'train.py', '--local-rank=0', '--deepspeed'] exits with return code = 2\n"
      "subprocess.CalledProcessError: Command 'python train.py' returned non-zero exit status "
      "3.\n");
  ASSERT_EQ(f.reports.size(), 3u);
  EXPECT_EQ(f.reports[0].last_spawned, 1);
  EXPECT_EQ(f.reports[0].exit_code, 1);
  EXPECT_EQ(f.reports[1].last_spawned, 0);
  EXPECT_EQ(f.reports[1].exit_code, 2);
  EXPECT_FALSE(f.reports[2].last_spawned);
  EXPECT_EQ(f.reports[2].exit_code, 3);
  for (const auto& r : f.reports) {
    EXPECT_TRUE(r.ambiguous);
    EXPECT_FALSE(r.origin.local_rank);
    EXPECT_FALSE(r.origin.rank);
  }
}

TEST(Facts, AMessageThatOpensWithItsRank) {
  EXPECT_EQ(stated_rank("Rank 11: found NaN in local grad norm"), 11);
  EXPECT_FALSE(stated_rank("Ranks 0 and 1 disagree"));
}
