#include "spec/loader.hpp"

#include <gtest/gtest.h>

#include "spec/serialize.hpp"
#include "spec/trial_config.hpp"

using namespace ddpbisect;

namespace {
const char* kBuiltin = R"(version: 1
name: t
workload:
  builtin:
    model: [embedding, linear, dropout, head]
    dataset: {kind: synthetic, samples: 256, seed: 3}
    features: [grad_clip]
    params: {steps: 20, batch_size: 8}
    collective_timeout: 3s
    lr: 0.2
    faults:
      - kind: raise
        message: boom
        requires: {ranks: [1], min_world_size: 2, step: 5, samples: "37,40-41",
                   params: {batch_size: {min: 8}}, components: [dropout]}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
limits: {trial_timeout: 2m, hang_after: 7s}
reduce: {budget: {max_trials: 50}}
)";
}  // namespace

TEST(Loader, LoadsBuiltinSpec) {
  auto r = load_spec_text(kBuiltin, "/tmp/t.yaml");
  ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const Spec& s = *r.spec;
  ASSERT_TRUE(s.builtin);
  EXPECT_EQ(s.builtin->model.size(), 4u);
  EXPECT_EQ(s.builtin->dataset.samples, 256);
  EXPECT_EQ(s.builtin->params.at("steps"), 20);
  ASSERT_EQ(s.builtin->faults.size(), 1u);
  const auto& q = s.builtin->faults[0].requires_;
  EXPECT_EQ(*q.min_world_size, 2);
  EXPECT_EQ(q.samples->to_string(), "37,40-41");
  EXPECT_EQ(*q.params.at("batch_size").min, 8);
  EXPECT_FALSE(q.params.at("batch_size").max);
  EXPECT_EQ(s.stages[1].world_size(), 2);
  EXPECT_EQ(s.limits.trial_timeout.count(), 120'000);
  EXPECT_EQ(s.limits.hang_after->count(), 7000);
  EXPECT_EQ(*s.reduce.max_trials, 50);
  EXPECT_EQ(s.builtin->collective_timeout.count(), 3000);
  EXPECT_DOUBLE_EQ(s.builtin->lr, 0.2);
  EXPECT_TRUE(s.reduce.enabled("samples"));
}

TEST(Loader, NormalizedFormRoundTrips) {
  auto r = load_spec_text(kBuiltin, "/tmp/t.yaml");
  ASSERT_TRUE(r.spec);
  std::string yaml = json_to_yaml(spec_to_json(*r.spec));
  auto again = load_spec_text(yaml, "/tmp/t.yaml");
  ASSERT_TRUE(again.spec) << yaml << (again.errors.empty() ? "" : again.errors[0].to_string());
  EXPECT_EQ(spec_to_json(*again.spec), spec_to_json(*r.spec));
}

TEST(Loader, SingleSampleStaysAnIndexAfterRoundTrip) {
  const char* text = R"(workload:
  command: [/bin/true, "{samples}"]
  samples: "37"
stages: [{nodes: 1, procs_per_node: 1}]
)";
  auto r = load_spec_text(text, "/tmp/c.yaml");
  ASSERT_TRUE(r.spec);
  EXPECT_EQ(r.spec->command->samples.to_string(), "37");
  auto again = load_spec_text(json_to_yaml(spec_to_json(*r.spec)), "/tmp/c.yaml");
  ASSERT_TRUE(again.spec);
  EXPECT_EQ(again.spec->command->samples.to_string(), "37");
}

// Issue #16: the agent's keys, and their normalized form (repro.yaml keeps the auto samples).
TEST(Loader, AgentKeysRoundTrip) {
  const char* text = R"(workload:
  command: [/bin/true]
  samples: auto
  steps: auto
  state: [/tmp]
stages: [{nodes: 1, procs_per_node: 1}]
)";
  auto r = load_spec_text(text, "/tmp/c.yaml");
  ASSERT_TRUE(r.spec) << r.errors[0].to_string();
  const CommandWorkload& c = *r.spec->command;
  EXPECT_TRUE(c.agent && c.samples_auto && c.steps_auto);
  EXPECT_TRUE(c.samples.empty());
  EXPECT_EQ(c.state, std::vector<std::string>{"/tmp"});
  Spec minimal = *r.spec;
  minimal.command->samples = IndexSet::from_indices({301});
  auto again = load_spec_text(json_to_yaml(spec_to_json(minimal)), "/tmp/c.yaml");
  ASSERT_TRUE(again.spec) << again.errors[0].to_string();
  EXPECT_TRUE(again.spec->command->samples_auto && again.spec->command->steps_auto);
  EXPECT_EQ(again.spec->command->samples.to_string(), "301");
  EXPECT_EQ(again.spec->command->state, c.state);
}

TEST(Loader, AgentKeysErrors) {
  const char* text = R"(workload:
  command: [/bin/true]
  agent: false
  samples: auto
  steps: 12
  state: [/no/such/path]
stages: [{nodes: 1, procs_per_node: 1}]
)";
  auto r = load_spec_text(text, "/tmp/c.yaml");
  EXPECT_FALSE(r.spec);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].path, "workload.samples");
  EXPECT_NE(r.errors[0].message.find("needs the agent"), std::string::npos);
  EXPECT_EQ(r.errors[1].path, "workload.steps");
  EXPECT_NE(r.errors[1].message.find("params: {steps: N}"), std::string::npos);
  EXPECT_EQ(r.errors[2].path, "workload.state[0]");
  EXPECT_EQ(r.errors[2].line, 6);
}

TEST(Loader, CommandSpecWithCountAndPlaceholders) {
  const char* text = R"(workload:
  command: [/bin/true, --n, "{samples}", "--steps={steps}", "{{literal}}"]
  samples: 512
  components: [aux_head]
  params: {steps: 30}
stages: [{nodes: 1, procs_per_node: 2}]
)";
  auto r = load_spec_text(text, "/tmp/c.yaml");
  ASSERT_TRUE(r.spec) << r.errors[0].to_string();
  EXPECT_EQ(r.spec->command->samples.size(), 512);
  EXPECT_EQ(r.spec->stages[0].name, "1x2");
  EXPECT_EQ(r.spec->command->cwd, "/tmp");
}

TEST(Loader, CollectsEveryErrorInOrder) {
  const char* text = R"(version: 1
workload:
  builtin:
    model: [embeding, head]
    dataset: {kind: synthetic, samples: -4}
stages:
  - {name: a, nodes: 0, procs_per_nod: 2}
)";
  auto r = load_spec_text(text, "x.yaml");
  EXPECT_FALSE(r.spec);
  ASSERT_EQ(r.errors.size(), 4u);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_NE(r.errors[0].message.find("did you mean 'embedding'"), std::string::npos);
  EXPECT_EQ(r.errors[1].line, 5);
  EXPECT_EQ(r.errors[1].path, "workload.builtin.dataset.samples");
  EXPECT_EQ(r.errors[2].line, 7);
  EXPECT_EQ(r.errors[2].path, "stages[0].nodes");
  EXPECT_NE(r.errors[3].message.find("did you mean 'procs_per_node'"), std::string::npos);
  EXPECT_EQ(r.errors[3].to_string().rfind("x.yaml:7:", 0), 0u);
}

TEST(Loader, RejectsCudaForCpuOnlyWorker) {
  if (worker_has_cuda()) GTEST_SKIP() << "this build's worker has CUDA";
  const char* text = R"(workload:
  builtin: {model: [linear], dataset: {samples: 8}}
stages: [{nodes: 1, procs_per_node: 1, device: cuda}]
)";
  auto r = load_spec_text(text, "g.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("CPU-only libtorch"), std::string::npos);
  EXPECT_EQ(r.errors[0].line, 3);
}

TEST(Loader, ShippedConfigsAreValid) {
  for (const char* f : {"configs/demo.yaml", "configs/examples/python-command.yaml",
                        "configs/examples/multinode.yaml"}) {
    auto r = load_spec_file(std::string(DDPBISECT_SOURCE_DIR) + "/" + f);
    EXPECT_TRUE(r.spec) << f << ": " << (r.errors.empty() ? "" : r.errors[0].to_string());
  }
}

TEST(CheapVariant, AtMostAQuarterOfTheSamplesAndSteps) {
  TrialConfig full;
  full.samples = IndexSet::first_n(486);
  full.params = {{"steps", 40}};
  TrialConfig c = cheap_variant(full);
  EXPECT_EQ(c.samples.size(), 121);  // 486 / 4, not the old floor of 256
  EXPECT_EQ(c.params["steps"], 10);
  full.samples = IndexSet::first_n(64);  // too few to cut
  full.params = {{"steps", 6}};
  c = cheap_variant(full);
  EXPECT_EQ(c.samples.size(), 64);
  EXPECT_EQ(c.params["steps"], 6);
}

TEST(Loader, NormalizedFormQuotesStringsThatAreNotPlainYaml) {
  const std::string text = R"YAML(version: 1
name: "`backtick` @at %pct"
workload:
  command: [python3, train.py, "`touch pwned`", "$(id)", "@x", "it's", "a: b", "- c"]
  samples: 4
stages:
  - {name: one, nodes: 1, procs_per_node: 1}
)YAML";
  LoadResult r = load_spec_text(text, DDPBISECT_SOURCE_DIR "/tests/specs/x.yaml");
  ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const std::string yaml = json_to_yaml(spec_to_json(*r.spec));  // threw on the backtick
  LoadResult again = load_spec_text(yaml, DDPBISECT_SOURCE_DIR "/tests/specs/x.yaml");
  ASSERT_TRUE(again.spec) << yaml;
  EXPECT_EQ(again.spec->command->argv, r.spec->command->argv);
  EXPECT_EQ(again.spec->name, "`backtick` @at %pct");
}

// Issue #19 (fuzz): a spec value with bytes that are not UTF-8 loaded, and every JSON text made
// from the spec then threw. A spec is UTF-8 text; anything else is an error at its place.
TEST(Loader, BytesThatAreNotUtf8AreAnErrorAtTheirLineAndColumn) {
  std::string text = kBuiltin;
  text.replace(text.find("name: t"), 7, "name: t\xdf\xff");
  auto r = load_spec_text(text, "/tmp/t.yaml");
  ASSERT_FALSE(r.spec);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[0].column, 8);
  EXPECT_NE(r.errors[0].message.find("not UTF-8"), std::string::npos) << r.errors[0].message;
  EXPECT_NE(r.errors[0].message.find("0xDF"), std::string::npos) << r.errors[0].message;
}

// yaml-cpp rejects an escape that decodes to no character: the only other way a string that is
// not UTF-8 could enter a spec.
TEST(Loader, AnEscapeThatDecodesToNoCharacterIsAnErrorAtItsValue) {
  std::string text = kBuiltin;
  text.replace(text.find("message: boom"), 13, "message: \"bo\\ud800om\"");
  auto r = load_spec_text(text, "/tmp/t.yaml");
  ASSERT_FALSE(r.spec);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 13) << r.errors[0].to_string();
}

TEST(Loader, SampleIndicesAreBounded) {
  std::string text = kBuiltin;
  text.replace(text.find("samples: \"37,40-41\""), 19, "samples: [37, 9223372036854775807]");
  auto r = load_spec_text(text, "/tmp/t.yaml");
  ASSERT_FALSE(r.spec);
  EXPECT_NE(r.errors[0].message.find(std::to_string(IndexSet::kMaxIndex)), std::string::npos)
      << r.errors[0].to_string();
}
