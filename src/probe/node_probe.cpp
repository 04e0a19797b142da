#include "probe/node_probe.hpp"

#include "common/templates.hpp"
#include "common/text.hpp"

namespace ddpbisect {

std::string node_probe_script() {
  return node_probe_py_template();
}

nlohmann::json parse_probe_line(const std::string& output) {
  nlohmann::json found = nullptr;
  for (const auto& line : split(output, '\n')) {
    if (!starts_with(line, "DDPBISECT_DOCTOR ")) continue;
    auto j = nlohmann::json::parse(line.substr(17), nullptr, false);
    if (!j.is_discarded()) found = j;
  }
  return found;
}

}  // namespace ddpbisect
