// What diagnosis extracts from logs. Events are the failures and stacks a rank printed, each
// with a category (categories.hpp); facts are what the logs say about ranks without being a
// failure: a launcher's report on a process, a rank's place in the sequence of collectives, an
// echo that names another rank, a process id's rank, a memory reading.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddpbisect {

struct Frame {
  std::string file;
  int line = 0;
  std::string function;
  bool user = true;  // not launcher, runpy, torch, site/dist-packages or the standard library
};

// Which process a line belongs to, as far as the line and its file tell.
struct Origin {
  std::optional<int> rank;        // global rank
  std::optional<int> local_rank;  // node-local rank ([defaultN], a launcher's local_rank)
  long pid = 0;
  std::string host;
  std::string rank_from;  // how the rank was learned: prefix, file name, message, banner, ...
  std::string process;    // no rank: the process whose own log it is ("the launcher on node 0")
};

enum class EventKind { Error, Stack, Exit };

struct Event {
  EventKind kind = EventKind::Error;
  Origin origin;
  std::optional<int> near_rank;  // the rank of the nearest prefixed line before it (weak hint)
  std::optional<int> printer;    // the rank that printed it, when it reports another's failure
  double time = -1;              // seconds: our capture time, or a timestamp from the log
  long long order = 0;           // position in its source, to order events without times
  std::string category;
  std::string exception;  // Python-style type name, the C++ type, or the signal name
  std::string message;
  std::vector<Frame> frames;         // outermost first
  std::vector<std::string> excerpt;  // the raw lines, bounded
  std::string source;                // file the event came from
  bool requested = false;            // a stack dump ddpbisect asked for (not a failure)
  bool handled = false;  // logged or ignored by the program ("Exception ignored in", logger)
  bool logged = false;   // handled by an ERROR log record: a failure if nothing ordinary followed
  bool weak = false;     // a warning-level line: evidence of trouble, not a failure by itself
  bool garbled = false;  // read from a line where processes' output mixed mid-line
  bool first_observed = false;  // the launcher named this rank's failure as the first one
  std::string thread;           // Stack: the thread whose frames these are

  const std::optional<int>& rank() const { return origin.rank; }
  const Frame* user_frame() const;  // the innermost user frame, if any
  bool complete() const { return !exception.empty() && !frames.empty(); }
};

// What a launcher (torchrun, srun, mpirun, DeepSpeed, mp.spawn, a shell) said about a process.
struct ProcessReport {
  Origin origin;
  std::optional<int> exit_code;  // as the launcher prints it; negative: killed by -exit_code
  int signal = 0;
  bool root_cause = false;          // torchrun's "Root Cause (first observed failure)"
  bool memory = false;              // the launcher says it ran out of memory
  bool sent = false;                // the launcher sent this signal itself (cleanup)
  bool ambiguous = false;           // the rank shown is the last one spawned, not the failed one
  std::optional<int> last_spawned;  // ambiguous: that command line's --local_rank=N
  bool success = false;             // the launcher says it exited successfully
  std::string source, text;
  long long order = 0;
};

// A rank's place in the sequence of collectives, from one piece of hang evidence.
struct Position {
  int rank = 0;
  std::string kind;    // watchdog, enqueued, heartbeat, flight_recorder, agent, detail, stack
  int group = 0;       // process group id (0: the default group)
  long long seq = -1;  // the collective it waited in (or issued last)
  std::string op;      // ALLREDUCE, BROADCAST, ... upper case; "" unknown
  long long last_enqueued = -1;  // the highest collective it issued
  long long last_completed = -1;
  bool timed_out = false;     // its own watchdog or timeout fired
  bool waiting = false;       // blocked in a collective (stack inside one, not completed)
  bool in_collective = true;  // stacks: false when the stack is outside any collective
  std::vector<Frame> frames;  // where it was, outermost first
  std::string source;
};

// An echo that names the rank it lost: "Please check rank 0 logs", "closed by localRank 1".
struct Pointer {
  std::optional<int> from;
  int to = 0;          // -1: the process is named by `pid` instead
  bool local = false;  // `to` is a local rank
  long pid = 0;
  std::string text;  // the echo's words
  std::string source;
  long long order = 0;
};

// A process id that a log ties to a rank (a launcher's spawn line, a script's own print).
struct PidRank {
  long pid = 0;
  std::optional<int> rank, local_rank;
  std::string source;
};

// One reading of a process's host memory (RSS, "CPU memory usage"), from a memory monitor.
struct MemorySample {
  Origin origin;
  double bytes = 0;
  double percent = -1;  // of the host's memory, when the monitor says
  std::string source;
};

}  // namespace ddpbisect
