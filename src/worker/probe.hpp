// `DDPBISECT_PROBE=allreduce`: instead of training, time all-reduces over the trial's Gloo group
// (4 KiB to DDPBISECT_PROBE_MAX_BYTES, x4 per size) and print, on rank 0, a table in the manner of
// nccl-tests and one `DDPBISECT_PROBE {json}` line per size, for `ddpbisect doctor`.
#pragma once

#include <cstdint>

#include "worker/comm.hpp"

namespace ddpbisect::worker {

void allreduce_probe(const RankEnv& env, int64_t max_bytes, int iterations);

}  // namespace ddpbisect::worker
