#include "report/report_json.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "reduce/progress.hpp"
#include "report/report_html.hpp"
#include "report/report_md.hpp"
#include "report/repro.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

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

std::vector<ComparisonRow> comparison_rows(const ReportInputs& r) {
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

json report_json(const ReportInputs& r, const Oracle& oracle) {
  const auto& st = oracle.stats();
  json j;
  j["version"] = 1;
  j["status"] = r.status;
  j["spec"] = r.spec->file;
  j["strategy"] = r.strategy;
  j["job"] = config_json(r.job, r.spec->stages.back().name);
  json tried = json::array();
  for (const auto& [c, status] : r.tried)
    tried.push_back({{"config", config_json(c, c.stage)}, {"status", status}});
  j["escalation"] = tried;
  j["trials"] = {{"total", st.trials},
                 {"failed", st.failed},
                 {"passed", st.passed},
                 {"infra", st.infra},
                 {"cached", st.cached},
                 {"replayed", st.replayed},
                 {"reduction", r.reduction_trials},
                 {"escalation", r.escalation_trials}};
  j["elapsed_s"] = oracle.elapsed_s();
  j["environment"] = r.environment;
  if (r.status == "not_reproduced") {
    j["signature"] = nullptr;
    j["original"] = nullptr;
    j["minimal"] = nullptr;
    j["reproduction"] = nullptr;
    return j;
  }
  j["signature"] = r.target.to_json();
  j["original"] = config_json(r.original, r.stage);
  j["minimal"] = config_json(r.minimal, r.stage);
  double rate = r.confirm_runs ? static_cast<double>(r.confirm_failures) / r.confirm_runs : 0;
  j["reproduction"] = {{"runs", r.confirm_runs},
                       {"failures", r.confirm_failures},
                       {"rate", rate},
                       {"target_rate_estimate", oracle.rate()},
                       {"repeats_per_candidate", oracle.repeats()}};
  json trace = json::array();
  for (const auto& t : r.trace)
    trace.push_back({{"trial", t.trial},
                     {"pass", t.pass},
                     {"world_size", t.config.world_size()},
                     {"samples", t.config.samples.size()},
                     {"components", t.config.components.size()},
                     {"features", t.config.features.size()},
                     {"params", t.config.params}});
  j["trace"] = trace;
  if (r.debug_run)
    j["debug_rerun"] = {
        {"env", r.debug_env},
        {"dir", r.debug_run->dir},
        {"status", r.debug_run->status},
        {"signature", r.debug_run->signature ? r.debug_run->signature->to_json() : json(nullptr)},
        {"same_failure", r.debug_run->signature.has_value() &&
                             same_failure(r.target, *r.debug_run->signature, "loose")},
        {"text", r.debug_run->text.substr(0, 4000)}};
  j["first_failure"] = {
      {"dir", r.first_run.dir},
      {"signature", r.first_run.signature ? r.first_run.signature->to_json() : json(nullptr)}};
  j["minimal_trial"] = {{"dir", r.minimal_run.dir}};
  fs::path repro = fs::path(r.out_dir) / "repro";
  j["repro"] = {{"spec", (repro / "repro.yaml").string()},
                {"script", (repro / "run.sh").string()},
                {"python", r.spec->builtin ? json((repro / "repro.py").string()) : json(nullptr)}};
  return j;
}

void write_reports(const ReportInputs& r, const Oracle& oracle) {
  fs::path out(r.out_dir);
  if (r.status != "not_reproduced") {
    fs::create_directories(out / "repro");
    std::ofstream(out / "repro" / "repro.yaml")
        << minimal_spec_yaml(*r.spec, r.minimal, r.stage, r.target);
    std::ofstream(out / "repro" / "config.json")
        << rank_config_json(*r.spec, r.minimal).dump(2) << "\n";
    auto executable = [](const fs::path& p) {
      fs::permissions(p, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add);
    };
    std::ofstream(out / "repro" / "run.sh") << repro_run_sh(*r.spec, r.minimal, r.target);
    executable(out / "repro" / "run.sh");
    if (r.spec->builtin) {
      std::ofstream(out / "repro" / "repro.py") << repro_python(*r.spec, r.minimal, r.target);
      executable(out / "repro" / "repro.py");
    }
  }
  std::ofstream(out / "report.md") << report_markdown(r, oracle);
  std::ofstream(out / "report.html") << report_html(r, oracle);
  // Written whole, then renamed: a reader never sees half a report.
  std::string tmp = (out / "report.json.tmp").string();
  std::ofstream(tmp) << report_json(r, oracle).dump(2) << "\n";
  fs::rename(tmp, out / "report.json");
}

std::string summary_text(const ReportInputs& r, const Oracle& oracle) {
  std::ostringstream os;
  const auto& st = oracle.stats();
  os << (r.status == "budget_exhausted"
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
     << std::lround(oracle.elapsed_s()) << " s\n";
  os << "  report:    " << (fs::path(r.out_dir) / "report.json").string() << "\n";
  os << "  report:    " << (fs::path(r.out_dir) / "report.md").string() << " and report.html\n";
  os << "  repro:     " << (fs::path(r.out_dir) / "repro" / "repro.yaml").string()
     << (r.spec->builtin ? ", run.sh and repro.py (standalone PyTorch)\n" : " and run.sh\n");
  os << "next: ddpbisect check " << (fs::path(r.out_dir) / "repro" / "repro.yaml").string()
     << " --expect fail   # in CI, until the bug is fixed\n";
  return os.str();
}

}  // namespace ddpbisect
