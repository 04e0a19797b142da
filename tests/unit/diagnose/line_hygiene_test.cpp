#include "diagnose/line_hygiene.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

namespace {
std::vector<CleanLine> clean(const std::string& physical, const std::string& previous = "") {
  LineCleaner c;
  std::vector<CleanLine> out;
  c.clean(physical, previous, out);
  return out;
}

CleanLine one(const std::string& physical) {
  auto out = clean(physical);
  EXPECT_EQ(out.size(), 1u) << physical;
  return out.empty() ? CleanLine() : out[0];
}
}  // namespace

TEST(LineHygiene, RankTagsOfEveryLauncher) {
  EXPECT_EQ(one("[rank3]: Traceback (most recent call last):").rank, 3);
  EXPECT_EQ(one("[rank3]: Traceback (most recent call last):").text,
            "Traceback (most recent call last):");
  CleanLine tee = one("[default2]:[rank6]:   File \"a.py\", line 1, in f");
  EXPECT_EQ(tee.local_rank, 2);
  EXPECT_EQ(tee.rank, 6);
  EXPECT_EQ(tee.text, "  File \"a.py\", line 1, in f");
  EXPECT_EQ(one("[1,2]<stderr>:RuntimeError: x").rank, 2);
  EXPECT_EQ(one("[1,mpirank:5,algo-1]<stderr>:RuntimeError: x").rank, 5);
  EXPECT_EQ(one("3: Traceback (most recent call last):").rank, 3);  // srun --label
  CleanLine host = one("gpu-b07:3: AssertionError: non-finite loss nan");
  EXPECT_EQ(host.rank, 3);
  EXPECT_EQ(host.text, "AssertionError: non-finite loss nan");
  CleanLine vllm = one("(VllmWorker rank=5 pid=3073) torch.OutOfMemoryError: CUDA out of memory");
  EXPECT_EQ(vllm.rank, 5);
  EXPECT_EQ(vllm.pid, 3073);
  EXPECT_EQ(one("(WorkerDict pid=27497, ip=10.0.0.1) hello").pid, 27497);
  // ParlAI's logger: "rank:  3 | <time> CRITICAL | ".
  CleanLine parlai =
      one("rank:  3 | 2022-04-03 18:44:26,615 CRITICAL | Traceback (most recent "
          "call last):");
  EXPECT_EQ(parlai.rank, 3);
  EXPECT_EQ(parlai.level, 'E');
  EXPECT_EQ(parlai.text, "Traceback (most recent call last):");
  // A node's name and its local rank (accelerate under Slurm): no global rank.
  CleanLine node = one("[gpu187:1]:torch.cuda.OutOfMemoryError: CUDA out of memory.");
  EXPECT_EQ(node.host, "gpu187");
  EXPECT_EQ(node.local_rank, 1);
  EXPECT_FALSE(node.rank);
  EXPECT_EQ(node.text, "torch.cuda.OutOfMemoryError: CUDA out of memory.");
  // A Python warning's "file.py:LINE:" is not a host and a rank.
  EXPECT_FALSE(one("train.py:411: UserWarning: deprecated").rank);
  // torchrun's banner entry "[0]:" stands alone: it is not a prefix.
  EXPECT_EQ(one("[0]:").text, "[0]:");
  // bash's job report "[1]+  Killed" is not a rank tag.
  EXPECT_FALSE(one("[1]  Killed    python train.py").rank);
}

TEST(LineHygiene, TimestampsAndLoggersKeepTheirLevel) {
  CleanLine py = one("2024-05-01 12:00:01,123 - clip_ft.data - ERROR - failed to decode");
  EXPECT_EQ(py.text, "failed to decode");
  EXPECT_EQ(py.level, 'E');
  EXPECT_TRUE(py.python_log);
  CleanLine k8s = one("2024-03-11T08:40:31.452916925Z Traceback (most recent call last):");
  EXPECT_EQ(k8s.text, "Traceback (most recent call last):");
  EXPECT_EQ(k8s.level, 0);
  CleanLine glog =
      one("W1130 05:26:37.928000 6762 torch/distributed/elastic/multiprocessing/api.py:1028] "
          "Sending process 6775 closing signal SIGTERM");
  EXPECT_EQ(glog.text, "Sending process 6775 closing signal SIGTERM");
  EXPECT_TRUE(glog.weak());
  EXPECT_FALSE(glog.python_log);
  CleanLine c10 =
      one("[rank0]:[E1130 05:26:19.934417287 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught");
  EXPECT_EQ(c10.rank, 0);
  EXPECT_EQ(c10.text, "[Rank 0] Watchdog caught");
  EXPECT_EQ(c10.level, 'E');
  EXPECT_EQ(one("WARNING:torch.distributed.run:").level, 'W');
  EXPECT_EQ(one("704.7s\t42\tTraceback (most recent call last):").text,
            "Traceback (most recent call last):");  // Kaggle's columns
}

TEST(LineHygiene, CarriageReturnsAndEmbeddedPrefixesSplitALine) {
  auto out = clean(
      "Epoch 4/5:   0%|    | 0/33 [00:00<?, ?step/s]\rEpoch 4/5:   0%| | 0/33 "
      "[00:01<?, ?step/s][rank2]: Traceback (most recent call last):");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].rank, 2);
  EXPECT_EQ(out[2].text, "Traceback (most recent call last):");
  // A traceback or a shell's "Killed" glued to a progress bar starts a line of its own ...
  out = clean("100%|##########| 125/125 [00:62<00:00,  2.16it/s]Exception ignored in: <function>");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].text, "Exception ignored in: <function>");
  out = clean("Epoch 0:  41%| | 2051/5000 [00:34:11<44:52,  1.09it/s, loss=2.31]Killed");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].text, "Killed");
  // ... but not inside a message.
  EXPECT_EQ(clean("Original Traceback (most recent call last):").size(), 1u);
  EXPECT_EQ(clean("RuntimeError: DataLoader worker (pid 29001) is killed by signal: Killed").size(),
            1u);
}

TEST(LineHygiene, APrefixRepeatedOnNeighbouringLinesIsLearned) {
  LineCleaner c;
  std::vector<CleanLine> out;
  c.clean("104.171.201.172: Traceback (most recent call last):",
          "104.171.201.172: NCCL INFO Bootstrap : no socket interface found", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "Traceback (most recent call last):");
  out.clear();
  c.clean("104.171.201.171: RuntimeError: NCCL error in: x", "", out);  // same shape, learned
  EXPECT_EQ(out[0].text, "RuntimeError: NCCL error in: x");
  // An exception's type is not a prefix, even when the previous line starts alike.
  LineCleaner d;
  out.clear();
  d.clean("KeyError: Traceback (most recent call last)", "KeyError: 3", out);
  EXPECT_EQ(out[0].text.rfind("KeyError", 0), 0u);
  EXPECT_EQ(prefix_shape("704.7s\t1290\t"), "9.9s\t9\t");
  // A job's tag behind a timestamp column on both lines (Metaflow): learned after the column.
  LineCleaner m;
  out.clear();
  m.clean(
      "2023-04-29 06:01:12.977 [177/train/578 (pid 28936)] [09c5-a44c] Traceback (most "
      "recent call last):",
      "2023-04-29 06:01:12.977 [177/train/578 (pid 28936)] [09c5-a44c] main failed", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "Traceback (most recent call last):");
  out.clear();
  m.clean(
      "2023-04-29 06:01:12.977 [177/train/578 (pid 28936)] [09c5-a44c] OSError: [Errno 28] "
      "No space left on device",
      "", out);
  EXPECT_EQ(out[0].text, "OSError: [Errno 28] No space left on device");
}

TEST(LineHygiene, PipeSeparatedColumnsAndHostRankTags) {
  CleanLine host = one("gpu-node-1:13 | Traceback (most recent call last):");
  EXPECT_EQ(host.rank, 13);
  EXPECT_EQ(host.text, "Traceback (most recent call last):");
  CleanLine logged = one("2024-05-01 12:00:01,123 | INFO | KeyError: 'x'");
  EXPECT_EQ(logged.level, 'I');
  EXPECT_EQ(logged.text, "KeyError: 'x'");
  CleanLine both =
      one("2024-05-01 12:00:01,123 - INFO - gpu-node-1:13 |   File \"d.py\", line 7, in f");
  EXPECT_EQ(both.rank, 13);
  EXPECT_EQ(both.text, "  File \"d.py\", line 7, in f");
  // A location with a line number is not a host and a rank.
  EXPECT_FALSE(one("train.py:411 | loss 0.3").rank.has_value());
}

TEST(LineHygiene, VllmsLoggerHeaderKeepsTheTracebacksIndentation) {
  CleanLine v1 = one("ERROR 07-23 19:34:51 [multiproc_executor.py:487]   File \"/w/x.py\", line 3");
  EXPECT_EQ(v1.text, "  File \"/w/x.py\", line 3");
  EXPECT_EQ(v1.level, 'E');
  CleanLine v0 = one("INFO 07-24 08:26:01 multiproc_worker_utils.py:226] Worker ready");
  EXPECT_EQ(v0.text, "Worker ready");
  EXPECT_TRUE(v0.weak());
}
