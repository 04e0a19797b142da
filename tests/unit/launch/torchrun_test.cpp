// The user's torchrun command, taken apart and rebuilt per node.
#include "launch/torchrun.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace ddpbisect;

using V = std::vector<std::string>;

namespace {

// Node 1 of a trial's nodes x ppn, its rendezvous at 10.0.0.1:29500.
AgentPlace trial_place(int nodes, int ppn) {
  AgentPlace place;
  place.nodes = nodes;
  place.procs_per_node = ppn;
  place.addr = "10.0.0.1";
  place.port = "29500";
  place.run_id = "run1";
  place.log_dir = "/t/node1/torchrun";
  place.node_rank = "1";
  return place;
}

}  // namespace

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
  V argv = agent_argv(*cmd, trial_place(2, 3));
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

// Issue 26: a repro script's agents meet at a static rendezvous it names per node.
TEST(Torchrun, StaticRendezvousForAScript) {
  auto cmd = parse_torchrun({"torchrun", "--nproc-per-node=4", "train.py"});
  ASSERT_TRUE(cmd);
  AgentPlace place;
  place.nodes = 1;
  place.procs_per_node = 2;
  place.addr = "$A";
  place.port = "$P";
  place.node_rank = "$N";
  place.static_rendezvous = true;
  EXPECT_EQ(agent_argv(*cmd, place),
            V({"torchrun", "--nnodes=1", "--nproc_per_node=2", "--node_rank=$N", "--master_addr=$A",
               "--master_port=$P", "--max_restarts=0", "train.py"}));
  EXPECT_FALSE(single_rank_argv(*cmd));
}

// Issue 26: `accelerate launch` (and its module): its topology and rendezvous options are
// replaced, --multi_gpu only where accelerate allows it (2 or more processes), a static
// rendezvous across machines; one rank is accelerate's own one-process start.
TEST(Torchrun, AccelerateLaunch) {
  auto cmd = parse_torchrun({"/venv/bin/accelerate", "launch", "--multi_gpu", "--num_processes",
                             "4", "--num-machines=2", "--machine_rank", "1", "--mixed_precision",
                             "no", "--same_network", "--debug", "--main_process_port", "2950",
                             "train.py", "--epochs", "3"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->form, LaunchForm::accelerate);
  EXPECT_EQ(cmd->launcher, V({"/venv/bin/accelerate", "launch"}));
  EXPECT_EQ(cmd->options, V({"--mixed_precision", "no", "--debug"}));
  EXPECT_EQ(cmd->program, V({"train.py", "--epochs", "3"}));
  EXPECT_EQ(cmd->dropped,
            V({"--multi_gpu", "--num_processes", "4", "--num-machines=2", "--machine_rank", "1",
               "--same_network", "--main_process_port", "2950"}));
  AgentPlace place = trial_place(2, 3);
  EXPECT_EQ(
      agent_argv(*cmd, place),
      V({"/venv/bin/accelerate", "launch", "--multi_gpu", "--num_processes=6", "--num_machines=2",
         "--machine_rank=1", "--same_network", "--main_process_ip=10.0.0.1",
         "--main_process_port=29500", "--max_restarts=0", "--log_dir=/t/node1/torchrun", "--tee=3",
         "--mixed_precision", "no", "--debug", "train.py", "--epochs", "3"}));
  place.nodes = 1;
  place.procs_per_node = 2;
  EXPECT_EQ(
      agent_argv(*cmd, place),
      V({"/venv/bin/accelerate", "launch", "--multi_gpu", "--num_processes=2", "--num_machines=1",
         "--main_process_port=29500", "--max_restarts=0", "--log_dir=/t/node1/torchrun", "--tee=3",
         "--mixed_precision", "no", "--debug", "train.py", "--epochs", "3"}));
  EXPECT_EQ(*single_rank_argv(*cmd),
            V({"/venv/bin/accelerate", "launch", "--num_processes=1", "--num_machines=1",
               "--mixed_precision", "no", "--debug", "train.py", "--epochs", "3"}));
  auto module = parse_torchrun({"python3", "-m", "accelerate.commands.launch", "-m", "pkg.train"});
  ASSERT_TRUE(module);
  EXPECT_EQ(module->form, LaunchForm::accelerate);
  EXPECT_EQ(module->options, V({"-m"}));
  EXPECT_EQ(module->program, V({"pkg.train"}));
  EXPECT_FALSE(parse_torchrun({"accelerate", "config"}));
  EXPECT_FALSE(parse_torchrun({"accelerate"}));
  EXPECT_EQ(std::string(launch_form_name(LaunchForm::accelerate)), "accelerate");
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

// deepspeed's runner is no agent form: its ranks are started as its launch.py starts them,
// every runner option replaced but the three that shape a rank's command line.
TEST(Torchrun, DeepspeedRanksAreLaunchPysCommands) {
  const V argv = {"deepspeed",  "--num_gpus",
                  "2",          "--num_nodes=1",
                  "--hostfile", "/h",
                  "--no_ssh",   "--master_port",
                  "29600",      "--bind_cores_to_rank",
                  "train.py",   "--deepspeed_config",
                  "ds.json",    "--num_gpus",
                  "9"};
  EXPECT_FALSE(parse_torchrun(argv));
  auto cmd = parse_deepspeed(argv);
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->form, LaunchForm::deepspeed);
  EXPECT_EQ(cmd->options, V{});
  EXPECT_EQ(cmd->dropped, V({"--num_gpus", "2", "--num_nodes=1", "--hostfile", "/h", "--no_ssh",
                             "--master_port", "29600", "--bind_cores_to_rank"}));
  // The script's own --num_gpus is its argument, not the runner's.
  EXPECT_EQ(deepspeed_rank_argv(*cmd, "/venv/bin/python3"),
            V({"/venv/bin/python3", "-u", "train.py", "--local_rank={local_rank}",
               "--deepspeed_config", "ds.json", "--num_gpus", "9"}));
  auto module = parse_deepspeed({"python3", "-m", "deepspeed.launcher.runner", "--module",
                                 "--no_local_rank", "pkg.train", "--x"});
  ASSERT_TRUE(module);
  EXPECT_EQ(deepspeed_python(*module, "/nowhere"), "python3");
  EXPECT_EQ(deepspeed_rank_argv(*module, "python3"),
            V({"python3", "-u", "-m", "pkg.train", "--x"}));
  auto no_python = parse_deepspeed({"ds", "--no_python", "./run.sh", "a"});
  ASSERT_TRUE(no_python);
  EXPECT_EQ(deepspeed_rank_argv(*no_python, "python3"),
            V({"./run.sh", "--local_rank={local_rank}", "a"}));
  EXPECT_FALSE(parse_deepspeed({"torchrun", "train.py"}));
  EXPECT_FALSE(parse_deepspeed({"python3", "train.py"}));
  EXPECT_EQ(std::string(launch_form_name(LaunchForm::deepspeed)), "deepspeed");
}

// The interpreter launch.py would run the ranks with: the runner script's #! line, found on PATH.
TEST(Torchrun, DeepspeedsPythonIsItsRunnersInterpreter) {
  const std::string dir = testing::TempDir() + "/ds_bin";
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const char* text) { std::ofstream(dir + "/" + name) << text; };
  write("deepspeed", "#!/opt/venv/bin/python3.11\nfrom deepspeed.launcher.runner import main\n");
  write("ds", "#!/usr/bin/env -S python3.12 -u\r\n");
  EXPECT_EQ(deepspeed_python(*parse_deepspeed({"deepspeed", "t.py"}), "/nowhere:" + dir),
            "/opt/venv/bin/python3.11");
  EXPECT_EQ(deepspeed_python(*parse_deepspeed({dir + "/ds", "t.py"}), ""), "python3.12");
  EXPECT_EQ(deepspeed_python(*parse_deepspeed({"deepspeed", "t.py"}), "/nowhere"), "python3");
  std::filesystem::remove_all(dir);
}

// What validate and a reduction say about a launch command: the options the trials replace, and
// each one whose effect they do not reproduce, in its own line.
TEST(Torchrun, LaunchFormNotesNameWhatATrialDoesNotReproduce) {
  auto ds = launch_form_notes({"deepspeed", "--num_gpus", "2", "--include", "localhost:2,3",
                               "--bind_cores_to_rank", "--master_port=29600", "train.py",
                               "--bind_cores_to_rank"});
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0],
            "deepspeed: --num_gpus 2 --master_port=29600 replaced per trial: the stage sets the "
            "topology, the trial its rendezvous and logs");
  EXPECT_NE(ds[1].find("--include localhost:2,3 is not applied"), std::string::npos) << ds[1];
  EXPECT_NE(ds[2].find("--bind_cores_to_rank is not applied"), std::string::npos) << ds[2];
  auto tr = launch_form_notes({"torchrun", "--nproc_per_node=4", "--max-restarts", "3", "t.py"});
  ASSERT_EQ(tr.size(), 2u);
  EXPECT_EQ(tr[0].rfind("torchrun: --nproc_per_node=4 replaced per trial", 0), 0u) << tr[0];
  EXPECT_NE(tr[1].find("--max-restarts 3 is replaced by 0"), std::string::npos) << tr[1];
  EXPECT_EQ(launch_form_notes({"torchrun", "--max_restarts=0", "t.py"}).size(), 1u);
  EXPECT_TRUE(launch_form_notes({"torchrun", "t.py"}).empty());
  EXPECT_TRUE(launch_form_notes({"python3", "train.py", "--include", "x"}).empty());
  EXPECT_TRUE(launch_form_notes({}).empty());
}
