// Each reduction pass alone on a synthetic predicate: what it keeps, and that it keeps nothing
// more than the predicate needs.
#include <gtest/gtest.h>

#include <algorithm>

#include "reduce/pass.hpp"
#include "synthetic.hpp"

using namespace ddpbisect;
using namespace ddpbisect::testing;

namespace {
bool has_sample(const TrialConfig& c, int64_t s) {
  auto v = c.samples.indices();
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct PassTest : ::testing::Test {
  ScratchDir dir;
  Spec spec;
  Synthetic world;
  std::unique_ptr<Journal> journal;
  std::unique_ptr<Oracle> oracle;
  ReductionState state;

  void SetUp() override {
    journal = std::make_unique<Journal>(dir.journal(), false);
    OracleOptions o;
    o.out_dir = dir.path;
    oracle = std::make_unique<Oracle>(spec, o, *journal, nullptr, world.runner());
    oracle->set_target(target_signature(), 1.0);
    state.spec = &spec;
    state.best = big_config();
  }
  // Runs the named pass of the default strategy on state.best; returns whether it progressed.
  bool run(const std::string& name) {
    for (auto& p : make_passes("default"))
      if (p->name() == name) return p->run(state, *oracle);
    ADD_FAILURE() << "no pass " << name;
    return false;
  }
};
}  // namespace

TEST_F(PassTest, TopologyKeepsTheFewestRanksFewerNodesFirst) {
  world.fails = [](const TrialConfig& c, int) { return c.world_size() >= 2; };
  EXPECT_TRUE(run("topology"));
  EXPECT_EQ(state.best.nodes, 1);
  EXPECT_EQ(state.best.procs_per_node, 2);
  EXPECT_FALSE(run("topology"));
}

TEST_F(PassTest, TopologyKeepsTwoNodesWhenTheFailureNeedsThem) {
  world.fails = [](const TrialConfig& c, int) { return c.nodes >= 2; };
  EXPECT_TRUE(run("topology"));
  EXPECT_EQ(state.best.nodes, 2);
  EXPECT_EQ(state.best.procs_per_node, 1);
}

TEST_F(PassTest, StepsCutsAfterTheFailingStep) {
  world.last_step = 3;  // steps 0..3 completed: the failure came in step 4
  world.fails = [](const TrialConfig& c, int) { return c.param("steps", 0) >= 5; };
  oracle->run(state.best);  // the run that found the failure
  EXPECT_TRUE(run("steps"));
  EXPECT_EQ(state.best.param("steps", 0), 5);
  EXPECT_EQ(world.trials.load(), 3);  // the failing run, the cut and its lower neighbour
}

// Issue #28: a failure raised after the optimizer step of the same iteration (a metric or EMA
// update after opt.step()) comes after that step's heartbeat; the cut keeps one step too many.
TEST_F(PassTest, StepsKeepsOneFewerWhenTheFailureFollowsTheHeartbeat) {
  world.last_step = 3;  // steps 0..3 sent heartbeats, and step 3 failed after its own
  world.fails = [](const TrialConfig& c, int) { return c.param("steps", 0) >= 4; };
  oracle->run(state.best);
  EXPECT_TRUE(run("steps"));
  EXPECT_EQ(state.best.param("steps", 0), 4);
  EXPECT_EQ(world.trials.load(), 4);  // the failing run, the cut, 4 and 3
}

// A failure at the end of training (a final save) whatever the step count: every step sent its
// heartbeat, the cut is the whole run, and the fewest steps are searched for from 1.
TEST_F(PassTest, StepsSearchesFromOneWhenTheFailureIgnoresTheHeartbeats) {
  const int64_t all = state.best.param("steps", 0);
  ASSERT_GT(all, 3);
  world.last_step = all - 1;
  world.fails = [](const TrialConfig&, int) { return true; };
  oracle->run(state.best);
  EXPECT_TRUE(run("steps"));
  EXPECT_EQ(state.best.param("steps", 0), 1);
}

TEST_F(PassTest, StepsSearchesWhenTheFailureNeedsMoreThanTheCut) {
  world.fails = [](const TrialConfig& c, int) { return c.param("steps", 0) >= 7; };
  EXPECT_TRUE(run("steps"));
  EXPECT_EQ(state.best.param("steps", 0), 7);
}

TEST_F(PassTest, SampleCountKeepsTheShortestFailingPrefix) {
  world.fails = [](const TrialConfig& c, int) { return c.samples.size() >= 38; };
  EXPECT_TRUE(run("sample_count"));
  EXPECT_EQ(state.best.samples.size(), 38);
  EXPECT_LE(world.trials.load(), 8);  // probe + log2(64)
}

TEST_F(PassTest, SampleIndicesFindsEveryCulprit) {
  world.fails = [](const TrialConfig& c, int) { return has_sample(c, 12) && has_sample(c, 40); };
  EXPECT_TRUE(run("sample_indices"));
  EXPECT_EQ(state.best.samples.to_string(), "12,40");
}

TEST_F(PassTest, ComponentsKeepsWhatTheFailureNeeds) {
  world.fails = [](const TrialConfig& c, int) {
    return c.has_component("dropout") && c.has_component("layernorm");
  };
  EXPECT_TRUE(run("components"));
  EXPECT_EQ(state.best.components, (std::vector<std::string>{"dropout", "layernorm"}));
}

TEST_F(PassTest, FeaturesCanAllGo) {
  world.fails = [](const TrialConfig&, int) { return true; };
  EXPECT_TRUE(run("features"));
  EXPECT_TRUE(state.best.features.empty());
  EXPECT_EQ(world.trials.load(), 1);  // the empty set first
}

TEST_F(PassTest, ParamsBinarySearchesEachInteger) {
  world.fails = [](const TrialConfig& c, int) { return c.param("batch_size", 0) >= 6; };
  EXPECT_TRUE(run("params"));
  EXPECT_EQ(state.best.param("batch_size", 0), 6);
  EXPECT_EQ(state.best.param("steps", 0), 12);  // steps is the steps pass's
}

TEST_F(PassTest, ADifferentFailureIsNeverAccepted) {
  // Without `checkpoint` the program fails differently (slippage): that is not the target.
  world.fails = [](const TrialConfig& c, int) { return c.has_feature("checkpoint"); };
  world.other_failure = [](const TrialConfig&) { return true; };
  EXPECT_TRUE(run("features"));
  EXPECT_EQ(state.best.features, (std::vector<std::string>{"checkpoint"}));
}
