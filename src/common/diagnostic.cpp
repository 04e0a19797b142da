#include "common/diagnostic.hpp"

namespace ddpbisect {

std::string Diagnostic::to_string() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  out += ": error: ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

}  // namespace ddpbisect
