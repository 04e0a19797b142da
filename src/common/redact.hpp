// Secret redaction for everything ddpbisect writes that a user may paste elsewhere: reports,
// doctor's findings, the environment's variables.
#pragma once

#include <string>

namespace ddpbisect {

// Redacts a variable's value when its name says it is a secret (TOKEN, SECRET, KEY, PASSWORD,
// CREDENTIAL), and credential-looking parts of any value (key=..., user:pass@ in URLs).
std::string redact_value(const std::string& name, const std::string& value);

}  // namespace ddpbisect
