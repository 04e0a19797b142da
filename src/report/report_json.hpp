// report.json (stable, documented fields) and the terminal summary of a reduction.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reduce/oracle.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {

struct ReportInputs {
  const Spec* spec = nullptr;
  std::string out_dir;
  std::string status;  // reduced | budget_exhausted | not_reproduced
  std::string strategy;
  std::string stage;
  TrialConfig job;       // the full job: the last stage, nothing reduced
  TrialConfig original;  // the first failing configuration
  TrialConfig minimal;
  RunRecord first_run, minimal_run;
  Signature target;
  std::vector<TraceEntry> trace;
  std::vector<std::pair<TrialConfig, std::string>> tried;  // escalation
  int confirm_runs = 0, confirm_failures = 0;
  int64_t reduction_trials = 0;
  int64_t escalation_trials = 0;  // escalation and the reproduction-rate reruns
  nlohmann::json environment;     // collect_environment()
  // The minimal configuration rerun with debug variables (command workloads; see debug_variables).
  std::map<std::string, std::string> debug_env;
  std::optional<RunRecord> debug_run;
};

nlohmann::json config_json(const TrialConfig& c, const std::string& stage);

// The original configuration beside the minimal one, row by row, for report.md and report.html.
struct ComparisonRow {
  std::string what, original, minimal;
};
std::vector<ComparisonRow> comparison_rows(const ReportInputs& r);
nlohmann::json report_json(const ReportInputs& r, const Oracle& oracle);
// Writes report.json, report.md, report.html and repro/ (repro.yaml, config.json, run.sh and,
// for built-in workloads, repro.py).
void write_reports(const ReportInputs& r, const Oracle& oracle);
std::string summary_text(const ReportInputs& r, const Oracle& oracle);

}  // namespace ddpbisect
