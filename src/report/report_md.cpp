#include "report/report_md.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/redact.hpp"
#include "common/text.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

void environment(std::ostringstream& md, const json& env) {
  auto text = [](const json& v) {
    if (v.is_null()) return std::string("(unknown)");
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array() && v.empty()) return std::string("none");
    return v.dump();
  };
  md << "| | |\n|---|---|\n";
  for (const char* k : {"ddpbisect", "os", "kernel", "cpu", "cpus", "python", "torch", "cuda",
                        "cudnn", "nccl", "gpu_driver", "gpus", "gloo"})
    md << "| " << k << " | " << cell(text(env.value(k, json(nullptr)))) << " |\n";
  if (env.contains("probe_error")) md << "| probe | " << cell(text(env["probe_error"])) << " |\n";
  const json vars = env.value("variables", json::object());
  for (const auto& [name, value] : vars.items())
    md << "| `" << name << "` | `" << cell(value.get<std::string>()) << "` |\n";
  md << "\nVersions as `" << cell(text(env.value("python_probe", json(nullptr))))
     << "` reports them (the fields of `torch.utils.collect_env`).\n";
}
}  // namespace

std::string report_markdown(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  std::ostringstream md;
  const auto& st = r.stats;
  md << "# ddpbisect report: " << in.spec->name << "\n\n";
  if (r.status == ReductionStatus::NotReproduced) {
    md << "No stage of `" << in.spec->file << "` failed (" << r.tried.size()
       << " trials), so there was nothing to reduce.\n\n";
    md << "| configuration | status |\n|---|---|\n";
    for (const auto& [c, status] : r.tried)
      md << "| " << cell(describe_config(c)) << " (" << c.stage << ") | " << status << " |\n";
    return md.str();
  }
  md << "**Root cause:** " << cell(r.target.to_string()) << "  \n";
  md << "**Status:** " << to_string(r.status) << "; reproduced " << r.confirm_failures << "/"
     << r.confirm_runs << " times; " << st.trials << " trials in " << std::lround(r.elapsed_s) << " s\n\n";
  md << "| | original (stage `" << r.stage << "`) | minimal |\n|---|---|---|\n";
  for (const auto& row : comparison_rows(r))
    md << "| " << row.what << " | " << cell(row.original) << " | " << cell(row.minimal) << " |\n";
  md << "\n## Reproduce\n\n```\nddpbisect check " << in.out_dir
     << "/repro/repro.yaml --expect fail\n"
     << "bash " << in.out_dir << "/repro/run.sh      # no ddpbisect needed\n"
     << (in.spec->builtin ? "python3 " + in.out_dir +
                               "/repro/repro.py   # plain PyTorch DDP: for a PyTorch issue\n"
                         : std::string())
     << "```\n";
  // The root cause as the minimal trial diagnosed it.
  std::ifstream outcome(r.minimal_run.dir + "/outcome.json");
  json o = json::parse(outcome, nullptr, false);
  if (!o.is_discarded() && o.contains("diagnosis") && o["diagnosis"].is_object()) {
    const json& d = o["diagnosis"];
    md << "\n## Root cause\n\n" << cell(d.value("explanation", "")) << "\n\n```\n";
    for (const auto& line : d["root_cause"].value("excerpt", json::array()))
      md << redact_value("", line.get<std::string>()) << "\n";
    md << "```\n\n| rank | category | what it saw |\n|---|---|---|\n";
    for (const auto& rk : d.value("ranks", json::array())) {
      std::string what = rk.value("summary", "");
      if (rk["echo_of"].is_number())
        what += " (echo of rank " + std::to_string(rk["echo_of"].get<int>()) + ")";
      md << "| " << rk.value("rank", 0) << " | " << rk.value("category", "") << " | "
         << cell(redact_value("", what)) << " |\n";
    }
  }
  if (r.debug_run) {
    md << "\n## Debug rerun\n\nThe minimal configuration once more with";
    for (const auto& [k, v] : r.debug_env) md << " `" << k << "=" << v << "`";
    md << ": " << to_string(r.debug_run->status) << ", "
       << (r.debug_run->signature ? cell(r.debug_run->signature->to_string()) : "no failure")
       << " (`" << r.debug_run->dir << "`).\n\n```\n"
       << redact_value("", r.debug_run->text.substr(0, 4000)) << "\n```\n";
  }
  for (const auto& note : r.debug_notes) md << "\nDebug rerun: " << cell(note) << ".\n";
  md << "\n## Environment\n\n";
  environment(md, in.environment);
  md << "\n## Reduction\n\n| trial | pass | ranks | samples | components | features "
        "|\n|---|---|---|---|---|---|\n";
  for (const auto& t : r.trace)
    md << "| " << t.trial << " | " << t.pass << " | " << t.config.world_size() << " | "
       << t.config.samples.size() << " | " << t.config.components.size() << " | "
       << t.config.features.size() << " |\n";
  md << "\nTrials: " << st.trials << " run (" << st.failed << " failed, " << st.passed
     << " passed, " << st.infra << " infra), " << st.cached
     << " answered from the cache. Details: `report.json`, `journal.jsonl`, `trials/`.\n";
  return md.str();
}

}  // namespace ddpbisect
