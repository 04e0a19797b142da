// Whole reductions on a synthetic workload: the rerun policy (what a deterministic failure pays,
// how flakiness is found and paid for) and the exact minimum it must still reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "reduce/escalate.hpp"
#include "reduce/reducer.hpp"
#include "synthetic.hpp"

using namespace ddpbisect;
using namespace ddpbisect::testing;

namespace {
Spec command_spec() {
  Spec spec;
  CommandWorkload w;
  w.argv = {"train"};
  w.samples = IndexSet::first_n(64);
  w.components = {"norm", "dropout", "stats", "aux_head", "head"};
  w.features = {"grad_clip", "fused_loss", "log_metrics", "async_io"};
  w.params = {{"steps", 8}, {"batch_size", 8}};
  spec.command = w;
  spec.stages = {{"single", 1, 1, "cpu"}, {"node", 1, 2, "cpu"}, {"multinode", 2, 2, "cpu"}};
  return spec;
}

// The planted bug: two ranks, sample 37, async_io on, at least three steps.
bool planted(const TrialConfig& c) {
  bool has37 = false;
  for (int64_t i : c.samples.indices()) has37 = has37 || i == 37;
  return c.world_size() >= 2 && has37 && c.has_feature("async_io") && c.param("steps", 0) >= 3;
}

void expect_planted_minimum(const ReductionResult& r) {
  EXPECT_EQ(r.status, ReductionStatus::Reduced);
  EXPECT_EQ(r.minimal.nodes, 1);
  EXPECT_EQ(r.minimal.procs_per_node, 2);
  EXPECT_EQ(r.minimal.samples.to_string(), "37");
  EXPECT_TRUE(r.minimal.components.empty());
  EXPECT_EQ(r.minimal.features, (std::vector<std::string>{"async_io"}));
  EXPECT_EQ(r.minimal.param("steps", 0), 3);
  EXPECT_EQ(r.minimal.param("batch_size", 0), 1);
}

// Chance decided by the trial's seed, so that a fixed journal salt gives a fixed reduction.
bool chance(const TrialConfig& c, double p) {
  std::mt19937_64 rng(c.seed);
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

struct ReductionTest : ::testing::Test {
  ScratchDir dir;
  Spec spec = command_spec();
  Synthetic world;
  ReductionOptions options(uint64_t salt) {
    // A journal holding only its header fixes the salt every trial's seed derives from.
    std::ofstream(dir.journal()) << "{\"type\":\"header\",\"salt\":" << salt << "}\n";
    ReductionOptions o;
    o.out_dir = dir.path;
    o.resume = true;
    o.quiet = true;
    o.runner = world.runner();
    return o;
  }
};
}  // namespace

TEST_F(ReductionTest, ADeterministicFailurePaysTwoRerunsBeforeAndWhatTrustNeedsAfter) {
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  ReductionResult r = run_reduction(spec, options(1));
  expect_planted_minimum(r);
  EXPECT_EQ(world.runs_of(r.original), 3);  // found, then two reruns
  EXPECT_EQ(r.confirm_runs, 4);             // accepted, then 5 - 2 reruns at 0.95
  EXPECT_EQ(r.confirm_failures, 4);
  EXPECT_EQ(r.repeats, 1);
  // single passes, node fails, the job (multinode) fails the same way; two reruns
  EXPECT_EQ(r.escalation_trials, 2 + 1 + 2);
}

TEST_F(ReductionTest, AFlakyFailureReachesTheExactMinimum) {
  spec.reduce.confidence = 0.999;
  world.fails = [](const TrialConfig& c, int) { return planted(c) && chance(c, 0.6); };
  for (uint64_t salt : {11, 12, 13}) {
    ScratchDir fresh;
    dir.path.swap(fresh.path);
    ReductionResult r = run_reduction(spec, options(salt));
    expect_planted_minimum(r);
    EXPECT_GT(r.repeats, 1) << salt;
    EXPECT_LT(static_cast<double>(r.confirm_failures) / r.confirm_runs, 1.0) << salt;
    dir.path.swap(fresh.path);
  }
}

TEST_F(ReductionTest, FlakinessFirstSeenAtTheConfirmationIsMeasuredAndReducedAgain) {
  // Every first run of a configuration tells the truth; reruns of all but the original
  // configuration fail half the time: the reduction believes the failure deterministic until
  // its minimum misses on a rerun.
  TrialConfig original;
  world.fails = [&](const TrialConfig& c, int before) {
    if (!planted(c)) return false;
    if (original.stage.empty()) original = c;
    return before == 0 || c.canonical() == original.canonical() || chance(c, 0.5);
  };
  ReductionResult r = run_reduction(spec, options(5));
  expect_planted_minimum(r);
  EXPECT_GT(r.repeats, 1);
  EXPECT_LT(r.target_rate, 1.0);
  EXPECT_EQ(r.confirm_runs, 11);  // the flaky confirmation: accepted + 10
  EXPECT_LT(r.confirm_failures, r.confirm_runs);
}

TEST_F(ReductionTest, AWrongTurnTakenBeforeTheFailureWasKnownFlakyIsUndone) {
  // The job (2x2) fails every time; every first run of a one-node, two-rank configuration
  // misses and later runs of any other configuration fail 60 % of the time. Believed
  // deterministic, the passes reject 1x2 after one run and keep 2x1, whose confirmation then
  // misses: the reduction must go back to the job, not shrink 2x1, to end at 1x2.
  TrialConfig original;
  world.fails = [&](const TrialConfig& c, int before) {
    if (!planted(c)) return false;
    if (original.stage.empty() && c.nodes == 2) original = c;
    if (c.canonical() == original.canonical()) return true;
    if (before == 0) return !(c.nodes == 1 && c.procs_per_node == 2);
    return chance(c, 0.6);
  };
  ReductionResult r = run_reduction(spec, options(7));
  expect_planted_minimum(r);
  EXPECT_GT(r.repeats, 1);
  bool restarted = false;
  for (const auto& t : r.trace)
    restarted = restarted || t.config.canonical() == original.canonical();
  EXPECT_TRUE(restarted);
}

namespace {
// Modelled on the Python zoo's size_mismatch: two ranks, `stats` on, an odd number of samples
// (uneven shards) fails; a rank with an empty shard fails differently (a trap).
bool uneven(const TrialConfig& c) {
  return c.world_size() >= 2 && c.has_component("stats") && c.samples.size() % 2 == 1 &&
         c.samples.size() >= 2;
}
bool empty_shard(const TrialConfig& c) {
  return c.samples.size() < c.world_size();
}
}  // namespace

TEST_F(ReductionTest, TheMinimumDoesNotDependOnJobs) {
  spec.command->samples = IndexSet::first_n(63);
  for (bool monotone : {true, false}) {
    std::string first;
    for (int jobs : {1, 2, 4, 8}) {
      ScratchDir fresh;
      dir.path.swap(fresh.path);
      Synthetic w;
      if (monotone) {
        w.fails = [](const TrialConfig& c, int) { return planted(c); };
      } else {
        w.fails = [](const TrialConfig& c, int) { return uneven(c) && !empty_shard(c); };
        w.other_failure = empty_shard;
      }
      w.sleep_ms = 2;  // long enough for trials to overlap
      ReductionOptions o = options(7);
      o.runner = w.runner();
      o.jobs = jobs;
      ReductionResult r = run_reduction(spec, o);
      EXPECT_EQ(r.status, ReductionStatus::Reduced);
      if (jobs == 1) first = r.minimal.canonical();
      EXPECT_EQ(r.minimal.canonical(), first) << "jobs " << jobs << " monotone " << monotone;
      if (jobs > 1) {
        EXPECT_GT(w.peak.load(), 1) << "jobs " << jobs;
      }
      if (monotone) expect_planted_minimum(r);
      dir.path.swap(fresh.path);
    }
  }
}

namespace {
// When each trial started and ended, as ticks of one counter: which trials ran side by side.
struct Timeline {
  struct Span {
    TrialConfig config;
    Env env;
    int start, end;
  };
  std::mutex mu;
  std::vector<Span> spans;
  std::atomic<int> tick{0};

  TrialRunner around(Synthetic& world) {
    return [this, &world](const TrialRequest& req) {
      const int start = ++tick;
      TrialOutcome out = world.run(req);
      const int end = ++tick;
      std::lock_guard<std::mutex> lock(mu);
      if (out.status != TrialStatus::Interrupted)
        spans.push_back({req.config, req.extra_env, start, end});
      return out;
    };
  }
  // A reduction of `spec` with `jobs` slots, its trials recorded here.
  ReductionResult reduce(const Spec& spec, ReductionOptions o, Synthetic& world, int jobs = 4) {
    o.jobs = jobs;
    o.runner = around(world);
    return run_reduction(spec, o);
  }
  // The spans `which` picks, by start.
  std::vector<const Span*> all(const std::function<bool(const Span&)>& which) const {
    std::vector<const Span*> out;
    for (const auto& s : spans)
      if (which(s)) out.push_back(&s);
    std::sort(out.begin(), out.end(),
              [](const Span* a, const Span* b) { return a->start < b->start; });
    return out;
  }
};
}  // namespace

// Every configuration fails: each pass is answered by its first question (steps 1, then one
// sample, then no components, ...). While the steps pass waits for its answer, free slots run
// the questions of the passes after it: the components pass's starts before the steps pass's
// trial ends. Without the lookahead it would wait for the steps and sample_count passes.
TEST_F(ReductionTest, APassWaitingForItsAnswerLendsFreeSlotsToThePassesAfterIt) {
  world.sleep_ms = 100;
  Timeline timeline;
  ReductionResult r = timeline.reduce(spec, options(21), world);
  ASSERT_EQ(r.status, ReductionStatus::Reduced);
  EXPECT_EQ(r.minimal.samples.size(), 1);
  EXPECT_TRUE(r.minimal.components.empty());
  EXPECT_TRUE(r.minimal.features.empty());
  const auto steps = timeline.all([](const Timeline::Span& s) {
    return s.config.param("steps", 0) == 1 && s.config.samples.size() == 64 &&
           s.config.components.size() == 5;
  });
  const auto components =
      timeline.all([](const Timeline::Span& s) { return s.config.components.empty(); });
  ASSERT_FALSE(steps.empty());
  ASSERT_FALSE(components.empty());
  EXPECT_LT(components[0]->start, steps[0]->end);
}

// The single stage's trial is slow and passes; the node stage's fails at once. While the climb
// waits for the single stage, the node stage runs beside it, and once it has failed its two
// reruns start too: the single stage's trial is still running when all three have started. The
// answer and the trials counted are the sequential climb's.
TEST_F(ReductionTest, TheClimbRunsTheNextStagesAndTheRerunsWhileALowerStageRuns) {
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  world.duration_ms = [](const TrialConfig& c) { return c.world_size() == 1 ? 400 : 10; };
  Timeline timeline;
  ReductionResult r = timeline.reduce(spec, options(22), world);
  expect_planted_minimum(r);
  EXPECT_EQ(r.stage, "node");
  EXPECT_EQ(world.runs_of(r.original), 3);  // as with one slot: found, then two reruns
  ASSERT_FALSE(r.tried.empty());
  const std::string single_key = r.tried.front().first.canonical();
  const auto single =
      timeline.all([&](const Timeline::Span& s) { return s.config.canonical() == single_key; });
  const auto node = timeline.all(
      [&](const Timeline::Span& s) { return s.config.canonical() == r.original.canonical(); });
  ASSERT_EQ(single.size(), 1u);
  ASSERT_GE(node.size(), 3u);
  EXPECT_LT(node[2]->start, single[0]->end);
}

// A hang's debug variants (DETAIL, then INFO) run beside the minimum's confirmation reruns, in
// the slots those leave, instead of after them.
TEST_F(ReductionTest, DebugVariantsRunBesideTheConfirmationReruns) {
  world.signature.category = "hang";
  world.signature.exception = "";
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  world.sleep_ms = 50;
  Timeline timeline;
  ReductionResult r = timeline.reduce(spec, options(23), world);
  expect_planted_minimum(r);
  ASSERT_TRUE(r.debug_run.has_value());
  const auto debug = timeline.all([](const Timeline::Span& s) { return !s.env.empty(); });
  const auto minimum = timeline.all([&](const Timeline::Span& s) {
    return s.env.empty() && s.config.canonical() == r.minimal.canonical();
  });
  ASSERT_FALSE(debug.empty());
  ASSERT_GE(minimum.size(), 4u);  // the one that accepted it, then three reruns
  EXPECT_LT(debug[0]->start, minimum.back()->end);
}

TEST_F(ReductionTest, EscalationStartsWhereTheFailureWasSeen) {
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  ReductionOptions o = options(3);
  o.start_stage = "multinode";
  ReductionResult r = run_reduction(spec, o);
  expect_planted_minimum(r);
  ASSERT_FALSE(r.tried.empty());
  EXPECT_EQ(r.tried.front().first.stage, "multinode");  // single and node were not climbed
  EXPECT_EQ(r.stage, "multinode");
}

TEST(Escalation, ACheapVariantMustHalveTheWork) {
  TrialConfig full;
  full.samples = IndexSet::first_n(64);
  full.params = {{"steps", 12}};
  TrialConfig cheap = full;
  cheap.params["steps"] = 8;  // a third less: start-up dominates, not worth a trial
  EXPECT_FALSE(worth_a_cheap_trial(cheap, full));
  cheap.params["steps"] = 6;
  EXPECT_TRUE(worth_a_cheap_trial(cheap, full));
  EXPECT_FALSE(worth_a_cheap_trial(full, full));
  TrialConfig big = full;
  big.samples = IndexSet::first_n(4096);
  TrialConfig fewer = big;
  fewer.samples = IndexSet::first_n(1024);
  EXPECT_TRUE(worth_a_cheap_trial(fewer, big));
}

TEST(Escalation, TheLogsWorldSizePicksTheFirstStage) {
  Spec spec = command_spec();
  EscalationOptions o;
  EXPECT_EQ(first_stage(spec, o), 0u);
  o.seen_world_size = 2;
  EXPECT_EQ(first_stage(spec, o), 1u);
  o.seen_world_size = 3;
  EXPECT_EQ(first_stage(spec, o), 2u);
  o.seen_world_size = 64;  // larger than every stage: climb them all
  EXPECT_EQ(first_stage(spec, o), 0u);
  o.start_stage = "node";
  EXPECT_EQ(first_stage(spec, o), 1u);
}

TEST_F(ReductionTest, ADebugRerunThatCrashesIsANoteAndINFOIsTriedNext) {
  world.signature.category = "hang";
  world.signature.exception = "";
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  world.crash = [](const TrialRequest& req) -> std::optional<Signature> {
    auto it = req.extra_env.find("TORCH_DISTRIBUTED_DEBUG");
    if (it == req.extra_env.end() || it->second != "DETAIL") return std::nullopt;
    Signature segv;  // PyTorch 2.x: DDP's constructor under DETAIL with Gloo
    segv.category = "signal";
    segv.exception = "SIGSEGV";
    return segv;
  };
  ReductionResult r = run_reduction(spec, options(4));
  expect_planted_minimum(r);
  ASSERT_TRUE(r.debug_run.has_value());
  // A hang's rerun also turns the Flight Recorder on (observe/stacks.hpp).
  EXPECT_EQ(r.debug_env,
            (Env{{"TORCH_DISTRIBUTED_DEBUG", "INFO"}, {"DDPBISECT_FLIGHT_RECORDER", "1"}}));
  EXPECT_EQ(r.debug_run->signature->category, "hang");
  ASSERT_EQ(r.debug_notes.size(), 1u);
  EXPECT_NE(r.debug_notes[0].find("TORCH_DISTRIBUTED_DEBUG=DETAIL"), std::string::npos);
  EXPECT_NE(r.debug_notes[0].find("signal SIGSEGV"), std::string::npos);
  EXPECT_NE(r.debug_notes[0].find("crashes in its constructor"), std::string::npos);
}

TEST_F(ReductionTest, UnusedParametersGetAnInfoRerun) {
  world.signature.category = "ddp_unused_parameters";
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  ReductionResult r = run_reduction(spec, options(5));
  ASSERT_TRUE(r.debug_run.has_value());
  EXPECT_EQ(r.debug_env, (Env{{"TORCH_DISTRIBUTED_DEBUG", "INFO"}}));
  EXPECT_TRUE(r.debug_notes.empty());
}

// Issue #29: the debug reruns are the category table's (common/categories.def); the reducer
// once kept its own list, in which DDP's marked-twice error had none.
TEST_F(ReductionTest, AMarkedTwiceErrorGetsTheTablesInfoRerun) {
  world.signature.category = "ddp_marked_twice";
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  ReductionResult r = run_reduction(spec, options(7));
  ASSERT_TRUE(r.debug_run.has_value());
  EXPECT_EQ(r.debug_env, (Env{{"TORCH_DISTRIBUTED_DEBUG", "INFO"}}));
}

TEST_F(ReductionTest, DetailIsFollowedByAnInfoVariantAndTheRestIsKept) {
  std::vector<Env> v = debug_variants(spec, "nccl_error");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], (Env{{"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}, {"NCCL_DEBUG", "INFO"}}));
  EXPECT_EQ(v[1], (Env{{"TORCH_DISTRIBUTED_DEBUG", "INFO"}, {"NCCL_DEBUG", "INFO"}}));
  EXPECT_EQ(debug_variants(spec, "cuda_error"),
            (std::vector<Env>{{{"CUDA_LAUNCH_BLOCKING", "1"}}}));
  EXPECT_TRUE(debug_variants(spec, "python_exception").empty());
  EXPECT_TRUE(debug_variants(spec, "no_such_category").empty());
  Spec builtin = spec;
  builtin.command.reset();  // the built-in worker reads none of these variables
  EXPECT_TRUE(debug_variants(builtin, "nccl_error").empty());
}

TEST_F(ReductionTest, APythonExceptionGetsNoDebugRerun) {
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  ReductionResult r = run_reduction(spec, options(6));
  EXPECT_FALSE(r.debug_run.has_value());
  EXPECT_TRUE(r.debug_env.empty());
}

// Issue #25: a cheaper configuration's own failure (a world-size check on one rank) is not the
// job's. The job fails otherwise: that failure is the target, found on the first stage that
// shows it.
TEST_F(ReductionTest, ACheapStagesOwnFailureIsNotTheTargetWhenTheJobFailsOtherwise) {
  world.fails = [](const TrialConfig& c, int) { return planted(c); };
  world.crash = [](const TrialRequest& req) -> std::optional<Signature> {
    if (req.config.world_size() != 1) return std::nullopt;
    Signature s;
    s.category = "python_exception";
    s.exception = "ValueError";
    s.frame = "trainer.py:setup";
    return s;
  };
  ReductionResult r = run_reduction(spec, options(3));
  expect_planted_minimum(r);
  EXPECT_EQ(r.target.exception, "RuntimeError");
  EXPECT_EQ(r.stage, "node");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("stage 'single' failed with python_exception ValueError"),
            std::string::npos)
      << r.notes.front();
  EXPECT_NE(r.notes.front().find("not your job's failure"), std::string::npos);
}

// ... and a job that passes has nothing to reduce, whatever a cheaper stage did.
TEST_F(ReductionTest, ACheapStagesFailureIsNothingToReduceWhenTheJobPasses) {
  world.fails = [](const TrialConfig& c, int) { return c.world_size() == 1; };
  ReductionResult r = run_reduction(spec, options(4));
  EXPECT_EQ(r.status, ReductionStatus::NotReproduced);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("nothing of your job's to reduce"), std::string::npos)
      << r.notes.front();
  // The job got its extra chances (a flaky failure can hide from one run).
  EXPECT_EQ(world.runs_of(initial_config(spec, spec.stages.back())), 4);
}

// A launcher that dies by itself before any rank runs: the first configuration's three tries say
// so and the climb stops there; nothing is reduced and the result says why.
TEST_F(ReductionTest, AJobThatNeverStartsStopsTheClimbAtItsFirstConfiguration) {
  world.never_starts = [](const TrialConfig&) { return true; };
  ReductionResult r = run_reduction(spec, options(5));
  EXPECT_EQ(r.status, ReductionStatus::NotReproduced);
  EXPECT_EQ(r.not_started,
            "the job never started: the launcher on node 0 failed before any rank ran");
  EXPECT_EQ(world.trials.load(), 3);  // one configuration, the oracle's three tries
  ASSERT_EQ(r.tried.size(), 1u);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("That is the launch, not your job"), std::string::npos)
      << r.notes.back();
  // Resumed, the journal's three tries answer again (their reason with them): no new trial.
  ReductionOptions again;
  again.out_dir = dir.path;
  again.resume = true;
  again.quiet = true;
  again.runner = world.runner();
  ReductionResult resumed = run_reduction(spec, again);
  EXPECT_EQ(resumed.not_started, r.not_started);
  EXPECT_EQ(world.trials.load(), 3);
}

// Once a stage has run the job, a bigger stage whose launcher fails is that stage's infra: the
// climb goes on and finds the failure above it.
TEST_F(ReductionTest, ALauncherFailingOnlyAboveAStageThatRanIsThatStagesInfra) {
  world.never_starts = [](const TrialConfig& c) { return c.stage == "node"; };
  world.fails = [](const TrialConfig& c, int) { return c.nodes == 2 && c.world_size() >= 2; };
  ReductionResult r = run_reduction(spec, options(6));
  EXPECT_TRUE(r.not_started.empty());
  EXPECT_EQ(r.status, ReductionStatus::Reduced);
  EXPECT_EQ(r.stage, "multinode");
}
