// Trials whose driver died (SIGKILL, a crash, a lost machine) leave processes that escaped
// PR_SET_PDEATHSIG (a setsid'd grandchild, ranks on other hosts). Each trial records itself in
// <trial>/live.json while it runs (its token, its cgroups, the driver, its launcher's nodes);
// the next ddpbisect on the same output folder finds the records of dead drivers and kills
// what they left, here and on the hosts.
#pragma once

#include <string>
#include <vector>

#include "launch/launcher.hpp"

namespace ddpbisect {

struct LiveRecord {
  std::string token;
  std::vector<std::string> cgroups;
  std::string launcher;  // the launcher kind, for the hosts' sweep
  std::vector<int> nodes;
};

void write_live_record(const std::string& trial_dir, const LiveRecord& record);
void remove_live_record(const std::string& trial_dir);

// Sweeps the trials under <root>/trials whose driver is gone: their cgroups, their token on this
// machine and, when `launcher` is of the recorded kind, on its hosts. Returns one note per trial
// swept. Each root is swept once per process (later calls return nothing).
std::vector<std::string> sweep_abandoned_trials(const std::string& root, const Launcher& launcher);

}  // namespace ddpbisect
