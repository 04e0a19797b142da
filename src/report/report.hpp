// The reports of a reduction. Every renderer takes the same ReportInputs (the reduction's result
// as a value, the spec, the environment probe's JSON) and returns one file's text; write_reports
// walks the table of {file, renderer} (report.cpp), so a new format is one renderer and one row.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reduce/result.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct ReportInputs {
  const Spec* spec = nullptr;
  std::string out_dir;
  ReductionResult result;
  nlohmann::json environment;  // probe/environment.hpp: collect_environment()
};

using Renderer = std::string (*)(const ReportInputs&);

struct ReportFile {
  enum class When { Always, Reproduced, ReproducedBuiltin };
  const char* path;  // under the output folder
  When when;
  bool executable;
  Renderer render;
};

// The files of a report, in the order they are written (report.json last: once it exists, the
// rest does too).
const std::vector<ReportFile>& report_files();

// Writes every file of report_files() that applies, each whole and then renamed into place.
void write_reports(const ReportInputs& in);

// The failure in one line, as every summary leads with it: "rank 1: RuntimeError: message
// (file:line)", from the minimal trial's diagnosis, else from the signature.
std::string reduction_headline(const ReductionResult& r);
// The minimal trial's diagnosis (from its outcome, in the result), or null.
nlohmann::json minimal_diagnosis(const ReductionResult& r);

// The terminal summary of a reduction that found its failure.
std::string summary_text(const ReportInputs& in);

nlohmann::json config_json(const TrialConfig& c, const std::string& stage);

// "1 rank", "2 ranks", "2 nodes x 2 ranks".
std::string ranks_text(const TrialConfig& c);

// The job as specified (the last stage, nothing reduced) beside the minimal configuration, row
// by row, for report.md and report.html.
struct ComparisonRow {
  std::string what, original, minimal;
};
std::vector<ComparisonRow> comparison_rows(const ReductionResult& r);

}  // namespace ddpbisect
