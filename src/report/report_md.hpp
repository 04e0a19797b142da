// report.md: the one-screen summary a user pastes into a PyTorch issue, then the root-cause
// traceback, what every rank did, the repro command, the environment (secrets redacted) and how
// the reduction went.
#pragma once

#include <string>

#include "report/report.hpp"

namespace ddpbisect {

std::string report_markdown(const ReportInputs& in);

}  // namespace ddpbisect
