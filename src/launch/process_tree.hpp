// A rank is all of its processes: the workers a launcher or mp.spawn started, DataLoader workers,
// tools it runs. This reads a snapshot of /proc (every process's parent, state and CPU time) and
// keeps counters over a rank's whole tree that only grow, so a child that exits or a tree whose
// root changes (a torchrun worker found under its agent) never counts backwards.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace ddpbisect {

class ProcessTable {
 public:
  static ProcessTable read();  // one pass over /proc
  // `root` and its live descendants (zombies left out), `root` first; empty when it is gone.
  std::vector<pid_t> tree(pid_t root) const;
  double cpu_seconds(pid_t pid) const;  // user + system, -1 when not in the snapshot
  char state(pid_t pid) const;          // R, S, D, ... ; '?' when not in the snapshot
  // Threads ready to run beside the processes in `except` (and the caller): the machine's run
  // queue (/proc/stat procs_running, every thread) less those of `except` in state R.
  int runnable_except(const std::vector<pid_t>& except) const;

 private:
  struct Entry {
    pid_t ppid = 0;
    char state = '?';
    double cpu = 0;
  };
  std::unordered_map<pid_t, Entry> procs_;
  std::unordered_multimap<pid_t, pid_t> children_;
};

// A /proc or /sys file's whole text (a process's cmdline, environ, status; a cgroup's files), or
// what could be read of it: a process that exits while it is read makes read(2) fail with ESRCH,
// which a stream reading through istreambuf_iterator throws as an exception; this never throws.
// "" when it cannot be opened.
std::string read_kernel_file(const std::string& path);

// Bytes a process read and wrote through system calls (/proc/PID/io rchar + wchar), -1 unknown.
int64_t process_io_bytes(pid_t pid);
// Where a process's main thread waits in the kernel (/proc/PID/wchan), "" when running or unknown.
std::string process_wait_channel(pid_t pid);

// How loaded this machine is: the run queue (1-minute load average, or the runnable processes
// now, whichever is larger) per CPU; 0 when unknown.
double machine_load();

// CPU seconds and I/O bytes of a rank's tree, as counters that only grow.
class TreeCounter {
 public:
  void update(const ProcessTable& table, pid_t root);
  double cpu_seconds() const { return cpu_; }
  int64_t io_bytes() const { return io_; }
  size_t processes() const { return last_.size(); }
  bool io_wait() const { return io_wait_; }  // a process of the tree waits on storage (D)

 private:
  struct Last {
    double cpu = 0;
    int64_t io = 0;
  };
  std::map<pid_t, Last> last_;
  double cpu_ = 0;
  int64_t io_ = 0;
  bool io_wait_ = false;
};

}  // namespace ddpbisect
