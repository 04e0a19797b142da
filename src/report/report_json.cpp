#include "report/report_json.hpp"
#include "common/json_util.hpp"

#include <filesystem>

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

json report_json(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  const auto& st = r.stats;
  json j;
  j["version"] = 1;
  j["status"] = to_string(r.status);
  j["spec"] = in.spec->file;
  j["strategy"] = r.strategy;
  j["job"] = config_json(r.job, in.spec->stages.back().name);
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
  j["elapsed_s"] = r.elapsed_s;
  j["environment"] = in.environment;
  if (!r.notes.empty()) j["notes"] = r.notes;
  if (r.status == ReductionStatus::NotReproduced) {
    j["not_started"] = r.not_started.empty() ? json(nullptr) : json(r.not_started);
    j["signature"] = nullptr;
    j["original"] = nullptr;
    j["minimal"] = nullptr;
    j["reproduction"] = nullptr;
    return j;
  }
  j["headline"] = reduction_headline(r);
  j["signature"] = r.target.to_json();
  j["original"] = config_json(r.original, r.stage);
  j["minimal"] = config_json(r.minimal, r.stage);
  double rate = r.confirm_runs ? static_cast<double>(r.confirm_failures) / r.confirm_runs : 0;
  j["reproduction"] = {{"runs", r.confirm_runs},
                       {"failures", r.confirm_failures},
                       {"rate", rate},
                       {"target_rate_estimate", r.target_rate},
                       {"repeats_per_candidate", r.repeats}};
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
        {"status", to_string(r.debug_run->status)},
        {"signature", r.debug_run->signature ? r.debug_run->signature->to_json() : json(nullptr)},
        {"same_failure", r.debug_run->signature.has_value() &&
                             same_failure(r.target, *r.debug_run->signature, "loose")},
        {"text", r.debug_run->text.substr(0, 4000)}};
  if (!r.debug_notes.empty()) j["debug_notes"] = r.debug_notes;
  j["first_failure"] = {
      {"dir", r.first_run.dir},
      {"signature", r.first_run.signature ? r.first_run.signature->to_json() : json(nullptr)}};
  j["minimal_trial"] = {{"dir", r.minimal_run.dir}};
  fs::path repro = fs::path(in.out_dir) / "repro";
  j["repro"] = {{"spec", (repro / "repro.yaml").string()},
                {"script", (repro / "run.sh").string()},
                {"python", in.spec->builtin ? json((repro / "repro.py").string()) : json(nullptr)}};
  return j;
}

std::string render_report_json(const ReportInputs& in) {
  // Log text is not always UTF-8: a stray byte becomes U+FFFD rather than failing the report.
  return json_text(report_json(in), 2) + "\n";
}

}  // namespace ddpbisect
