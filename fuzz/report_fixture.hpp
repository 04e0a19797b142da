// A spec and a reduction result to render reports from, for the targets that fuzz what the
// report writers read back from disk (outcome.json, journal.jsonl).
#pragma once

#include <string>

#include "report/report.hpp"
#include "spec/spec.hpp"

namespace ddpbisect::fuzz {

// A built-in workload spec with two stages (loaded once).
const Spec& fixture_spec();

// A reduced result over fixture_spec() whose first and minimal trials live in `trial_dir`; the
// report's output folder (journal.jsonl) is `out_dir`.
ReportInputs fixture_report(const std::string& out_dir, const std::string& trial_dir);

// Every report file's text (report_files()), checking that the HTML and XML ones carry no markup
// from the input: the marker tag <fuzz, which the fuzzer may write into any input text, never
// appears unescaped.
void render_all_reports(const ReportInputs& in);

}  // namespace ddpbisect::fuzz
