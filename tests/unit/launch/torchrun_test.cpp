// The user's torchrun command, taken apart and rebuilt per node.
#include "launch/torchrun.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

using V = std::vector<std::string>;

TEST(Torchrun, KeepsTheUsersOptionsAndReplacesTopologyAndRendezvous) {
  auto cmd = parse_torchrun({"/venv/bin/torchrun", "--nproc_per_node", "8", "--nnodes=4",
                             "--rdzv-backend", "static", "--standalone", "--monitor-interval=1",
                             "--no-python", "-t", "3", "python3", "train.py", "--nnodes", "7"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->launcher, V({"/venv/bin/torchrun"}));
  EXPECT_EQ(cmd->options, V({"--monitor-interval=1", "--no-python"}));
  EXPECT_EQ(cmd->program, V({"python3", "train.py", "--nnodes", "7"}));
  EXPECT_EQ(cmd->dropped, V({"--nproc_per_node", "8", "--nnodes=4", "--rdzv-backend", "static",
                             "--standalone", "-t", "3"}));
  V argv = agent_argv(*cmd, {2, 3, "10.0.0.1:29500", "run1", "/t/node1/torchrun"});
  EXPECT_EQ(argv,
            V({"/venv/bin/torchrun", "--nnodes=2", "--nproc_per_node=3", "--rdzv_backend=c10d",
               "--rdzv_endpoint=10.0.0.1:29500", "--rdzv_id=run1", "--max_restarts=0",
               "--log_dir=/t/node1/torchrun", "--redirects=3", "--tee=3", "--monitor-interval=1",
               "--no-python", "python3", "train.py", "--nnodes", "7"}));
}

TEST(Torchrun, RecognisesTheModuleFormAndNothingElse) {
  auto cmd = parse_torchrun({"python3", "-m", "torch.distributed.run", "-m", "pkg.train", "x"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->launcher, V({"python3", "-m", "torch.distributed.run"}));
  EXPECT_EQ(cmd->options, V({"-m"}));
  EXPECT_EQ(cmd->program, V({"pkg.train", "x"}));
  EXPECT_FALSE(parse_torchrun({"python3", "train.py"}));
  EXPECT_FALSE(parse_torchrun({"python3", "-m", "torch.distributed.elastic", "train.py"}));
  EXPECT_FALSE(parse_torchrun({"python3", "-c", "torch.distributed.run"}));
  EXPECT_FALSE(parse_torchrun({}));
}

// Issue 26: the launch-era module is torchrun's parser plus --use-env (a flag in either
// spelling); python's own -u before -m is kept with the launcher.
TEST(Torchrun, RecognisesTheLaunchEraModule) {
  auto cmd = parse_torchrun({"/usr/bin/python3", "-u", "-m", "torch.distributed.launch",
                             "--nproc_per_node", "2", "--use_env", "train.py", "--local_rank=0"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->launcher, V({"/usr/bin/python3", "-u", "-m", "torch.distributed.launch"}));
  EXPECT_EQ(cmd->options, V({"--use_env"}));
  EXPECT_EQ(cmd->program, V({"train.py", "--local_rank=0"}));
  EXPECT_EQ(cmd->dropped, V({"--nproc_per_node", "2"}));
  auto plain = parse_torchrun({"python", "-m", "torch.distributed.launch", "train.py"});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->program, V({"train.py"}));
}

TEST(Torchrun, SplitsTheAgentsLinePrefixes) {
  auto ours = split_agent_line("[ddpbisect rank=12 local=3]:[rank12]: Traceback");
  EXPECT_EQ(ours.rank, 12);
  EXPECT_EQ(ours.local_rank, 3);
  EXPECT_EQ(ours.text, "[rank12]: Traceback");
  auto theirs = split_agent_line("[default1]:hello");
  EXPECT_EQ(theirs.rank, -1);
  EXPECT_EQ(theirs.local_rank, 1);
  EXPECT_EQ(theirs.text, "hello");
  auto agent = split_agent_line("W1130 07:26:30.608000 29162 torch/distributed/run.py:874] x");
  EXPECT_EQ(agent.local_rank, -1);
  EXPECT_EQ(split_agent_line("[ddpbisect rank=1 local=]:x").local_rank, -1);
  EXPECT_EQ(split_agent_line("[default]:x").local_rank, -1);
}
