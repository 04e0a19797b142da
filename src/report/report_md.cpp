#include "report/report_md.hpp"

#include <cmath>
#include <sstream>

#include "common/json_util.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"
#include "launch/isolation.hpp"
#include "report/headline.hpp"
#include "report/markdown.hpp"
#include "report/repro.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {

// A code span inside a table cell: GFM ends a cell at any unescaped '|', even in code.
std::string code_cell(const std::string& s) {
  std::string c = md_code(s);
  replace_all(c, "|", "\\|");
  return c;
}

void not_reproduced(std::ostringstream& md, const ReportInputs& in) {
  const ReductionResult& r = in.result;
  if (!r.not_started.empty())
    md << "The job of " << md_code(in.spec->file)
       << " never started (the note says why), so there was nothing to reduce.\n\n";
  else
    md << "No stage of " << md_code(in.spec->file) << " failed the way your job does ("
       << plural(static_cast<long long>(r.tried.size()), "trial")
       << "), so there was nothing to reduce.\n\n";
  for (const auto& note : r.notes) md << "Note: " << md_text(note) << ".\n\n";
  md << "| configuration | status |\n|---|---|\n";
  for (const auto& [c, status] : r.tried)
    md << "| " << md_cell(describe_config(c) + " (stage " + c.stage + ")") << " | "
       << md_cell(status) << " |\n";
}

void summary(std::ostringstream& md, const ReportInputs& in) {
  const ReductionResult& r = in.result;
  const auto& st = r.stats;
  md << "**Status:** "
     << (r.status == ReductionStatus::BudgetExhausted
             ? "the budget ran out: this is the smallest failing configuration found, not a "
               "minimal one"
             : "reduced to a minimal failing configuration")
     << ". It failed " << r.confirm_failures << " of " << plural(r.confirm_runs, "run")
     << "; the job first failed on stage " << md_code(r.stage) << ". "
     << plural(st.trials + st.replayed, "trial") << " (" << st.replayed << " replayed from "
     << "the journal, " << st.cached << " answered from the cache) in "
     << format_number(r.elapsed_s, 0) << " s.\n\n";
  md << "| | your job (stage " << md_code(in.spec->stages.back().name) << ") | minimal |\n"
     << "|---|---|---|\n";
  for (const auto& row : comparison_rows(r))
    md << "| " << md_cell(row.what) << " | " << md_cell(row.original) << " | "
       << md_cell(row.minimal) << " |\n";
}

void reproduce(std::ostringstream& md, const ReportInputs& in) {
  md << "\n## Reproduce\n\nFrom the folder of this report (`repro/` is beside it):\n\n";
  std::string cmds = "cd repro\nbash run.sh                              # no ddpbisect needed\n";
  if (in.spec->builtin)
    cmds += "python3 repro.py                         # plain PyTorch DDP, no ddpbisect\n";
  cmds += "ddpbisect check repro.yaml --expect fail  # the regression check for CI\n";
  md << md_code_block(cmds, "sh");
  const bool py = in.spec->builtin.has_value();
  md << "\n<details>\n<summary>" << (py ? "repro.py" : "run.sh")
     << ": the minimal repro</summary>\n\n"
     << md_code_block(py ? render_repro_py(in) : render_run_sh(in), py ? "python" : "sh")
     << "\n</details>\n";
}

void root_cause(std::ostringstream& md, const json& d) {
  if (!d.is_object()) return;
  md << "\n## Root cause\n\n" << md_text(d.value("explanation", "")) << "\n\n";
  const json root = d.value("root_cause", json(nullptr));
  if (std::string tb = root_cause_traceback(root, /*fold=*/true); !tb.empty())
    md << md_code_block(tb);
  const json ranks = d.value("ranks", json::array());
  if (ranks.empty()) return;
  md << "\n| rank | category | what it saw |\n|---|---|---|\n";
  for (const auto& rk : ranks) {
    std::string what = rk.value("summary", "");
    if (rk.contains("echo_of") && rk["echo_of"].is_number())
      what += " (echo of rank " + std::to_string(rk["echo_of"].get<int>()) + ")";
    md << "| " << rk.value("rank", 0) << " | " << md_cell(rk.value("category", "")) << " | "
       << md_cell(redact_value("", what)) << " |\n";
  }
}

void debug_rerun(std::ostringstream& md, const ReductionResult& r) {
  for (const auto& note : r.notes) md << "\nNote: " << md_text(note) << ".\n";
  for (const auto& note : r.debug_notes) md << "\nDebug rerun: " << md_text(note) << ".\n";
  if (!r.debug_run) return;
  md << "\n## Debug rerun\n\nThe minimal configuration once more with";
  for (const auto& [k, v] : r.debug_env) md << " " << md_code(k + "=" + v);
  md << ": " << to_string(r.debug_run->status) << ", "
     << (r.debug_run->signature ? md_text(r.debug_run->signature->to_string()) : "no failure")
     << ".\n\n"
     << md_code_block(fold_cpp_frames(redact_value("", r.debug_run->text.substr(0, 4000))));
}

// The environment as torch.utils.collect_env prints it, then ours and the variables.
void environment(std::ostringstream& md, const json& env) {
  auto text = [](const json& v) {
    if (v.is_null()) return std::string("(unknown)");
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array() && v.empty()) return std::string("none");
    return json_text(v);
  };
  md << "\n## Environment\n\n";
  const json ce = env.value("collect_env", json(nullptr));
  if (ce.is_string()) {
    md << "`python -m torch.utils.collect_env`, run by "
       << md_code(text(env.value("python_probe", json(nullptr)))) << ":\n\n"
       << md_code_block(ce.get<std::string>());
  } else {
    md << md_text(text(env.value("collect_env_error", json("collect_env did not run")))) << "\n\n";
    md << "| | |\n|---|---|\n";
    for (const char* k : {"python", "torch", "cuda", "cudnn", "nccl", "gpu_driver", "gpus"})
      md << "| " << k << " | " << md_cell(text(env.value(k, json(nullptr)))) << " |\n";
  }
  md << "\nddpbisect " << md_text(text(env.value("ddpbisect", json(nullptr)))) << " on "
     << md_text(text(env.value("os", json(nullptr)))) << ", "
     << md_text(text(env.value("kernel", json(nullptr)))) << ".\n";
  const json vars = env.value("variables", json::object());
  if (!vars.empty()) {
    md << "\n| variable | value |\n|---|---|\n";
    for (const auto& [name, value] : vars.items())
      md << "| " << code_cell(name) << " | " << code_cell(text(value)) << " |\n";
  }
}

void reduction(std::ostringstream& md, const ReductionResult& r) {
  const auto& st = r.stats;
  md << "\n## Reduction\n\n| trial | pass | ranks | samples | components | features |\n"
     << "|---|---|---|---|---|---|\n";
  for (const auto& t : r.trace)
    md << "| " << t.trial << " | " << md_cell(t.pass) << " | " << t.config.world_size() << " | "
       << t.config.samples.size() << " | " << t.config.components.size() << " | "
       << t.config.features.size() << " |\n";
  md << "\nTrials: " << st.trials << " run (" << st.failed << " failed, " << st.passed
     << " passed, " << st.infra << " infra), " << st.replayed << " replayed from the journal, "
     << st.cached << " answered from the cache. Details: `report.json`, `journal.jsonl`, "
     << "`trials/`.\n";
}

// Issue #16: what the minimal trial wrote in its isolated view (launch/isolation.hpp).
void written_files(std::ostringstream& md, const ReportInputs& in) {
  const auto files = trial_written_files(*in.spec, in.result.minimal_run.dir);
  if (files.empty()) return;
  md << "\nFiles the minimal trial wrote (in its own view; the real folders are unchanged):\n";
  for (const auto& f : files) md << "- " << md_code(f) << "\n";
}

}  // namespace

std::string report_markdown(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  std::ostringstream md;
  if (r.status == ReductionStatus::NotReproduced) {
    md << "# ddpbisect: " << md_text(in.spec->name)
       << (r.not_started.empty() ? " did not fail" : " never started") << "\n\n";
    not_reproduced(md, in);
    environment(md, in.environment);
    return md.str();
  }
  const json d = minimal_diagnosis(r);
  md << "# " << md_text(reduction_headline(r)) << "\n\n";
  md << "**Root cause:** " << md_text(r.target.to_string()) << "  \n";
  summary(md, in);
  reproduce(md, in);
  root_cause(md, d);
  debug_rerun(md, r);
  written_files(md, in);
  environment(md, in.environment);
  reduction(md, r);
  return md.str();
}

}  // namespace ddpbisect
