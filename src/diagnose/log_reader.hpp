// Reads the diagnosis inputs into events and facts, streaming: large files are scanned in chunks,
// and text no parser needs is skipped with one regular-expression search per chunk rather than
// per line. Text logs go through line hygiene (line_hygiene.hpp) and one stream parser per
// process found in them; torchrun's error.json files, Flight Recorder dumps and the agent's
// collective trace files are read by their own readers.
#pragma once

#include <vector>

#include "diagnose/diagnosis.hpp"
#include "diagnose/facts.hpp"

namespace ddpbisect {

struct Evidence {
  std::vector<Event> events;
  Facts facts;
};

Evidence read_inputs(const DiagnosisInput& input);

// One text log, as if it were the only input (for tests).
Evidence read_log_text(const std::string& text, std::optional<int> rank = std::nullopt);

}  // namespace ddpbisect
