// Golden files for report.md, report.json and report.html (tests/golden/report/CASE.EXT): each
// case is a ReductionResult built here as a value (with the minimal trial's outcome made by
// TrialOutcome::to_json, as the trial runner writes it), rendered without any trial folder.
// DDPBISECT_UPDATE_GOLDEN=1 rewrites the files (review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "report/report_json.hpp"
#include "report/report_md.hpp"
#include "spec/loader.hpp"

using namespace ddpbisect;
namespace fs = std::filesystem;

namespace {

const char* kSpec = R"(workload:
  command: [python3, train.py, --steps, "{steps}", --samples, "{samples}"]
  samples: 64
  components: [aux_head, dropout]
  features: [grad_clip]
  params: {steps: 12, batch_size: 8}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
)";

nlohmann::json environment() {
  return {{"ddpbisect", "0.1.0"},
          {"os", "Debian GNU/Linux 12 (bookworm)"},
          {"kernel", "Linux 6.1.0 x86_64"},
          {"python", "3.11.7"},
          {"torch", "2.13.0"},
          {"cuda", nullptr},
          {"cudnn", nullptr},
          {"nccl", nullptr},
          {"gpu_driver", nullptr},
          {"gpus", nlohmann::json::array()},
          {"collect_env", nullptr},
          {"collect_env_error", "collect_env did not run"}};
}

// Rank 1 of 2 raised a NameError in train.py's train() at step 2; rank 0 was stopped.
TrialOutcome minimal_trial(const TrialConfig& c) {
  TrialOutcome o;
  o.dir = "/work/job/out/trials/0009";
  o.status = TrialStatus::Fail;
  o.reason = "rank 1: python_exception NameError at train.py:train";
  o.config = c;
  o.duration_s = 4.5;
  for (int r = 0; r < 2; ++r) {
    RankRecord k;
    k.rank = k.local_rank = r;
    k.start_s = 0.1;
    k.end_s = r == 1 ? 4.0 : 4.4;
    k.exit_code = r == 1 ? 1 : -1;
    k.signal = r == 1 ? 0 : 15;
    k.killed_by = r == 1 ? StopReason::None : StopReason::EarlyStop;
    k.last_step = r == 1 ? 1 : 2;
    k.heartbeats = k.last_step + 1;
    k.step_times = {1.0, 2.0};
    o.ranks.push_back(k);
  }
  Diagnosis d;
  d.failed = true;
  d.root.kind = EventKind::Error;
  d.root.origin.rank = 1;
  d.root.origin.rank_from = "prefix";
  d.root.category = "python_exception";
  d.root.exception = "NameError";
  d.root.message = "name 'lr_scale' is not defined";
  d.root.frames = {{"train.py", 88, "main", true}, {"train.py", 41, "train", true}};
  d.root.excerpt = {"[rank1]: Traceback (most recent call last):",
                    "[rank1]: NameError: name 'lr_scale' is not defined"};
  d.root.source = "node0/rank1.stderr";
  d.signature.category = "python_exception";
  d.signature.exception = "NameError";
  d.signature.frame = "train.py:train";
  d.signature.message = "name 'lr_scale' is not defined";
  d.signature.ranks = {1};
  d.ranks = {
      {0, "", false, "stopped by ddpbisect after rank 1 failed", std::nullopt, ""},
      {1, "python_exception", true, "NameError: name 'lr_scale' is not defined", std::nullopt, ""}};
  d.confidence = "high";
  d.evidence = {"category python_exception from the line in node0/rank1.stderr"};
  d.explanation = "Rank 1 failed first: NameError: name 'lr_scale' is not defined.";
  o.diagnosis = d;
  return o;
}

// The inputs every case shares: the spec, the output folder, the environment.
ReportInputs inputs(const Spec& spec) {
  ReportInputs in;
  in.spec = &spec;
  in.out_dir = "/work/job/out";
  in.environment = environment();
  return in;
}

ReportInputs reduced(const Spec& spec) {
  ReportInputs in = inputs(spec);
  ReductionResult& r = in.result;
  r.status = ReductionStatus::Reduced;
  r.strategy = "default";
  r.stage = "node";
  r.job = r.original = initial_config(spec, spec.stages.back());
  r.minimal = r.job;
  r.minimal.samples = IndexSet::parse("37").value();
  r.minimal.components.clear();
  r.minimal.features.clear();
  r.minimal.params = {{"steps", 2}, {"batch_size", 1}};
  const TrialOutcome m = minimal_trial(r.minimal);
  r.target = m.diagnosis->signature;
  r.first_run.status = r.minimal_run.status = TrialStatus::Fail;
  r.first_run.dir = "/work/job/out/trials/0001";
  r.minimal_run.dir = m.dir;
  r.minimal_outcome = m.to_json();
  TrialOutcome first = minimal_trial(r.original);
  first.dir = r.first_run.dir;
  r.first_outcome = first.to_json();
  r.trace = {{3, "escalate", r.original}, {9, "samples", r.minimal}};
  r.trials = {{r.original, TrialStatus::Fail, true},
              {r.minimal, TrialStatus::Pass, false},
              {r.minimal, TrialStatus::Fail, true}};
  r.tried = {{r.original, "fail"}};
  r.confirm_runs = r.confirm_failures = 2;
  r.reduction_trials = 6;
  r.escalation_trials = 3;
  r.stats.trials = 9;
  r.stats.failed = 6;
  r.stats.passed = 3;
  r.elapsed_s = 41;
  return in;
}

ReportInputs not_started(const Spec& spec) {
  ReportInputs in = inputs(spec);
  ReductionResult& r = in.result;
  r.status = ReductionStatus::NotReproduced;
  r.job = initial_config(spec, spec.stages.back());
  r.not_started =
      "the job never started: the launcher on node 0 failed before any rank ran: "
      "AttributeError: 'NoneType' object has no attribute 'get' (at torchrun:<module>)";
  r.tried = {{initial_config(spec, spec.stages.front()), "infra"}};
  r.notes = {"stage 'single': " + r.not_started};
  r.stats.trials = r.stats.infra = 3;
  r.elapsed_s = 12;
  return in;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_golden(const std::string& name, const std::string& text) {
  const fs::path file = fs::path(DDPBISECT_SOURCE_DIR) / "tests/golden/report" / name;
  if (std::getenv("DDPBISECT_UPDATE_GOLDEN")) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return;
  }
  ASSERT_TRUE(fs::exists(file)) << file << " (DDPBISECT_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(text, read(file)) << name << " differs from " << file;
}

}  // namespace

TEST(ReportGolden, AReductionsReportsAreTheirGoldenFiles) {
  LoadResult loaded = load_spec_text(kSpec, "/work/job/spec.yaml");
  ASSERT_TRUE(loaded.spec) << (loaded.errors.empty() ? "" : loaded.errors.front().to_string());
  const ReportInputs in = reduced(*loaded.spec);
  expect_golden("reduced.md", report_markdown(in));
  expect_golden("reduced.json", render_report_json(in));
  expect_golden("reduced.html", report_html(in));
  expect_golden("reduced.summary.txt", summary_text(in));
}

TEST(ReportGolden, AJobThatNeverStartedSaysSoInEveryReport) {
  LoadResult loaded = load_spec_text(kSpec, "/work/job/spec.yaml");
  ASSERT_TRUE(loaded.spec);
  const ReportInputs in = not_started(*loaded.spec);
  const std::string md = report_markdown(in);
  EXPECT_NE(md.find("never started"), std::string::npos);
  expect_golden("not_started.md", md);
  expect_golden("not_started.json", render_report_json(in));
  expect_golden("not_started.html", report_html(in));
}
