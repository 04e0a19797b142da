// Signal names as reports print them ("SIGKILL"), for exit statuses and diagnoses alike.
#pragma once

namespace ddpbisect {

const char* signal_name(int sig);  // "signal" for one without a name here

}  // namespace ddpbisect
