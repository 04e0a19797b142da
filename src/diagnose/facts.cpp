#include "diagnose/facts.hpp"

#include <re2/re2.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "common/signals.hpp"
#include "common/text.hpp"
#include "diagnose/match.hpp"

namespace ddpbisect {

namespace {

re2::StringPiece piece(std::string_view s) {
  return re2::StringPiece(s.data(), s.size());
}

bool has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

int signal_number(const std::string& name) {
  for (int s = 1; s < 32; ++s)
    if (name == signal_name(s)) return s;
  return 0;
}

template <class T>
void bounded_push(std::vector<T>& v, T item, size_t max) {
  if (v.size() >= max) v.erase(v.begin(), v.begin() + static_cast<long>(max / 4));
  v.push_back(std::move(item));
}

}  // namespace

void Facts::merge(Facts&& o) {
  auto move_all = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  move_all(reports, o.reports);
  move_all(positions, o.positions);
  move_all(pointers, o.pointers);
  move_all(pids, o.pids);
  move_all(memory, o.memory);
  ranks_seen.insert(o.ranks_seen.begin(), o.ranks_seen.end());
  cut_ranks.insert(o.cut_ranks.begin(), o.cut_ranks.end());
  for (auto& [src, s] : o.local_seen) local_seen[src].insert(s.begin(), s.end());
  world_size = std::max(world_size, o.world_size);
  procs_per_node = std::max(procs_per_node, o.procs_per_node);
  for (auto& [r, seq] : o.heartbeat_seq) heartbeat_seq[r] = seq;
  for (auto& [r, step] : o.heartbeat_step) heartbeat_step[r] = step;
  for (auto& [r, c] : o.calls) calls[r].insert(c.begin(), c.end());
  launcher_seen = launcher_seen || o.launcher_seen;
  node_tags = node_tags || o.node_tags;
  for (auto& [src, m] : o.local_to_global) local_to_global[src].insert(m.begin(), m.end());
}

std::optional<int> stated_rank(std::string_view text) {
  // c10d's "[Rank 3]" / "[PG 0 Rank 3]", DETAIL's "Rank 3 is running collective", the monitored
  // barrier's "Rank 3 successfully reached", NCCL's "communicator was aborted on rank 3", DDP's
  // "Parameters which did not receive grad for rank 3".
  static const RE2 re(
      R"(\[(?:PG[^\]]*?)?\bRank (\d+)\]|^(?:RuntimeError: )?(?:Detected mismatch between collectives on ranks\. )?Rank (\d+) (?:is running collective|successfully reached monitoredBarrier)|communicator was aborted on rank (\d+)|did not receive grad for rank (\d+)|^Rank (\d+): )");
  if (auto g = captures(text, re))
    for (const auto& v : *g)
      if (!v.empty()) return static_cast<int>(number(v));
  return std::nullopt;
}

void FactReader::add_report(ProcessReport r, long long order) {
  r.source = source_;
  r.order = order;
  if (r.text.rfind("shell: ", 0) != 0) facts_.launcher_seen = true;
  bounded_push(facts_.reports, std::move(r), kMax);
}

void FactReader::add_position(Position p) {
  p.source = source_;
  facts_.ranks_seen.insert(p.rank);
  bounded_push(facts_.positions, std::move(p), kMax);
}

void FactReader::line(const CleanLine& l, const Origin& origin, long long order) {
  std::string_view text = l.text;
  if (origin.rank) facts_.ranks_seen.insert(*origin.rank);
  if (!l.host.empty()) facts_.node_tags = true;
  if (origin.local_rank && facts_.local_seen[source_].size() < 4096)
    facts_.local_seen[source_].insert(*origin.local_rank);
  // A banner entry's "rank : N (local_rank: M)" line starts one too: posts often keep only the
  // root cause's entry.
  static const RE2 entry_rank(R"(^rank\s*: \d+ \(local_rank: \d+\)$)");
  if (in_banner_ || has(text, "Root Cause (first observed failure)") ||
      trim(text) == "Root Cause:" || (ends_with(trim(text), " FAILED") && text.size() < 200) ||
      trim(text) == "Failures:" ||
      (starts_with(trim(text), "rank") && RE2::FullMatch(piece(trim(text)), entry_rank))) {
    banner_line(text, order);
    return;
  }
  if (mpirun_lines_ > 0) --mpirun_lines_;
  launcher_line(text, origin, order);
  collective_line(text, origin);
  pointer_line(text, origin, order);
  pid_line(text, origin);
  memory_line(text, origin);
  size_line(text);
  agent_line(text, origin);
  // "[defaultN]:... [Rank G] ..." names the global rank of local rank N on this node.
  if (origin.local_rank && !l.rank)
    if (auto g = stated_rank(text)) facts_.local_to_global[source_][*origin.local_rank] = *g;
}

// torchrun's ChildFailedError banner: entries "[N]:" with time, host, rank, exitcode,
// error_file and traceback fields, first the other failures, then the root cause.
void FactReader::finish(long long order) {
  if (entry_open_) add_report(entry_, order);
  entry_open_ = false;
  in_banner_ = banner_root_ = false;
}

void FactReader::banner_line(std::string_view text, long long order) {
  std::string_view t = trim(text);
  auto close_entry = [&] {
    if (entry_open_) add_report(entry_, order);
    entry_open_ = false;
  };
  auto open_entry = [&] {
    entry_ = ProcessReport();
    entry_.root_cause = banner_root_;
    entry_.text = "torchrun: ";
    entry_open_ = true;
  };
  if (!in_banner_) {
    in_banner_ = true;
    entry_ = ProcessReport();
  }
  // torch 1.10's banner says "Root Cause:" before its entries.
  if (has(t, "Root Cause (first observed failure)") || t == "Root Cause:") {
    close_entry();
    banner_root_ = true;
    return;
  }
  static const RE2 entry(R"(^\[\d+\]:$)");
  static const RE2 rank(R"(^rank\s*:\s*(\d+)(?: \(local_rank: (\d+)\))?)");
  static const RE2 exitcode(R"(^exitcode\s*:\s*(-?\d+)(?: \(pid: (\d+)\))?)");
  static const RE2 host(R"(^host\s*:\s*(\S+))");
  static const RE2 signal(R"(Signal (\d+) \((SIG\w+)\) received by PID)");
  if (RE2::FullMatch(piece(t), entry)) {
    close_entry();
    open_entry();
  } else if (auto g = captures(t, rank)) {
    if (!entry_open_) open_entry();  // an entry whose "[N]:" line the excerpt lost
    int r = static_cast<int>(number((*g)[0]));
    entry_.origin.rank = r;
    if (long long lr = number((*g)[1]); lr >= 0) {
      entry_.origin.local_rank = static_cast<int>(lr);
      facts_.local_to_global[source_][static_cast<int>(lr)] = r;
    }
    entry_.origin.rank_from = "launcher's report";
    facts_.ranks_seen.insert(r);
  } else if (auto g = captures(t, exitcode)) {
    long long code = number((*g)[0], 1);
    entry_.exit_code = static_cast<int>(code);
    entry_.origin.pid = number((*g)[1], 0);
    if (code < 0) entry_.signal = static_cast<int>(-code);
    entry_.text += "exitcode " + std::to_string(code);
  } else if (auto g = captures(t, host)) {
    entry_.origin.host = (*g)[0];
  } else if (auto g = captures(t, signal)) {
    entry_.signal = static_cast<int>(number((*g)[0], 0));
    entry_.text = "torchrun: " + std::string(t.substr(t.find("Signal ")));
  } else if (starts_with(t, "====")) {
    close_entry();
    in_banner_ = false;
    banner_root_ = false;
  }
}

}  // namespace ddpbisect

namespace ddpbisect {

namespace {

int shell_signal(const std::string& what) {
  return what == "Killed" || what == "Out Of Memory" ? 9
         : what == "Aborted"                         ? 6
         : what == "Segmentation fault"              ? 11
         : what == "Terminated"                      ? 15
         : what == "Bus error"                       ? 7
                                                     : 0;
}

void set_exit(ProcessReport& r, long long code) {
  r.exit_code = static_cast<int>(code);
  r.signal = code < 0 ? static_cast<int>(-code) : 0;
}

using Groups = std::vector<std::string>;

// How each launcher reports on one of its processes: a pattern and what its groups say.
struct LauncherForm {
  LauncherForm(const char* pattern, void (*r)(const Groups&, ProcessReport&))
      : re(pattern), read(r) {}
  RE2 re;
  void (*read)(const Groups& g, ProcessReport& r);
};

const std::vector<std::unique_ptr<LauncherForm>>& launcher_forms() {
  static const auto v = [] {
    std::vector<std::unique_ptr<LauncherForm>> f;
    auto add = [&](const char* re, void (*read)(const Groups&, ProcessReport&)) {
      f.push_back(std::make_unique<LauncherForm>(re, read));
    };
    add(R"(failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\))",  // torchrun agent
        [](const Groups& g, ProcessReport& r) {
          set_exit(r, number(g[0])), r.origin.local_rank = number(g[1]),
                                     r.origin.pid = number(g[2]);
        });
    add(R"((?:Sending process|Terminating process|Killing subprocess) (\d+)(?: closing signal| via signal)? ?(SIG\w+)?)",
        [](const Groups& g, ProcessReport& r) {
          r.origin.pid = number(g[0]), r.sent = true;
          r.signal = g[1].empty() ? 9 : signal_number(g[1]);
        });
    // torch 1.9's elastic agent when a worker left no error file.
    add(R"(Child process (\d+) \(local_rank (\d+)\) FAILED \(exitcode (-?\d+)\))",
        [](const Groups& g, ProcessReport& r) {
          r.origin.pid = number(g[0]), r.origin.local_rank = number(g[1]),
          set_exit(r, number(g[2]));
        });
    add(R"(process (\d+) terminated with signal (SIG\w+))",  // mp.spawn
        [](const Groups& g, ProcessReport& r) {
          r.origin.rank = number(g[0]), set_exit(r, -signal_number(g[1]));
        });
    add(R"(process (\d+) terminated with exit code (-?\d+))",
        [](const Groups& g, ProcessReport& r) {
          r.origin.rank = number(g[0]), set_exit(r, number(g[1]));
        });
    add(R"(srun: error: (\S+): tasks? (\d+)(?:-\d+)?: (Killed|Out Of Memory|Exited with exit code (\d+)|Segmentation fault|Aborted|Terminated))",
        [](const Groups& g, ProcessReport& r) {
          r.origin.host = g[0], r.origin.rank = number(g[1]), r.memory = g[2] == "Out Of Memory";
          r.sent = g[2] == "Terminated";  // srun's own cleanup after another task failed
          int sig = shell_signal(g[2]);
          set_exit(r, sig ? -sig : number(g[3], 1));
        });
    add(R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+))",  // mpirun
        [](const Groups& g, ProcessReport& r) {
          r.origin.rank = number(g[0]), r.origin.host = g[2], set_exit(r, -number(g[3]));
        });
    add(R"(MPI_ABORT was invoked on rank (\d+))",
        [](const Groups& g, ProcessReport& r) { r.origin.rank = number(g[0]), set_exit(r, 1); });
    // DeepSpeed's and torch.distributed.launch's report show the command line of the last
    // process spawned, whichever failed: its --local_rank is a hint only (the diagnosis shows it
    // when no rank is known).
    add(R"((?:--local[_-]rank[=' ,]*(\d+)\D.*)?(?:exits with return code = |returned non-zero exit status )(-?\d+))",
        [](const Groups& g, ProcessReport& r) {
          set_exit(r, number(g[1])), r.ambiguous = true;
          if (!g[0].empty()) r.last_spawned = static_cast<int>(number(g[0]));
        });
    // subprocess' own words for a child killed by a signal (the pre-elastic launcher's
    // CalledProcessError), about the last command spawned as well.
    add(R"((?:--local[_-]rank[=' ,]*(\d+)\D.*)?died with <Signals\.SIG\w+: (\d+)>)",
        [](const Groups& g, ProcessReport& r) {
          set_exit(r, -number(g[1])), r.ambiguous = true;
          if (!g[0].empty()) r.last_spawned = static_cast<int>(number(g[0]));
        });
    add(R"(^(?:\S.*: line \d+: +(\d+) +)?(Killed|Aborted|Segmentation fault|Bus error)(?: \(core dumped\))?(?: {2,}.*)?$)",
        [](const Groups& g, ProcessReport& r) {
          r.origin.pid = number(g[0], 0), set_exit(r, -shell_signal(g[1])), r.text = "shell: ";
        });
    add(R"(Process (\d+) exits successfully)", [](const Groups& g, ProcessReport& r) {
      r.origin.pid = number(g[0]), r.success = true, r.exit_code = 0;
    });
    return f;
  }();
  return v;
}

}  // namespace

// One line of a launcher about one of its processes.
void FactReader::launcher_line(std::string_view text, const Origin& origin, long long order) {
  static const RE2 mpirun_name(R"(Process name: \[\[\d+,\d+\],(\d+)\])");
  static const RE2 mpirun_exit(R"(^\s*Exit code:\s+(-?\d+))");
  ProcessReport r;
  bool found = false;
  if (auto g = captures(text, mpirun_name)) {
    mpirun_rank_ = static_cast<int>(number((*g)[0]));
    mpirun_lines_ = 3;
    facts_.launcher_seen = true;
    return;
  }
  if (auto g = mpirun_lines_ > 0 && mpirun_rank_ ? captures(text, mpirun_exit) : std::nullopt) {
    r.origin.rank = mpirun_rank_, set_exit(r, number((*g)[0]));
    mpirun_lines_ = 0;
    found = true;
  }
  for (const auto& form : launcher_forms()) {
    if (found) break;
    if (auto g = captures(text, form->re)) form->read(*g, r), found = true;
  }
  if (!found) return;
  if (r.origin.rank) {
    r.origin.rank_from = "launcher's report";
    facts_.ranks_seen.insert(*r.origin.rank);
  }
  if (r.origin.host.empty()) r.origin.host = origin.host;
  r.text += std::string(trim(text)).substr(0, 300);
  add_report(std::move(r), order);
}

// Where a rank was among the collectives: c10d's watchdog and its work counters, DETAIL's
// fingerprints.
void FactReader::collective_line(std::string_view text, const Origin& origin) {
  static const RE2 watchdog(
      R"(Watchdog caught collective operation timeout: Work\w+\((?:SeqNum=(\d+), )?OpType=(\w+))");
  static const RE2 counters(
      R"((?:at work(?: sequence id)?:? (\d+).*?)?[Ll]ast enqueued (?:NCCL )?work: (\d+), last completed (?:NCCL )?work: (-?\d+))");
  static const RE2 aborted_on(R"(communicator was aborted on rank (\d+))");
  static const RE2 fingerprint(
      R"(Rank (\d+) is running collective: CollectiveFingerPrint\((?:SequenceNumber=(\d+),? ?)?OpType=(\w+))");
  std::optional<int> rank = stated_rank(text);
  if (auto g = !rank ? captures(text, aborted_on) : std::nullopt)
    rank = static_cast<int>(number((*g)[0]));
  if (!rank) rank = origin.rank;
  if (auto g = rank ? captures(text, watchdog) : std::nullopt) {
    Position p;
    p.rank = *rank, p.kind = "watchdog", p.seq = number((*g)[0]), p.op = normalize_op((*g)[1]);
    p.timed_out = p.waiting = true;
    add_position(p);
  }
  if (auto g = rank ? captures(text, counters) : std::nullopt) {
    Position p;
    p.rank = *rank, p.kind = "enqueued", p.seq = number((*g)[0]);
    p.last_enqueued = number((*g)[1]), p.last_completed = number((*g)[2]);
    p.timed_out = p.seq >= 0 || has(text, "from this local rank") || has(text, "Timeout at");
    add_position(p);
  }
  std::string_view rest = text;
  while (auto g = captures(rest, fingerprint)) {
    Position p;
    p.rank = static_cast<int>(number((*g)[0])), p.kind = "detail", p.seq = number((*g)[1]);
    p.op = normalize_op((*g)[2]), p.waiting = true;
    add_position(p);
    size_t at = rest.find("is running collective");
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + 21);
  }
}

// Echoes that name the rank they lost.
// NCCL's desync report (TORCH_NCCL_DESYNC_DEBUG) lists "the lagging/dead/mismatched ranks that
// caused the desync": "[1] finished collective #2, but didn't join collective #3".
void FactReader::pointer_line(std::string_view text, const Origin& origin, long long order) {
  static const RE2 named(
      R"((?:Please check rank (\d+) logs|from rank (\d+)\. Please check|send/recv from rank (\d+)|Rank (\d+) failed to pass monitoredBarrier|^\s*(?:- )?\[(\d+)\] (?:finished collective #\d+, but didn't join|joined but didn't finish) collective))");
  static const RE2 local(R"(Connection closed by localRank (\d+))");
  static const RE2 died(R"(ActorDiedError|actor died|worker died|Worker unexpectedly exits)");
  static const RE2 pid(R"(^\s*pid: (\d+)\s*$)");
  Pointer p;
  p.from = origin.rank, p.source = source_, p.order = order;
  p.text = std::string(trim(text)).substr(0, 200);
  if (auto g = captures(text, named)) {
    for (const auto& v : *g) p.to = std::max<int>(p.to, static_cast<int>(number(v)));
    bounded_push(facts_.pointers, p, kMax);
  } else if (auto l = captures(text, local)) {
    p.to = static_cast<int>(number((*l)[0])), p.local = true;
    bounded_push(facts_.pointers, p, kMax);
  }
  if (RE2::PartialMatch(piece(text), died)) died_context_ = 12;
  if (died_context_ > 0) {
    --died_context_;
    if (auto g = captures(text, pid)) {
      p.to = -1, p.local = false, p.pid = number((*g)[0]);
      bounded_push(facts_.pointers, p, kMax);
    }
  }
}

// Process ids tied to ranks: a launcher's spawn line, a script's "rank 1 pid 48214", a line
// tagged with both.
void FactReader::pid_line(std::string_view text, const Origin& origin) {
  static const RE2 spawned(R"(process (\d+) spawned with command: .*--local[_-]rank[= ](\d+))");
  static const RE2 rank_pid(R"((?i)\brank[ =:]*(\d+)\b.{0,40}?\bpid[ =:]*(\d+))");
  static const RE2 pid_rank(R"((?i)\bpid[ =:]*(\d+)\b.{0,40}?\brank[ =:]*(\d+))");
  static const RE2 pid_only(R"((?i)\b(?:pid|process id)[ =:]+(\d{2,})\b)");
  PidRank m;
  m.source = source_;
  if (auto g = captures(text, spawned)) {
    m.pid = number((*g)[0]), m.local_rank = static_cast<int>(number((*g)[1]));
  } else if (auto g = captures(text, rank_pid)) {
    m.pid = number((*g)[1]), m.rank = static_cast<int>(number((*g)[0]));
  } else if (auto g = captures(text, pid_rank)) {
    m.pid = number((*g)[0]), m.rank = static_cast<int>(number((*g)[1]));
  } else if (origin.pid && (origin.rank || origin.local_rank)) {
    m.pid = origin.pid, m.rank = origin.rank, m.local_rank = origin.local_rank;
  } else if (auto g =
                 origin.rank && !has(text, "exitcode") ? captures(text, pid_only) : std::nullopt) {
    m.pid = number((*g)[0]), m.rank = origin.rank;
  } else {
    return;
  }
  if (m.rank) facts_.ranks_seen.insert(*m.rank);
  bounded_push(facts_.pids, m, kMax);
}

// A memory monitor's reading of host memory: "CPU memory usage: 24407.15 MB", "RSS 10.9G".
void FactReader::memory_line(std::string_view text, const Origin& origin) {
  static const RE2 re(
      R"((?i)\b(?:cpu|host|rss|ram|system)[^\d\n]{0,30}?(\d+(?:\.\d+)?)\s*([KMGT])i?B?\b)");
  if (has(text, "GPU") && !has(text, "CPU")) return;
  double value = 0;
  std::string unit;
  if (!RE2::PartialMatch(piece(text), re, &value, &unit)) return;
  static const std::string units = "KMGT";
  double scale = 1024;
  for (size_t i = 0; i < units.find(static_cast<char>(toupper(unit[0]))); ++i) scale *= 1024;
  MemorySample m;
  m.origin = origin, m.bytes = value * scale, m.source = source_;
  static const RE2 percent(R"((?i)percent\s*[=:]\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*%\s*used)");
  if (auto g = captures(text, percent))
    m.percent = static_cast<double>(number((*g)[0].empty() ? (*g)[1].substr(0, (*g)[1].find('.'))
                                                           : (*g)[0].substr(0, (*g)[0].find('.')),
                                           -1));
  bounded_push(facts_.memory, m, kMax);
}

void FactReader::size_line(std::string_view text) {
  static const RE2 re(
      R"((?i)\bworld[ _]size[\s:=]+(\d+)|MEMBER: \d+/(\d+)|Starting with (\d+) processes|GLOBAL_RANK: (\d+))");
  static const RE2 per_node(R"(--(?:nproc[_-]per[_-]node|num[_-]gpus)[= ](\d{1,4})\b)");
  if (auto n = captures(text, per_node))
    facts_.procs_per_node = std::max(facts_.procs_per_node, static_cast<int>(number((*n)[0], 0)));
  auto g = captures(text, re);
  if (!g) return;
  for (size_t i = 0; i < 3; ++i)
    facts_.world_size = std::max(facts_.world_size, static_cast<int>(number((*g)[i], 0)));
  if (long long r = number((*g)[3]); r >= 0) facts_.ranks_seen.insert(static_cast<int>(r));
}

// Our heartbeats (docs/heartbeat.md) and the agent's collective trace (docs/agent.md): where
// each rank was, by its own count of collectives.
void FactReader::agent_line(std::string_view text, const Origin& origin) {
  size_t at = text.find("DDPBISECT_HEARTBEAT ");
  bool heartbeat = at != std::string_view::npos;
  if (!heartbeat) at = text.find("DDPBISECT_COLLECTIVES ");
  if (at == std::string_view::npos) return;
  auto j = nlohmann::json::parse(text.substr(text.find(' ', at) + 1), nullptr, false);
  if (!j.is_object()) return;
  int rank = j.value("rank", origin.rank.value_or(-1));
  if (rank < 0) return;
  if (heartbeat) {
    if (j.contains("seq") && j["seq"].is_number())
      facts_.heartbeat_seq[rank] = j["seq"].get<long long>();
    if (j.contains("step") && j["step"].is_number())
      facts_.heartbeat_step[rank] = j["step"].get<long long>();
    facts_.ranks_seen.insert(rank);
    return;
  }
  agent_positions(rank, j.value("events", nlohmann::json::array()), source_, facts_);
}

std::string normalize_op(const std::string& name) {
  std::string op = name.substr(name.find(':') == std::string::npos ? 0 : name.find(':') + 1);
  std::string out;
  for (char c : op)
    if (c != '_') out += static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return out;
}

void agent_positions(int rank, const nlohmann::json& events, const std::string& source,
                     Facts& facts) {
  Position p;
  p.rank = rank;
  p.kind = "agent";
  p.source = source;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("pg", 0) != 0 || !e.contains("seq")) continue;
    p.seq = e.value("seq", -1LL), p.op = normalize_op(e.value("op", ""));
    if (facts.calls[rank].size() < 256)
      facts.calls[rank].insert(p.op + "@" + e.value("site", std::string()));
    std::string state = e.value("state", "");
    p.waiting = state == "issued" || state == "async";
    p.last_enqueued = std::max(p.last_enqueued, p.seq);
    std::string site = e.value("site", ""), fn = e.value("fn", "");
    size_t colon = site.rfind(':');
    p.frames.clear();
    if (colon != std::string::npos)
      p.frames.push_back({site.substr(0, colon), std::atoi(site.c_str() + colon + 1), fn, true});
  }
  if (p.seq < 0) return;
  facts.ranks_seen.insert(rank);
  facts.positions.push_back(std::move(p));
}

}  // namespace ddpbisect
