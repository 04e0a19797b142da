// The training loop: real forward, backward and SGD steps of the model wrapped in DDP (ddp.hpp),
// the planted faults (faults.hpp) and the features (features.hpp) around each step, and a
// heartbeat per step.
#pragma once

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"
#include "worker/comm.hpp"

namespace ddpbisect::worker {

// Runs the whole trial on this rank; returns normally on success and throws on failure.
void train(const Spec& spec, const TrialConfig& trial, const RankEnv& env);

}  // namespace ddpbisect::worker
