// report.md: the one-screen summary a user pastes into a PyTorch issue, then the root-cause
// traceback, what every rank did, the repro command, the environment (secrets redacted) and how
// the reduction went.
#pragma once

#include <string>

#include "report/report_json.hpp"

namespace ddpbisect {

std::string report_markdown(const ReportInputs& r, const Oracle& oracle);

// A variable whose name contains TOKEN, SECRET, KEY, PASSWORD or CREDENTIAL (any case), or a
// value that looks like a credential (key=..., --token ..., user:pass@host), loses its value.
std::string redact_value(const std::string& name, const std::string& value);

}  // namespace ddpbisect
