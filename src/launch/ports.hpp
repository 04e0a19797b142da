// Free TCP ports for MASTER_PORT, one per trial.
#pragma once

#include <string>

namespace ddpbisect {

// A port that was free on `addr` a moment ago (bound with port 0, then released). Another
// process may still take it; an address-in-use failure is then an infra outcome and retried.
int pick_free_port(const std::string& addr = "127.0.0.1");

}  // namespace ddpbisect
