// What a torchrun agent says about its ranks in its own log lines (PyTorch 1.13 and 2.x):
//   "failed (exitcode: 1) local_rank: 0 (pid: 29854) of binary: …"   a rank failed, as it happens
//   "Sending process 29862 closing signal SIGTERM"                    the agent stops a rank
//   the ChildFailedError banner: "rank      : 3 (local_rank: 1)" and "exitcode  : -15 (pid: …)"
// Pure: lines in, each rank's end out.
#pragma once

#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace ddpbisect {

struct WorkerEnd {
  int rank = -1;  // global rank, -1 when only the local rank is known
  int local_rank = -1;
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it (torchrun's negative exit code)
  long pid = -1;
  bool stopped_by_agent = false;  // the agent sent it SIGTERM after another rank failed
};

class AgentReport {
 public:
  // One line of the agent's own output. Returns a failure first reported on this line
  // ("failed (exitcode: …", local rank only), so the observer can start its grace period.
  std::optional<WorkerEnd> line(std::string_view text);
  // Every rank the agent reported as ended abnormally, the banner's view winning.
  std::vector<WorkerEnd> ends() const;

 private:
  std::vector<WorkerEnd> failed_lines_, banner_;
  std::set<long> sigtermed_;
  std::optional<WorkerEnd> pending_;  // a banner entry whose exitcode line is still to come
};

}  // namespace ddpbisect
