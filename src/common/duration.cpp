#include "common/duration.hpp"

#include <cmath>
#include <cstdlib>

#include "common/text.hpp"

namespace ddpbisect {

std::optional<Millis> parse_duration(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  size_t unit_pos = text.find_first_not_of("0123456789.");
  std::string number(text.substr(0, unit_pos));
  std::string_view unit = unit_pos == std::string_view::npos ? "" : text.substr(unit_pos);
  if (number.empty() || number.find('.') != number.rfind('.')) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  double scale;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s" || unit.empty())
    scale = 1000;
  else if (unit == "m" || unit == "min")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else
    return std::nullopt;
  double ms = value * scale;
  if (ms > 1e15) return std::nullopt;
  return Millis(static_cast<int64_t>(std::llround(ms)));
}

std::string format_duration(Millis d) {
  int64_t ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace ddpbisect
