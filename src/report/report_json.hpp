// report.json: the stable, documented fields of a reduction for machines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/report.hpp"

namespace ddpbisect {

nlohmann::json report_json(const ReportInputs& in);
std::string render_report_json(const ReportInputs& in);  // report_json, indented

}  // namespace ddpbisect
