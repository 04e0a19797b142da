// Durations as written in specs and flags: "250ms", "90s", "5m", "2h", or a bare number of seconds.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ddpbisect {

using Millis = std::chrono::milliseconds;

std::optional<Millis> parse_duration(std::string_view text);
std::string format_duration(Millis d);  // shortest exact form: "90s", "5m", "1500ms"

}  // namespace ddpbisect
