// Why ddpbisect stopped a trial (and its ranks), from common/stop_reasons.def: spelled in
// outcome.json's killed_by and stopped_by.
#pragma once

#include <optional>
#include <string_view>

#include "common/stop_reasons.def"
#include "common/vocabulary.hpp"

namespace ddpbisect {

// to_string: "" for None, else "early_stop", "hang", ...; parse_stop_reason("") is None, and
// nullopt for a name the table does not hold.
DDPBISECT_DECLARE_VOCABULARY(StopReason, DDPBISECT_STOP_REASONS, parse_stop_reason)

}  // namespace ddpbisect
