// report.html: one self-contained page (no scripts, no network) with the summary, a rank timeline
// of the first failing trial and of the minimal one (each rank's life, its steps, where it failed
// or hung, which errors echoed which) and the reduction trace (configuration size per trial).
#pragma once

#include <string>

#include "report/report.hpp"

namespace ddpbisect {

std::string report_html(const ReportInputs& in);

}  // namespace ddpbisect
