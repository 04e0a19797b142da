#include "report/report.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/output.hpp"
#include "common/text.hpp"
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

std::vector<ComparisonRow> comparison_rows(const ReductionResult& r) {
  auto ranks = [](const TrialConfig& c) {
    return std::to_string(c.nodes) + " node(s) x " + std::to_string(c.procs_per_node);
  };
  const auto& m = r.minimal;
  std::vector<ComparisonRow> rows = {
      {"ranks", ranks(r.original), ranks(m)},
      {"samples", std::to_string(r.original.samples.size()),
       std::to_string(m.samples.size()) +
           (m.samples.size() <= 16 ? " (" + m.samples.to_string() + ")" : "")},
      {"components", join(r.original.components, ", "), join(m.components, ", ")},
      {"features", join(r.original.features, ", "), join(m.features, ", ")}};
  for (const auto& [k, v] : r.original.params)
    rows.push_back({k, std::to_string(v), m.params.count(k) ? std::to_string(m.params.at(k)) : ""});
  return rows;
}

std::string summary_text(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  std::ostringstream os;
  const auto& st = r.stats;
  os << (r.status == ReductionStatus::BudgetExhausted
             ? "ddpbisect: budget spent; the smallest failing configuration so far:\n"
             : "ddpbisect: minimal failing configuration found\n");
  os << "  failure:   " << r.target.to_string() << "\n";
  os << "  original:  " << describe_config(r.original) << " (stage " << r.stage << ")\n";
  os << "  minimal:   " << describe_config(r.minimal) << "\n";
  if (r.minimal.samples.size() <= 16)
    os << "  samples:   " << r.minimal.samples.to_string() << "\n";
  os << "  components: [";
  for (size_t i = 0; i < r.minimal.components.size(); ++i)
    os << (i ? ", " : "") << r.minimal.components[i];
  os << "]  features: [";
  for (size_t i = 0; i < r.minimal.features.size(); ++i)
    os << (i ? ", " : "") << r.minimal.features[i];
  os << "]\n";
  os << "  reproduced " << r.confirm_failures << "/" << r.confirm_runs << " times; " << st.trials
     << " trials (" << st.cached << " answers from the cache) in "
     << std::lround(r.elapsed_s) << " s\n";
  os << "  report:    " << (fs::path(in.out_dir) / "report.json").string() << "\n";
  os << "  report:    " << (fs::path(in.out_dir) / "report.md").string() << " and report.html\n";
  os << "  repro:     " << (fs::path(in.out_dir) / "repro" / "repro.yaml").string()
     << (in.spec->builtin ? ", run.sh and repro.py (standalone PyTorch)\n" : " and run.sh\n");
  os << "next: ddpbisect check " << (fs::path(in.out_dir) / "repro" / "repro.yaml").string()
     << " --expect fail   # in CI, until the bug is fixed\n";
  return os.str();
}

}  // namespace ddpbisect
