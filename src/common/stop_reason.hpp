// Why ddpbisect stopped a trial (and its ranks), from common/stop_reasons.def: spelled in
// outcome.json's killed_by and stopped_by.
#pragma once

#include <optional>
#include <string_view>

#include "common/vocabulary.hpp"

namespace ddpbisect {

enum class StopReason {
#define DDPBISECT_STOP_REASON(id, name, meaning) id,
#include "common/stop_reasons.def"
#undef DDPBISECT_STOP_REASON
};

inline constexpr const char* kStopReasonNames[] = {
#define DDPBISECT_STOP_REASON(id, name, meaning) name,
#include "common/stop_reasons.def"
#undef DDPBISECT_STOP_REASON
};

// "" for None, else "early_stop", "hang", ...
inline const char* to_string(StopReason reason) {
  return vocabulary_name(reason, kStopReasonNames);
}
// The reason of that name ("" is None); nullopt for a name the table does not hold.
inline std::optional<StopReason> parse_stop_reason(std::string_view text) {
  return vocabulary_parse<StopReason>(text, kStopReasonNames);
}

}  // namespace ddpbisect
