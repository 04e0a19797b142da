#include "launch/rank_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "launch/warm_server.hpp"
#include "spec/loader.hpp"
#include "spec/serialize.hpp"

using namespace ddpbisect;

TEST(RankPlan, CommandGetsTheEnvironmentContractAndPlaceholders) {
  auto r = load_spec_text(R"(workload:
  command: [/bin/echo, "--s={samples}", "{components}", "{steps}"]
  samples: "0-9,12"
  components: [a, b]
  params: {steps: 7}
  env: {OMP_NUM_THREADS: "4"}
stages: [{name: two, nodes: 2, procs_per_node: 2}]
)",
                          "/tmp/x.yaml");
  ASSERT_TRUE(r.spec);
  TrialConfig t = initial_config(*r.spec, r.spec->stages[0]);
  TrialPlace place{"/tmp/trial", "/tmp/trial/config.json", "127.0.0.1", 29511, "tok", {}, ""};
  auto slots = plan_ranks(*r.spec, t, place);
  ASSERT_EQ(slots.size(), 4u);
  const auto& s3 = slots[3];
  EXPECT_EQ(s3.node, 1);
  EXPECT_EQ(s3.local_rank, 1);
  EXPECT_EQ(s3.process.argv, (std::vector<std::string>{"/bin/echo", "--s=0-9,12", "a,b", "7"}));
  const auto& env = s3.process.env;
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("NODE_RANK"), "1");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29511");
  EXPECT_EQ(env.at("DDPBISECT_SAMPLES"), "0-9,12");
  EXPECT_EQ(env.at("DDPBISECT_PARAM_STEPS"), "7");
  EXPECT_EQ(env.at("DDPBISECT_TRIAL_TOKEN"), "tok");
  EXPECT_EQ(env.at("PYTHONFAULTHANDLER"), "1");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "4");  // the spec wins over the default of 1
}

TEST(RankPlan, OverridesApplyToTheTrial) {
  auto r = load_spec_text(
      "workload: {command: [/bin/true], params: {steps: 3}}\nstages: [{name: a}]\n", "/tmp/y.yaml");
  ASSERT_TRUE(r.spec);
  TrialConfig t = initial_config(*r.spec, r.spec->stages[0]);
  EXPECT_EQ(apply_override(t, "steps=9"), "");
  EXPECT_EQ(t.params.at("steps"), 9);
  EXPECT_EQ(apply_override(t, "nodes=2"), "");
  EXPECT_EQ(t.world_size(), 2);
  EXPECT_NE(apply_override(t, "stepz=1"), "");
  EXPECT_NE(apply_override(t, "steps=-1"), "");
  EXPECT_NE(apply_override(t, "samples=4-1"), "");
  EXPECT_NE(apply_override(t, "noequals"), "");
}

TEST(RankPlan, WarmStartsWrapOnlyPythonScriptsAndModules) {
  EXPECT_TRUE(warm_startable({"python3", "train.py", "--epochs", "2"}));
  EXPECT_TRUE(warm_startable({"/usr/bin/python3.11", "-u", "-m", "pkg.train"}));
  EXPECT_FALSE(warm_startable({"python3", "-c", "print(1)"}));
  EXPECT_FALSE(warm_startable({"python3", "-X", "dev", "train.py"}));
  EXPECT_FALSE(warm_startable({"python3", "-m"}));
  EXPECT_FALSE(warm_startable({"bash", "run.sh"}));
  EXPECT_FALSE(warm_startable({"torchrun", "--nproc-per-node=2", "train.py"}));

  auto r = load_spec_text(R"(workload:
  command: [python3, train.py, "--samples={samples}"]
  samples: 4
  preload: [torch, torch.distributed]
stages: [{name: one, nodes: 1, procs_per_node: 2}]
)",
                          "/tmp/x.yaml");
  ASSERT_TRUE(r.spec);
  EXPECT_EQ(r.spec->command->preload, (std::vector<std::string>{"torch", "torch.distributed"}));
  TrialConfig t = initial_config(*r.spec, r.spec->stages[0]);
  TrialPlace place{"/tmp/trial", "/tmp/trial/config.json", "127.0.0.1", 29511, "tok", {}, "sock"};
  auto slots = plan_ranks(*r.spec, t, place);
  ASSERT_EQ(slots.size(), 2u);
  const auto& argv = slots[1].process.argv;
  auto stub = std::find(argv.begin(), argv.end(), "--socket");
  ASSERT_NE(stub, argv.end());
  EXPECT_EQ(std::filesystem::path(*(stub - 1)).filename(), "ddpbisect-warm");
  EXPECT_EQ(*(stub + 1), "sock");
  EXPECT_EQ(argv.back(), "--samples=0-3");
  EXPECT_EQ(*(argv.end() - 3), "python3");

  // The server shares every variable of the ranks but their identity.
  const ProcessSpec server = warm_server_process(*r.spec);
  EXPECT_EQ(server.argv.front(), "python3");
  EXPECT_EQ(server.env.count("DDPBISECT_TRIAL_TOKEN"), 0u);
  EXPECT_EQ(server.env.count("DDPBISECT_AGENT"), 1u);
  EXPECT_EQ(server.env.at("PYTHONPATH"), slots[0].process.env.at("PYTHONPATH"));
  EXPECT_EQ(server.env.count("RANK"), 0u);
}

// Issue 28: warm starts are the default for a command workload with the agent; `preload: none`
// turns them off, and a minimal spec written from a default one does not spell the default out.
TEST(RankPlan, WarmStartsAreTheDefaultUnlessTurnedOff) {
  const std::string head = "workload:\n  command: [python3, train.py]\n";
  const std::string tail = "stages: [{name: one, nodes: 1, procs_per_node: 2}]\n";
  auto plain = load_spec_text(head + tail, "/tmp/x.yaml");
  ASSERT_TRUE(plain.spec);
  EXPECT_TRUE(plain.spec->command->preload_default);
  EXPECT_NE(std::find(plain.spec->command->preload.begin(), plain.spec->command->preload.end(),
                      "torch.distributed"),
            plain.spec->command->preload.end());
  EXPECT_FALSE(spec_to_json(*plain.spec)["workload"].contains("preload"));

  auto off = load_spec_text(head + "  preload: none\n" + tail, "/tmp/x.yaml");
  ASSERT_TRUE(off.spec);
  EXPECT_TRUE(off.spec->command->preload.empty());
  EXPECT_FALSE(off.spec->command->preload_default);
  EXPECT_EQ(spec_to_json(*off.spec)["workload"]["preload"], "none");  // a repro stays cold

  auto no_agent = load_spec_text(head + "  agent: false\n" + tail, "/tmp/x.yaml");
  ASSERT_TRUE(no_agent.spec);
  EXPECT_TRUE(no_agent.spec->command->preload.empty());

  auto asked = load_spec_text(head + "  preload: auto\n" + tail, "/tmp/x.yaml");
  ASSERT_TRUE(asked.spec);
  EXPECT_FALSE(asked.spec->command->preload_default);
  EXPECT_EQ(asked.spec->command->preload, plain.spec->command->preload);
}

// Issue 26: per-rank placeholders in a plain command (torchrun's ${local_rank} spelling too) and
// the topology's; a launcher form keeps ${local_rank} for its launcher.
TEST(RankPlan, EachRankGetsItsOwnPlaceholders) {
  auto r = load_spec_text(R"(workload:
  command: [python3, train.py, "--local_rank={local_rank}", "--rank", "${rank}", "{world_size}",
            "{nodes}x{procs_per_node}", "{{rank}}"]
  preload: none
stages: [{name: two, nodes: 2, procs_per_node: 2}]
)",
                          "/tmp/x.yaml");
  ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].to_string());
  TrialConfig t = initial_config(*r.spec, r.spec->stages[0]);
  TrialPlace place{"/tmp/trial", "/tmp/trial/config.json", "127.0.0.1", 29511, "tok", {}, ""};
  auto slots = plan_ranks(*r.spec, t, place);
  ASSERT_EQ(slots.size(), 4u);
  const auto& argv = slots[3].process.argv;
  EXPECT_EQ(std::vector<std::string>(argv.end() - 6, argv.end()),
            (std::vector<std::string>{"--local_rank=1", "--rank", "3", "4", "2x2", "{rank}"}));
  EXPECT_EQ(*(slots[2].process.argv.end() - 6), "--local_rank=0");

  auto launcher = load_spec_text(R"(workload:
  command: [torchrun, train.py, "--local_rank=${local_rank}"]
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
                                 "/tmp/x.yaml");
  ASSERT_TRUE(launcher.spec);
  auto agents =
      plan_ranks(*launcher.spec, initial_config(*launcher.spec, launcher.spec->stages[0]), place);
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].process.argv.back(), "--local_rank=${local_rank}");
}

// A deepspeed command: one plain process per rank, as deepspeed's launch.py starts it, with its
// variables and not torchrun's others.
TEST(RankPlan, DeepspeedRanksAreStartedAsItsLaunchPyDoes) {
  auto r = load_spec_text(R"(workload:
  command: [python3, -m, deepspeed.launcher.runner, --num_gpus, "8", train.py, "--e={epochs}"]
  params: {epochs: 3}
  preload: none
stages: [{name: two, nodes: 2, procs_per_node: 2}]
)",
                          "/tmp/x.yaml");
  ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].to_string());
  TrialPlace place{"/tmp/trial", "/tmp/trial/config.json", "127.0.0.1", 29511, "tok", {}, ""};
  auto slots = plan_ranks(*r.spec, initial_config(*r.spec, r.spec->stages[0]), place);
  ASSERT_EQ(slots.size(), 4u);
  const auto& argv = slots[3].process.argv;
  EXPECT_EQ(std::vector<std::string>(argv.end() - 5, argv.end()),
            (std::vector<std::string>{"python3", "-u", "train.py", "--local_rank=1", "--e=3"}));
  const auto& env = slots[3].process.env;
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("CROSS_RANK"), "1");
  EXPECT_EQ(env.at("CROSS_SIZE"), "2");
  EXPECT_EQ(env.at("LOCAL_SIZE"), "2");
  EXPECT_EQ(env.at("MASTER_PORT"), "29511");
  EXPECT_FALSE(env.count("TORCHELASTIC_RUN_ID"));
  EXPECT_FALSE(env.count("LOCAL_WORLD_SIZE"));
}
