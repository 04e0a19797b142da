// Containment: every process a trial starts on this machine joins the trial's own cgroup before
// it execs, so the trial is killed as a whole (a grandchild that called setsid included) and
// limits.memory / limits.max_procs bound it. Where the cgroups live:
//  - cgroup v2 (a pure-v2 host, or the unified hierarchy of a hybrid one): a group under the
//    driver's own, killed through cgroup.kill (freeze + SIGKILL each member on kernels before
//    5.14); memory.max and pids.max when those controllers are on the v2 side and can be
//    enabled (under the driver's group, else under <root>/ddpbisect.trials);
//  - cgroup v1 memory and pids hierarchies (legacy or hybrid): a group under the driver's own in
//    each, with memory.limit_in_bytes / pids.max.
// Without a writable hierarchy (not root, nothing delegated) there is no group: the trial
// token's /proc sweep still kills what is left, and the limits are not enforced (the outcome
// says so).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddpbisect {

struct CgroupLimits {
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> max_procs;
};

// What the kernel counted against a group's limits since it was made.
struct CgroupEvents {
  int64_t oom_kills = 0;      // processes the OOM killer ended for limits.memory
  int64_t fork_refusals = 0;  // forks refused for limits.max_procs
};

class TrialCgroup {
 public:
  TrialCgroup() = default;  // no group: containment by the token sweep only
  // Makes the groups named `name` (e.g. ddpbisect-<token>) wherever this host allows.
  static TrialCgroup create(const std::string& name, const CgroupLimits& limits);
  ~TrialCgroup();
  TrialCgroup(TrialCgroup&& other) noexcept;
  TrialCgroup& operator=(TrialCgroup&& other) noexcept;
  TrialCgroup(const TrialCgroup&) = delete;
  TrialCgroup& operator=(const TrialCgroup&) = delete;

  bool contains() const { return !dirs_.empty(); }
  // The cgroup.procs files a child writes its pid to before exec (ProcessSpec::join_cgroups).
  std::vector<std::string> procs_files() const;
  // The group folders, to record for the sweep of a trial whose driver died.
  const std::vector<std::string>& dirs() const { return dirs_; }
  // "cgroup v2 /sys/fs/cgroup/...; memory v1 ...", or how it degrades and why.
  const std::string& describe() const { return describe_; }
  // Limits asked for but not enforced here (e.g. "limits.memory: no memory controller").
  const std::string& unenforced() const { return unenforced_; }

  CgroupEvents events() const;
  // SIGKILLs every process in the groups and waits (up to `timeout_s`) until they are empty.
  // Returns how many processes were still there.
  int kill_all(double timeout_s = 2.0) const;
  // Kills what is left and removes the groups; the destructor does it too.
  void remove();

 private:
  std::vector<std::string> dirs_;  // the first one is the one we kill through
  std::string v2_, memory_v1_, pids_v1_;
  std::string memory_events_, pids_events_;  // files with oom_kill / max counters
  std::string describe_, unenforced_;
};

// Kills every process in the groups `dirs` (recorded by a driver that died) and removes them.
// Returns how many processes the fullest group held.
int kill_cgroup_dirs(const std::vector<std::string>& dirs);

}  // namespace ddpbisect
