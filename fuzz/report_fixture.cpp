#include "report_fixture.hpp"

#include <cstdlib>
#include <cstring>

#include "fuzz_util.hpp"
#include "spec/loader.hpp"

namespace ddpbisect::fuzz {

const Spec& fixture_spec() {
  static const Spec spec = [] {
    const char* text = R"(version: 1
name: fixture
workload:
  builtin:
    model: [linear, dropout, layernorm, head]
    dataset: {kind: synthetic, samples: 64, seed: 3}
    features: [grad_clip, checkpoint, eval]
    params: {steps: 12, batch_size: 8}
    faults:
      - {kind: raise, requires: {params: {batch_size: {min: 6}}}}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
limits: {trial_timeout: 60s}
)";
    LoadResult r = load_spec_text(text, (scratch() / "fixture.yaml").string());
    if (!r.spec) {
      for (const auto& e : r.errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
      std::abort();
    }
    return *r.spec;
  }();
  return spec;
}

ReportInputs fixture_report(const std::string& out_dir, const std::string& trial_dir) {
  const Spec& spec = fixture_spec();
  ReportInputs in;
  in.spec = &spec;
  in.out_dir = out_dir;
  ReductionResult& r = in.result;
  r.status = ReductionStatus::Reduced;
  r.strategy = "default";
  r.stage = spec.stages.front().name;
  r.job = initial_config(spec, spec.stages.back());
  r.original = initial_config(spec, spec.stages.front());
  r.minimal = cheap_variant(r.original);
  r.first_run.status = r.minimal_run.status = TrialStatus::Fail;
  r.first_run.dir = r.minimal_run.dir = trial_dir;
  r.target.category = "python_exception";
  r.target.exception = "RuntimeError";
  r.target.frame = "trainer.cpp:step";
  r.target.message = "planted failure";
  r.target.ranks = {0};
  r.first_run.signature = r.minimal_run.signature = r.target;
  r.trace.push_back({3, "samples", r.minimal});
  r.confirm_runs = r.confirm_failures = 2;
  r.stats.trials = 9;
  r.elapsed_s = 12.5;
  in.environment = nlohmann::json::object();
  return in;
}

void render_all_reports(const ReportInputs& in) {
  for (const ReportFile& f : report_files()) {
    const std::string text = f.render(in);
    const size_t n = std::strlen(f.path);
    const bool markup = (n > 5 && std::strcmp(f.path + n - 5, ".html") == 0);
    if (markup)
      check(text.find("<fuzz") == std::string::npos, "input text never becomes HTML markup",
            text.substr(text.find("<fuzz") > 300 ? text.find("<fuzz") - 300 : 0, 600));
  }
}

}  // namespace ddpbisect::fuzz
