// Reading whole log files: what a file's end says about the blocks in it.
#include <gtest/gtest.h>

#include <fstream>

#include "console.hpp"
#include "diagnose/diagnosis.hpp"

using namespace ddpbisect;

namespace {

const char* kLogged =
    "2024-07-24 08:26:01,100 - worker - ERROR - Exception in worker while loading shard\n"
    "Traceback (most recent call last):\n"
    "  File \"/job/worker.py\", line 40, in run\n"
    "    load(shard)\n"
    "  File \"/job/data.py\", line 12, in load\n"
    "    raise RuntimeError(\"shard 7 is corrupt\")\n"
    "RuntimeError: shard 7 is corrupt\n";
}  // namespace

TEST(LogReader, AnErrorRecordsTracebackThatEndsTheLogIsTheFailure) {
  // logger.exception() and then nothing but more errors: the process ended there (vLLM's workers).
  Diagnosis d = diagnose_console(std::string("step 10 loss 1.25\n") + kLogged +
                                 "2024-07-24 08:26:01,200 - worker - ERROR - worker 1 exiting\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "RuntimeError");
  EXPECT_EQ(d.root.message, "shard 7 is corrupt");
}

TEST(LogReader, AnErrorRecordsTracebackTheRunWentOnFromIsNotTheFailure) {
  // The same record followed by ordinary output (the program handled it and trained on), or
  // logged at WARNING level, is not how the job ended.
  EXPECT_FALSE(
      diagnose_console(std::string(kLogged) + "\nstep 11 loss 1.20\nstep 12 loss 1.18\n").failed);
  std::string warned = kLogged;
  warned.replace(warned.find("ERROR"), 5, "WARNING");
  EXPECT_FALSE(diagnose_console(warned).failed);
}

TEST(LogReader, ARankTheExcerptEndsInsideTheLineOfIsNotSilent) {
  std::string timeouts;
  for (int r : {1, 3})
    timeouts += "[rank" + std::to_string(r) + "]:[E ProcessGroupNCCL.cpp:563] [Rank " +
                std::to_string(r) +
                "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                "OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600005 "
                "milliseconds before timing out.\n";
  // Rank 9's line holds only its tags, or stops mid-line: it may have been timing out as well.
  for (const char* tail : {"[rank9]:[E ProcessGroupNCCL.cpp:563] [Rank 9]\n",
                           "[rank9]:[E ProcessGroupNCCL.cpp:563] [Rank 9] Watchdog caught"}) {
    Diagnosis d = diagnose_console(timeouts + tail);
    ASSERT_TRUE(d.failed) << tail;
    EXPECT_NE(d.root.origin.rank, 9) << tail;
  }
  // The same line earlier, not cut by the excerpt's end: rank 9 said nothing of a timeout, and
  // is the one the others wait for.
  Diagnosis d = diagnose_console("[rank9]:[E ProcessGroupNCCL.cpp:563] [Rank 9]\n" + timeouts);
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.origin.rank, 9);
}

TEST(LogReader, NcclsDesyncReportNamesTheRankThatCausedTheDesync) {
  Diagnosis d = diagnose_console(
      "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
      "OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=60000) ran for 60010 milliseconds "
      "before timing out.\n"
      " - [0] Timeout at collective: ALLREDUCE, #6\n"
      " - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
      "     [2] joined but didn't finish collective #6 (count from 1)\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "hang");
  EXPECT_EQ(d.root.origin.rank, 2);
  EXPECT_NE(d.root.message.find("didn't finish collective #6"), std::string::npos)
      << d.root.message;
}

TEST(LogReader, ALaunchersOwnCrashIsTheLaunchersNotAnUnknownRanks) {
  ScratchDir dir;
  std::ofstream(dir.path + "/torchrun.stderr")
      << "Traceback (most recent call last):\n"
         "  File \"/usr/bin/torchrun\", line 33, in <module>\n"
         "    sys.exit(load_entry_point('torch==1.13.0', 'console_scripts', 'torchrun')())\n"
         "AttributeError: module 'torch.distributed.run' has no attribute 'main'\n";
  DiagnosisInput in;
  in.logs.push_back({std::nullopt, dir.path + "/torchrun.stderr", "", "the launcher on node 0"});
  Diagnosis d = diagnose(in);
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(rank_words(d.root.origin), "the launcher on node 0");
  EXPECT_EQ(d.explanation.rfind("The launcher on node 0 failed first: AttributeError", 0), 0u)
      << d.explanation;
  EXPECT_EQ(d.to_json()["root_cause"]["process"], "the launcher on node 0");
}

TEST(LogReader, AStoreBarrierStillWaitedInWhenTheLogEndsIsAGroupThatNeverFormed) {
  std::string wait;
  for (int i = 0; i < 3; ++i)
    wait += "[2025-03-11 05:21:0" + std::to_string(i) +
            ",421][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
            "initialize process group for rank: 0, key: store_based_barrier_key:1 "
            "(world_size=4, worker_count=2, timeout=0:30:00)\n";
  Diagnosis d = diagnose_console(wait);
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "rendezvous");
  EXPECT_FALSE(d.root.origin.rank);  // rank 0 waits; which workers are missing is not said
  EXPECT_NE(d.root.message.find("2 of 4 workers arrived"), std::string::npos) << d.root.message;
  // The usual start of a job whose ranks come up at different times: waited, then completed.
  EXPECT_FALSE(diagnose_console(wait +
                                "[2025-03-11 05:21:09,100][torch.distributed.distributed_c10d]"
                                "[INFO] - Rank 0: Completed store-based barrier for key:"
                                "store_based_barrier_key:1 with 4 nodes.\n")
                   .failed);
}

TEST(LogReader, NcclsOwnWarningIsTheCauseUnderC10dsUnhandledSystemError) {
  Diagnosis d = diagnose_console(
      "node-7:97:183 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
      "nccl-shm-recv-c43b8 (size 9637888)\n"
      "node-7:97:183 [0] NCCL INFO transport/shm.cc:100 -> 2\n"
      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:784, "
      "unhandled system error, NCCL version 2.7.8\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "nccl_error");
  EXPECT_EQ(d.root.exception, "RuntimeError");
  EXPECT_NE(d.root.message.find("WARN Error while creating shared memory segment"),
            std::string::npos)
      << d.root.message;
  // The signature is the wrapper's: the segment's name and size vary from run to run.
  EXPECT_EQ(d.signature.message.find("shared memory"), std::string::npos) << d.signature.message;
}
