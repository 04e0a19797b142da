// Facts: what log lines say about ranks without being a failure of their own. Launchers report
// how their processes ended (torchrun's agent lines and ChildFailedError banner, srun, mpirun,
// DeepSpeed, mp.spawn, accelerate, the shell); c10d's watchdog, DETAIL mode, our heartbeats and
// the agent's collective trace say where each rank was in the sequence of collectives; echoes
// name the rank they lost; scripts and launchers tie process ids to ranks; memory monitors
// print a process's host memory. Read line by line, in bounded memory.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/event.hpp"
#include "diagnose/line_hygiene.hpp"

namespace ddpbisect {

struct Facts {
  std::vector<ProcessReport> reports;
  std::vector<Position> positions;
  std::vector<Pointer> pointers;
  std::vector<PidRank> pids;
  std::vector<MemorySample> memory;
  std::set<int> ranks_seen;  // every global rank a tag, a file or a message names
  std::set<int> cut_ranks;   // ranks a file ends inside the line of (unterminated, cut off)
  std::map<std::string, std::set<int>> local_seen;  // per source: node-local ranks tagged
  int world_size = 0;                               // the largest world size a log states
  // A launcher command's ranks per node (--nproc_per_node N, deepspeed's --num_gpus N), echoed.
  int procs_per_node = 0;
  std::map<int, long long> heartbeat_seq;   // each rank's last heartbeat's count of collectives
  std::map<int, long long> heartbeat_step;  // ... and its last finished step
  // Per rank, every "OP@file:line" its agent trace shows it issued on the default group: what
  // the rank does as a rule, to tell a call only one rank makes from the one they all make.
  std::map<int, std::set<std::string>> calls;
  bool launcher_seen = false;  // a launcher's own lines are present (torchrun, srun, ...)
  bool node_tags = false;      // lines carry a node's name ([host:local]:): several nodes, likely
  // Per source file: node-local rank -> global rank, from banners and self-naming lines.
  std::map<std::string, std::map<int, int>> local_to_global;

  void merge(Facts&& other);
};

// Reads the facts of one file's clean lines. Stateful only across the few lines of a banner or
// an mpirun report.
class FactReader {
 public:
  FactReader(std::string source, Facts& facts) : source_(std::move(source)), facts_(facts) {}

  // `origin`: whose line this is, as far as its tags and its file tell.
  void line(const CleanLine& line, const Origin& origin, long long order);
  bool idle() const { return !in_banner_ && mpirun_lines_ == 0; }
  // The file ended: a banner entry its excerpt cut off before the closing rule still counts.
  void finish(long long order);
  // The file's last line, which it ends without a newline: the excerpt cut that rank off.
  void cut_line(const Origin& origin) {
    if (origin.rank) facts_.cut_ranks.insert(*origin.rank);
  }

 private:
  void banner_line(std::string_view text, long long order);
  void launcher_line(std::string_view text, const Origin& origin, long long order);
  void collective_line(std::string_view text, const Origin& origin);
  void pointer_line(std::string_view text, const Origin& origin, long long order);
  void pid_line(std::string_view text, const Origin& origin);
  void memory_line(std::string_view text, const Origin& origin);
  void size_line(std::string_view text);
  void agent_line(std::string_view text, const Origin& origin);
  void add_report(ProcessReport r, long long order);
  void add_position(Position p);

  std::string source_;
  Facts& facts_;
  bool in_banner_ = false;
  bool banner_root_ = false;  // in the "Root Cause" part of the banner
  ProcessReport entry_;       // the banner entry being read
  bool entry_open_ = false;
  int mpirun_lines_ = 0;  // lines left of an mpirun "Process name:" report
  std::optional<int> mpirun_rank_;
  int died_context_ = 0;  // lines left in which a "pid: N" names a process that died
  static constexpr size_t kMax = 4096;
};

// A collective's name in one spelling: "gloo:all_reduce", "all_reduce", "ALLREDUCE" -> ALLREDUCE.
std::string normalize_op(const std::string& name);

// The agent's trace events of `rank` (docs/agent.md), oldest first, as positions: the last
// collective it issued on the default group, where, and whether it is still waiting in it.
void agent_positions(int rank, const nlohmann::json& events, const std::string& source,
                     Facts& facts);

// The global rank a self-naming line states ("[Rank 3]", "[PG 0 Rank 3]", "rank 3 ..."), if any.
std::optional<int> stated_rank(std::string_view text);

}  // namespace ddpbisect
