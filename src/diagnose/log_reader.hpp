// Reads log files into per-rank events, streaming: large files are scanned in chunks, and text no
// parser needs is skipped with one regular-expression search per chunk rather than per line.
#pragma once

#include <map>
#include <vector>

#include "diagnose/diagnosis.hpp"

namespace ddpbisect {

void read_logs(const DiagnosisInput& input, std::map<int, std::vector<Event>>& by_rank);

}  // namespace ddpbisect
