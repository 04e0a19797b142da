#include "observe/verdict.hpp"

#include "common/category_names.hpp"
#include "common/signals.hpp"

namespace ddpbisect {

namespace {

std::string failed_rank_reason(const TrialOutcome& out) {
  for (const auto& r : out.ranks) {
    if (!out.first_failure_rank || r.rank != *out.first_failure_rank) continue;
    if (r.signal)
      return "rank " + std::to_string(r.rank) + " was killed by " + signal_name(r.signal);
    return "rank " + std::to_string(r.rank) + " exited with code " + std::to_string(r.exit_code);
  }
  return "a rank failed";
}

}  // namespace

Verdict judge_trial(const TrialOutcome& out, const TrialEnd& end) {
  if (out.stop == StopReason::Interrupt)
    return {TrialStatus::Interrupted,
            "interrupted by " + std::string(signal_name(out.interrupt_signal))};
  if (out.stop == StopReason::Cancel)  // interrupt_signal 0: stopped, never judged
    return {TrialStatus::Interrupted, "cancelled: the reducer no longer needed its answer"};
  if (!end.start_error.empty()) return {TrialStatus::Infra, end.start_error};
  if (out.resource)
    return {TrialStatus::Fail,
            "resource limit: " + out.resource->limit + " " + out.resource->detail};
  // A bind that failed on the rendezvous port explains a trial that stalled. It does not make
  // a trial that ended infra by itself: torchrun agents sharing a host print it for each one
  // that then joins the store as a client, and a launcher crashing for its own reasons may have
  // printed it on the way. Those trials are judged by their exits and their diagnosis (which
  // reads a failure that is the clash as infra).
  const bool stalled = out.stop == StopReason::Hang || out.stop == StopReason::Timeout;
  if (out.port_clash && stalled)
    return {TrialStatus::Infra, "MASTER_PORT " + std::to_string(out.master_port) +
                                    " was taken (address already in use)"};
  if (out.stop == StopReason::Hang) {
    const std::string quiet = std::to_string(static_cast<int>(out.hang_threshold_s)) + " s";
    // No stack to say where the ranks waited (empty dumps, a teardown with no Python frame
    // left): not evidence enough to call it the job's hang.
    if (out.hang_evidence.empty())
      return {TrialStatus::Infra, "no rank made progress for " + quiet +
                                      ", but no stack showed where any rank waited: not judged"};
    return {TrialStatus::Fail, "hang: no rank made progress for " + quiet};
  }
  if (out.stop == StopReason::Timeout) {
    bool failed = false;
    for (const auto& r : out.ranks) failed = failed || r.failed();
    if (out.timed_out_exiting && !failed)
      return {TrialStatus::Pass,
              "every rank finished training; the ranks still exiting at the "
              "trial timeout (" +
                  end.timeout_text + ") were stopped"};
    if (out.timed_out_progressing)
      return {TrialStatus::Infra, "the trial timeout (" + end.timeout_text +
                                      ") came while the ranks were still making progress: too "
                                      "short to judge (limits.trial_timeout)"};
    return {TrialStatus::Fail, "trial timeout after " + end.timeout_text};
  }
  bool all_ok = true;
  for (const auto& r : out.ranks) all_ok = all_ok && r.exit_code == 0 && r.signal == 0;
  if (all_ok) return {TrialStatus::Pass, "every rank exited 0"};
  return {TrialStatus::Fail, failed_rank_reason(out)};
}

bool a_rank_ran(const TrialOutcome& out) {
  for (const auto& r : out.ranks)
    if (r.pid > 0 || r.heartbeats > 0 || r.bytes > 0) return true;
  return false;
}

Verdict refine_verdict(const Verdict& verdict, const Diagnosis& d, bool a_rank_ran) {
  if (verdict.status != TrialStatus::Fail || !d.failed) return verdict;
  if (d.root.category == cat::infra)
    return {TrialStatus::Infra, "infrastructure: " + d.root.message.substr(0, 200)};
  if (!a_rank_ran && !d.root.rank() && !d.root.origin.process.empty()) {
    std::string what = d.root.exception;
    if (!d.root.message.empty()) what += (what.empty() ? "" : ": ") + d.root.message.substr(0, 200);
    if (!d.signature.frame.empty()) what += " (at " + d.signature.frame + ")";
    return {TrialStatus::Infra,
            "the job never started: " + rank_words(d.root.origin) + " failed before any rank ran" +
                (what.empty() ? "" : ": " + what),
            true};
  }
  if (d.root.category == cat::resource_limit) return verdict;
  return {TrialStatus::Fail, rank_words(d.root.origin) + ": " + d.signature.to_string()};
}

Diagnosis resource_limit_diagnosis(const ResourceFault& fault, Diagnosis d) {
  d.failed = true;
  d.root = Event{};
  d.root.kind = EventKind::Exit;
  if (fault.rank >= 0) {
    d.root.origin.rank = fault.rank;
    d.root.origin.rank_from = "limits";
  }
  d.root.category = cat::resource_limit;
  d.root.exception = fault.limit;
  d.root.message = "the trial's processes reached " + fault.limit + " " + fault.detail;
  d.signature = Signature{};
  d.signature.category = cat::resource_limit;
  d.signature.exception = fault.limit;
  if (fault.rank >= 0) d.signature.ranks = {fault.rank};
  d.explanation = "ddpbisect stopped the trial: " + d.root.message +
                  ". This is the limit the spec sets, not the failure being reduced.";
  return d;
}

}  // namespace ddpbisect
