// A finished trial's status and one-line reason, as pure functions of what was recorded: first
// without the logs (how the trial ended, exit statuses, a port clash, a resource limit), then
// refined by the diagnosis of a failed trial (an infrastructure root cause is not the bug).
#pragma once

#include <string>

#include "diagnose/diagnosis.hpp"
#include "observe/outcome.hpp"

namespace ddpbisect {

struct Verdict {
  TrialStatus status = TrialStatus::Infra;
  std::string reason;
  // Infra because the job never started: the launcher failed by itself before any rank ran
  // (Debian's torchrun on Python 3.11, a broken install). No smaller configuration changes that.
  bool not_started = false;
};

// What the outcome does not hold: why a rank could not start, and the timeout as the spec
// spelled it (for the reason).
struct TrialEnd {
  std::string start_error;
  std::string timeout_text;
};

Verdict judge_trial(const TrialOutcome& out, const TrialEnd& end);

// Whether any rank of the trial ran: a process of its own seen (a pid), a heartbeat, or output.
bool a_rank_ran(const TrialOutcome& out);

// A failed trial's verdict once diagnosed: an infra root cause (port in use, master unreachable)
// turns it into infra, and so does a launcher's own failure when no rank ran (not_started);
// otherwise the reason names the root cause's rank and signature.
Verdict refine_verdict(const Verdict& verdict, const Diagnosis& diagnosis, bool a_rank_ran);

// The diagnosis of a trial stopped by limits.memory or limits.max_procs: its own category
// (resource_limit), so that it is never taken for the failure being reduced.
Diagnosis resource_limit_diagnosis(const ResourceFault& fault, Diagnosis from_logs);

}  // namespace ddpbisect
