// Slot assignment: cores, GPUs (disjoint CUDA_VISIBLE_DEVICES) and Slurm nodes shared out among
// concurrent trials. The GPU and Slurm cases are tested here only: the project's machines have
// neither several GPUs nor an allocation of many nodes.
#include "reduce/slots.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

namespace {
TrialConfig shape(int64_t nodes, int64_t procs, const std::string& device = "cpu") {
  TrialConfig c;
  c.nodes = nodes;
  c.procs_per_node = procs;
  c.device = device;
  return c;
}
}  // namespace

TEST(SlotPool, AutoFitsTrialsToTheCores) {
  SlotPool pool({8, 1, {}, {}}, 0);
  EXPECT_EQ(pool.width(shape(1, 2)), 4);
  std::vector<Slot> held;
  while (auto s = pool.acquire(shape(1, 2))) held.push_back(*s);
  EXPECT_EQ(held.size(), 4u);
  EXPECT_FALSE(pool.acquire(shape(1, 1)));  // every core taken
  pool.release(held.back());
  EXPECT_TRUE(pool.acquire(shape(1, 1)));
}

TEST(SlotPool, ATrialLargerThanTheMachineStillRunsAlone) {
  SlotPool pool({2, 1, {}, {}}, 0);
  auto big = pool.acquire(shape(2, 2));
  ASSERT_TRUE(big);
  EXPECT_FALSE(pool.acquire(shape(1, 1)));
  pool.release(*big);
  EXPECT_TRUE(pool.acquire(shape(1, 1)));
}

TEST(SlotPool, ExplicitJobsOverrideTheCoreCount) {
  SlotPool pool({2, 1, {}, {}}, 4);  // trials that mostly wait: the user knows best
  EXPECT_EQ(pool.width(shape(1, 2)), 4);
  int n = 0;
  while (pool.acquire(shape(1, 2))) ++n;
  EXPECT_EQ(n, 4);
}

TEST(SlotPool, GpuCandidatesGetDisjointDevices) {
  SlotPool pool({64, 1, {"0", "1", "2", "3", "4", "5", "6", "7"}, {}}, 0);
  EXPECT_EQ(pool.width(shape(1, 2, "cuda")), 4);
  auto a = pool.acquire(shape(1, 2, "cuda"));
  auto b = pool.acquire(shape(1, 4, "cuda"));
  auto c = pool.acquire(shape(1, 2, "cuda"));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(b->gpus, (std::vector<std::string>{"2", "3", "4", "5"}));
  EXPECT_EQ(c->gpus, (std::vector<std::string>{"6", "7"}));
  EXPECT_FALSE(pool.acquire(shape(1, 1, "cuda")));  // no GPU left, whatever the cores say
  pool.release(*b);
  auto d = pool.acquire(shape(1, 1, "cuda"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->gpus, (std::vector<std::string>{"2"}));  // the lowest free id
  EXPECT_TRUE(pool.acquire(shape(1, 1)).has_value());   // a CPU candidate needs none
}

TEST(SlotPool, GpuIdsSortAsNumbers) {
  SlotPool pool({64, 1, {"10", "9", "2"}, {}}, 0);
  auto a = pool.acquire(shape(1, 2, "cuda"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->gpus, (std::vector<std::string>{"2", "9"}));
}

TEST(SlotPool, SlurmCandidatesRunOnFreeNodesEvenWithExplicitJobs) {
  SlotPool pool({4, 1, {}, {"n1", "n2", "n3", "n4", "n5"}}, 8);
  EXPECT_EQ(pool.width(shape(2, 1)), 2);
  auto a = pool.acquire(shape(2, 1));
  auto b = pool.acquire(shape(1, 4));
  auto c = pool.acquire(shape(2, 1));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(b->hosts, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(c->hosts, (std::vector<std::string>{"n4", "n5"}));
  EXPECT_FALSE(pool.acquire(shape(1, 1)));
  pool.release(*a);
  auto d = pool.acquire(shape(1, 1));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->hosts, (std::vector<std::string>{"n1"}));
}
