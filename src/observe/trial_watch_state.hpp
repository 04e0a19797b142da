// TrialWatch's per-rank and per-process state, shared by trial_watch.cpp and
// trial_watch_stacks.cpp (not part of the observe layer's interface).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>

#include "launch/process_tree.hpp"
#include "observe/agent_report.hpp"
#include "observe/log_capture.hpp"
#include "observe/trial_watch.hpp"

namespace ddpbisect {

struct TrialWatch::Rank {
  RankRecord rec;
  std::unique_ptr<StreamCapture> out, err;
  size_t process = 0;
  bool ended = false;  // a torchrun rank the agent reported as ended
  // The rank's own process: a torchrun agent's worker once found, a warm start's forked rank
  // once its stub names it.
  pid_t pid = -1;
  int real_rank = -1;  // the global rank the rendezvous gave it (torchrun), -1 unknown
  double stack_requested_at = -1;
  TreeCounter tree;    // CPU time and I/O of the rank's process and every descendant
  bool asked = false;  // a stack could be asked of one of its processes
};

// A process of the RankSet: a rank itself, or a torchrun agent with its node's ranks.
struct TrialWatch::Process {
  size_t first = 0, count = 1;
  bool agent = false;
  // An agent's streams, split into lines: a rank's (by prefix) or the agent's own.
  LineSplitter split[2];
  std::optional<size_t> continues[2];  // the rank whose over-long line goes on
  std::unique_ptr<StreamCapture> own[2];
  AgentReport report;
};

}  // namespace ddpbisect
