// The processes of one trial (or of one helper command) and the loop that watches them, shaped
// like ninja's SubprocessSet: a passive record per child and one set that owns the ppoll loop
// and the interrupt check. SIGINT/SIGTERM stay blocked in the calling thread except inside
// ppoll, so a Ctrl-C wakes the wait at once instead of being lost between two checks.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "launch/process.hpp"

namespace ddpbisect {

enum class Stream { Out, Err };

// How a process ended: exit_code when it exited, signal when a signal ended it.
struct ExitStatus {
  int exit_code = -1;
  int signal = 0;
  // 128+signal for a signal, else the exit code (the shell's convention).
  int shell_code() const { return signal ? 128 + signal : exit_code; }
};

class RankSet {
 public:
  // Called with every chunk read from a child's stdout or stderr, in order per stream.
  using OutputSink = std::function<void(size_t index, Stream stream, const char* data, size_t n)>;
  // `stop` is polled before and after every wait; by default, the driver's interrupt flag.
  explicit RankSet(OutputSink sink, std::function<bool()> stop = {});
  // Kills and reaps whatever is still running: a set never leaves a process behind.
  ~RankSet();
  RankSet(const RankSet&) = delete;
  RankSet& operator=(const RankSet&) = delete;

  // Starts `spec` as the next child (its index is size() - 1 when it started); on failure no
  // child is added and the result says why.
  StartResult start(const ProcessSpec& spec);

  size_t size() const { return children_.size(); }
  pid_t pid(size_t i) const { return children_[i].pid; }
  bool running(size_t i) const { return children_[i].running; }
  bool any_running() const;
  const ExitStatus& status(size_t i) const { return children_[i].status; }

  struct Events {
    std::vector<size_t> exited;  // children reaped during this wait, in index order
    bool stopped = false;        // the stop predicate (the interrupt flag) is set
  };
  // Waits up to `timeout_s` for output or an exit, hands what it read to the sink and reaps
  // the children that ended.
  Events wait(double timeout_s);

  // Sends `sig` to child i's process group (the child and what stayed in its group).
  void signal(size_t i, int sig);
  void kill_all();  // SIGKILL to every running child's group

  // Once every child has ended: reads what is left in the pipes, for at most `seconds` (an
  // escaped grandchild can hold a pipe open), then closes them.
  void drain(double seconds);

 private:
  struct Child {
    pid_t pid = -1;
    int fd[2] = {-1, -1};  // stdout, stderr read ends
    int pidfd = -1;        // readable when the child has ended (-1: poll waitpid instead)
    bool running = false;
    ExitStatus status;
  };
  bool read_some(size_t i, int which);  // false at end of stream
  void close_fd(int& fd);
  bool reap(size_t i, bool block);
  bool should_stop() const;

  OutputSink sink_;
  std::function<bool()> stop_;
  std::vector<Child> children_;
};

}  // namespace ddpbisect
