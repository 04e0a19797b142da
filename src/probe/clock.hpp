// doctor's clock check, NTP-style: the master probe answers "t" with its wall clock, and the
// round trip with the shortest delay gives the offset.
#pragma once

#include <optional>
#include <string>

namespace ddpbisect {

// The master probe's clock minus ours (seconds), over one connection (the best of 5 round
// trips), or nullopt when this machine cannot reach addr:port.
std::optional<double> clock_offset_to(const std::string& addr, int port);

}  // namespace ddpbisect
