#include "report/report.hpp"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "common/output.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"
#include "report/headline.hpp"
#include "report/report_html.hpp"
#include "report/report_json.hpp"
#include "report/report_md.hpp"
#include "report/repro.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

const std::vector<ReportFile>& report_files() {
  using W = ReportFile::When;
  static const std::vector<ReportFile> files = {
      {"repro/repro.yaml", W::Reproduced, false, render_repro_yaml},
      {"repro/config.json", W::Reproduced, false, render_rank_config},
      {"repro/run.sh", W::Reproduced, true, render_run_sh},
      {"repro/repro.py", W::ReproducedBuiltin, true, render_repro_py},
      {"report.md", W::Always, false, report_markdown},
      {"report.html", W::Always, false, report_html},
      {"report.json", W::Always, false, render_report_json},
  };
  return files;
}

void write_reports(const ReportInputs& in) {
  const bool reproduced = in.result.status != ReductionStatus::NotReproduced;
  for (const ReportFile& f : report_files()) {
    if (f.when != ReportFile::When::Always && !reproduced) continue;
    if (f.when == ReportFile::When::ReproducedBuiltin && !in.spec->builtin) continue;
    const fs::path path = fs::path(in.out_dir) / f.path;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) throw OutputError(path.parent_path().string(), ec.value());
    // Written whole, then renamed: a reader never sees half a file.
    write_file_atomically(path.string(), f.render(in), f.executable);
  }
  write_repro_support(in);  // repro/python/: run.sh carries the helper module and the agent
}

json config_json(const TrialConfig& c, const std::string& stage) {
  json params = c.params;
  return {{"stage", stage},
          {"nodes", c.nodes},
          {"procs_per_node", c.procs_per_node},
          {"world_size", c.world_size()},
          {"samples", c.samples.size()},
          {"sample_indices", c.samples.to_string()},
          {"components", c.components},
          {"features", c.features},
          {"params", params},
          {"steps", c.params.count("steps") ? json(c.params.at("steps")) : json(nullptr)}};
}

std::string ranks_text(const TrialConfig& c) {
  return c.nodes > 1 ? plural(c.nodes, "node") + " x " + plural(c.procs_per_node, "rank")
                     : plural(c.world_size(), "rank");
}

std::vector<ComparisonRow> comparison_rows(const ReductionResult& r) {
  const auto& j = r.job;
  const auto& m = r.minimal;
  auto list = [](const std::vector<std::string>& v) { return v.empty() ? "none" : join(v, ", "); };
  // A job whose samples are no dimension (a command without samples:) ran all of them each time.
  ComparisonRow samples = {"samples", "all", "all (not reduced)"};
  if (!j.samples.empty())
    samples = {"samples", std::to_string(j.samples.size()),
               std::to_string(m.samples.size()) + (!m.samples.empty() && m.samples.size() <= 16
                                                       ? " (" + m.samples.to_string() + ")"
                                                       : "")};
  std::vector<ComparisonRow> rows = {{"ranks", ranks_text(j), ranks_text(m)},
                                     samples,
                                     {"components", list(j.components), list(m.components)},
                                     {"features", list(j.features), list(m.features)}};
  for (const auto& [k, v] : j.params)
    rows.push_back({k, std::to_string(v), m.params.count(k) ? std::to_string(m.params.at(k)) : ""});
  return rows;
}

json minimal_diagnosis(const ReductionResult& r) {
  const json& o = r.minimal_outcome;
  return o.is_object() && o.contains("diagnosis") ? o["diagnosis"] : json(nullptr);
}

std::string reduction_headline(const ReductionResult& r) {
  const json d = minimal_diagnosis(r);
  if (d.is_object())
    if (std::string h = root_cause_headline(d.value("root_cause", json(nullptr))); !h.empty())
      return h;
  const Signature& s = r.target;
  return redact_value("", failure_headline(s.ranks, s.exception, s.message, s.frame));
}

std::string summary_text(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  std::ostringstream os;
  const auto& st = r.stats;
  const fs::path out(in.out_dir);
  os << (r.status == ReductionStatus::BudgetExhausted
             ? "ddpbisect: the budget ran out; the smallest failing configuration found so far:\n"
             : "ddpbisect: reduced to a minimal failing configuration\n");
  os << "  failure:    " << visible_text(reduction_headline(r)) << "\n";
  os << "  signature:  " << visible_text(r.target.to_string()) << "\n";
  os << "  your job:   " << describe_config(r.job) << " (stage " << r.job.stage << ")\n";
  os << "  minimal:    " << describe_config(r.minimal) << " (the job first failed on stage "
     << r.stage << ")\n";
  if (!r.minimal.samples.empty() && r.minimal.samples.size() <= 16)
    os << "  samples:    " << r.minimal.samples.to_string() << "\n";
  os << "  components: "
     << (r.minimal.components.empty() ? "none" : join(r.minimal.components, ", "))
     << "; features: " << (r.minimal.features.empty() ? "none" : join(r.minimal.features, ", "))
     << "\n";
  os << "  reproduced " << r.confirm_failures << " of " << plural(r.confirm_runs, "run") << "; "
     << plural(st.trials + st.replayed, "trial") << " (" << st.replayed << " replayed, "
     << st.cached << " answered from the cache) in " << format_number(r.elapsed_s, 0) << " s\n";
  os << "  report:     " << (out / "report.md").string()
     << " (ready to paste into an issue), report.html, report.json\n";
  os << "  repro:      " << (out / "repro" / "repro.yaml").string()
     << (in.spec->builtin ? ", run.sh and repro.py (standalone PyTorch)\n" : " and run.sh\n");
  os << "next: ddpbisect check " << shell_quote((out / "repro" / "repro.yaml").string())
     << " --expect fail   # in CI, until the bug is fixed\n";
  return os.str();
}

}  // namespace ddpbisect
