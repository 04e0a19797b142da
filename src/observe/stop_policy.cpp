#include "observe/stop_policy.hpp"

namespace ddpbisect {

void StopPolicy::on_rank_failed(double t) {
  if (!grace_until_) grace_until_ = t + limits_.grace_s;
}

void StopPolicy::on_start_failure() {
  start_failed_ = true;
}

void StopPolicy::on_stacks_collected() {
  stacks_in_ = true;
}

StopDecision StopPolicy::stop(StopAction action, StopReason reason, double t) {
  reason_ = reason;
  if (action == StopAction::KillAll) {
    killed_ = true;
    kill_at_.reset();
  } else {
    kill_at_ = t + limits_.dump_wait_s;
    stacks_in_ = false;
  }
  return {action, reason};
}

StopDecision StopPolicy::decide(const StopInputs& in) {
  // Stops that cannot wait: they win over a stop already under way, once each.
  if (in.interrupted && reason_ != StopReason::Interrupt)
    return stop(StopAction::KillAll, StopReason::Interrupt, in.t);
  if (in.cancelled && reason_ != StopReason::Interrupt && reason_ != StopReason::Cancel)
    return stop(StopAction::KillAll, StopReason::Cancel, in.t);
  if (killed_) return {};
  if (start_failed_) return stop(StopAction::KillAll, StopReason::StartFailure, in.t);
  if (in.resource_exceeded) return stop(StopAction::KillAll, StopReason::ResourceLimit, in.t);
  if (reason_ == StopReason::None) {
    // Once a rank has failed, the others' silence is its consequence: the grace period owns it.
    if (!grace_until_ && in.hung && in.hang_confirmed)
      return stop(StopAction::RequestStacks, StopReason::Hang, in.t);
    if (!in.hung) sampled_ = false;  // progress again: a later quiet spell is sampled afresh
    if (!grace_until_ && in.hung && !sampled_) {
      sampled_ = true;
      return {StopAction::SampleStacks, StopReason::Hang};
    }
    if (in.t > limits_.timeout_s) return stop(StopAction::RequestStacks, StopReason::Timeout, in.t);
    if (grace_until_ && in.t >= *grace_until_)
      return stop(StopAction::RequestStacks, StopReason::EarlyStop, in.t);
    return {};
  }
  if (kill_at_ && (in.t >= *kill_at_ || stacks_in_))
    return stop(StopAction::KillAll, reason_, in.t);
  return {};
}

}  // namespace ddpbisect
