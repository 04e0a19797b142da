#include "common/redact.hpp"

#include <re2/re2.h>

#include <cctype>

namespace ddpbisect {

std::string redact_value(const std::string& name, const std::string& value) {
  std::string upper = name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* secret : {"TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL"})
    if (upper.find(secret) != std::string::npos) return "<redacted>";
  static const RE2 inline_secret(
      R"((?i)((?:token|secret|key|password|passwd|credential)s?[=:]\s*)[^\s,;&]+)");
  static const RE2 url_password(R"((://[^:/@\s]+:)[^@\s]+@)");
  std::string v = value;
  RE2::GlobalReplace(&v, inline_secret, "\\1<redacted>");
  RE2::GlobalReplace(&v, url_password, "\\1<redacted>@");
  return v;
}

}  // namespace ddpbisect
