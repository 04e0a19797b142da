// Step "ranks" of diagnose (diagnose_steps.hpp): a rank for every event that lacks one, from
// every source the logs offer, each recorded in Origin::rank_from. A rank no source settles
// stays unknown; it is never guessed from an event's position alone.
#include <re2/re2.h>

#include <algorithm>
#include <map>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/diagnose_steps.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/match.hpp"

namespace ddpbisect {

namespace {

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

void set_rank(Event& e, int rank, const char* how) {
  e.origin.rank = rank;
  e.origin.rank_from = how;
}

// A node-local rank through the launcher's map for that file; with no map anywhere, a
// single-node job's local rank is its rank (not when lines name their node: several nodes).
std::optional<int> global_of_local(int local, const std::string& source, const Facts& facts) {
  auto it = facts.local_to_global.find(source);
  if (it != facts.local_to_global.end()) {
    auto m = it->second.find(local);
    if (m != it->second.end()) return m->second;
    // The map's offset (node_rank * nproc_per_node) applies to every local rank of that node.
    if (!it->second.empty()) return it->second.begin()->second - it->second.begin()->first + local;
  }
  if (facts.local_to_global.empty() && !facts.node_tags) return local;
  return std::nullopt;
}

std::optional<int> rank_of_pid(long pid, const std::string& source, const Facts& facts) {
  if (!pid) return std::nullopt;
  for (const auto& m : facts.pids) {
    if (m.pid != pid) continue;
    if (m.rank) return m.rank;
    if (m.local_rank) return global_of_local(*m.local_rank, m.source, facts);
  }
  for (const auto& r : facts.reports) {
    if (r.origin.pid != pid || r.ambiguous) continue;
    if (r.origin.rank) return r.origin.rank;
    if (r.origin.local_rank) return global_of_local(*r.origin.local_rank, r.source, facts);
  }
  (void)source;
  return std::nullopt;
}

// How an event ended its process, to match it with a launcher's report of that process.
int expected_signal(const Event& e) {
  if (e.exception == "SIGSEGV" || e.exception == "SIGBUS" || e.exception == "SIGFPE") return 11;
  if (e.category == cat::cpp_exception || e.exception == "SIGABRT" ||
      e.exception.find("::") != std::string::npos || e.category == cat::collective_mismatch ||
      (e.category == cat::host_oom && e.frames.empty()))
    return 6;
  return 0;
}

bool report_matches(const ProcessReport& r, const Event& e) {
  int sig = expected_signal(e);
  if (sig == 11) return r.signal == 11 || r.signal == 7 || r.signal == 8;
  if (sig == 6) return r.signal == 6 || (e.category == cat::host_oom && r.signal == 9);
  return !r.signal && r.exit_code && *r.exit_code > 0;
}

std::optional<int> report_rank(const ProcessReport& r, const Facts& facts) {
  if (r.ambiguous) return std::nullopt;
  if (r.origin.rank) return r.origin.rank;
  if (r.origin.local_rank) return global_of_local(*r.origin.local_rank, r.source, facts);
  return rank_of_pid(r.origin.pid, r.source, facts);
}

// The launcher's report of the process this event ended: its first observed failure when that
// matches, else the only matching report. Prefers reports from the event's own file.
std::optional<int> launcher_rank(const Event& e, const Facts& facts,
                                 const std::vector<Event>& events) {
  auto owned = [&](int rank) {
    return std::any_of(events.begin(), events.end(), [&](const Event& o) {
      return o.kind == EventKind::Error && o.origin.rank == rank && real_primary(o);
    });
  };
  for (int pass = 0; pass < 2; ++pass) {
    std::optional<int> root, only;
    int count = 0;
    for (const auto& r : facts.reports) {
      if (r.sent || r.success || (pass == 0 && r.source != e.source) || !report_matches(r, e))
        continue;
      auto rank = report_rank(r, facts);
      if (!rank || owned(*rank)) continue;
      if (r.root_cause && !root) root = rank;
      if (!only || *only != *rank) ++count;
      only = rank;
    }
    if (root) return root;
    if (count == 1) return only;
  }
  return std::nullopt;
}

}  // namespace

// The rank most echoes point at (local pointers through the launcher's map).
std::set<int> silent_ranks(const std::set<int>& world, const std::vector<Event>& events,
                           const Facts& facts) {
  std::set<int> silent = world;
  for (const auto& e : events)
    if (e.origin.rank) silent.erase(*e.origin.rank);
  for (int r : facts.cut_ranks) silent.erase(r);
  return silent;
}

std::optional<int> pointed_rank(const Facts& facts) {
  std::map<int, int> votes;
  for (const auto& p : facts.pointers) {
    std::optional<int> to;
    if (p.to >= 0)
      to = p.local ? global_of_local(p.to, p.source, facts) : std::optional<int>(p.to);
    else
      to = rank_of_pid(p.pid, p.source, facts);
    if (to && (!p.from || *p.from != *to)) ++votes[*to];
  }
  std::optional<int> best;
  for (const auto& [r, n] : votes)
    if (!best || n > votes[*best]) best = r;
  return best;
}

namespace {

bool ranked_copy(Event& e, const std::vector<Event>& events) {
  if (e.kind != EventKind::Error || e.exception.empty()) return false;
  for (const auto& o : events) {
    if (!o.origin.rank || o.kind != EventKind::Error || o.exception != e.exception ||
        first_line(o.message) != first_line(e.message) ||
        frame_key(best_frame(o)) != frame_key(best_frame(e)))
      continue;
    set_rank(e, *o.origin.rank, "a copy of its ranked traceback");
    return true;
  }
  return false;
}

// Under env:// and tcp:// rendezvous only rank 0 starts the store's server (the others are its
// clients), so a rank's traceback that fails to bind the store's port there is rank 0's.
bool store_server(const Event& e) {
  static const RE2 bind(R"(Address already in use|EADDRINUSE|errno: 98\b|failed to listen)");
  if (e.kind != EventKind::Error || !RE2::PartialMatch(e.message, bind)) return false;
  return std::any_of(e.frames.begin(), e.frames.end(), [](const Frame& f) {
    return ends_with(f.file, "torch/distributed/rendezvous.py") &&
           (f.function == "_env_rendezvous_handler" || f.function == "_tcp_rendezvous_handler" ||
            f.function == "_create_c10d_store");
  });
}

// The device a CUDA out-of-memory message names ("(GPU 5; 31.75 GiB total capacity", "GPU 5 has
// a total capacity"). Launchers give local rank N device N; a process that sees one GPU only
// (CUDA_VISIBLE_DEVICES per rank) calls it GPU 0, so only a device above 0 tells the rank.
std::optional<int> device_local_rank(const Event& e) {
  static const RE2 device(R"(\(GPU (\d{1,3}); |\bGPU (\d{1,3}) has a total capacity)");
  if (e.kind != EventKind::Error || e.category != cat::cuda_oom) return std::nullopt;
  auto g = captures(e.message, device);
  if (!g) return std::nullopt;
  long n = number((*g)[0].empty() ? (*g)[1] : (*g)[0], 0);
  if (n <= 0) return std::nullopt;
  return static_cast<int>(n);
}

void from_origin(Event& e, const Facts& facts) {
  if (e.origin.local_rank)
    if (auto g = global_of_local(*e.origin.local_rank, e.source, facts))
      return set_rank(e, *g, "local rank");
  if (auto r = rank_of_pid(e.origin.pid, e.source, facts)) return set_rank(e, *r, "process id");
  if (e.kind == EventKind::Error && e.category != cat::launcher)
    if (auto s = stated_rank(e.message)) return set_rank(e, *s, "message");
  if (store_server(e))
    return set_rank(e, 0, "the store's server: only rank 0 binds its port (env:// rendezvous)");
}

}  // namespace

std::set<int> known_world(const std::vector<Event>& events, const Facts& facts,
                          const DiagnosisInput& input) {
  std::set<int> world = facts.ranks_seen;
  for (int r = 0; r < facts.world_size && r < 4096; ++r) world.insert(r);
  for (const auto& e : events)
    if (e.origin.rank) world.insert(*e.origin.rank);
  for (const auto& x : input.exits) world.insert(x.rank);
  for (const auto& [source, locals] : facts.local_seen)
    for (int l : locals)
      if (auto g = global_of_local(l, source, facts)) world.insert(*g);
  // A launcher's processes on one node: the distinct pids it reported on (stopped, then the
  // failed one, once per attempt) are its local ranks 0..N-1, at the node's offset.
  std::map<std::string, std::pair<std::set<long>, size_t>> attempts;  // current, largest
  for (const auto& r : facts.reports) {
    if (!r.origin.pid || r.text.rfind("shell: ", 0) == 0) continue;
    auto& [pids, most] = attempts[r.source];
    pids.insert(r.origin.pid);
    most = std::max(most, pids.size());
    if (r.text.find("failed (exitcode") != std::string::npos) pids.clear();
  }
  for (const auto& [source, a] : attempts)
    for (int l = 0; l < static_cast<int>(a.second) && l < 4096; ++l)
      if (auto g = global_of_local(l, source, facts)) world.insert(*g);
  return world;
}

void attribute_ranks(std::vector<Event>& events, const Facts& facts) {
  for (auto& e : events)
    if (!e.origin.rank) from_origin(e, facts);
  for (auto& e : events)
    if (!e.origin.rank) ranked_copy(e, events);
  std::set<int> world = known_world(events, facts, {});
  std::set<int> silent = silent_ranks(world, events, facts);
  // The rank the others' echoes name, when it printed nothing ranked of its own, is more
  // specific than a launcher's "first observed failure" (one-second resolution).
  std::optional<int> pointed = pointed_rank(facts);
  for (auto& e : events) {
    if (e.origin.rank || e.kind != EventKind::Error || !is_primary(e.category)) continue;
    if (pointed && silent.count(*pointed))
      set_rank(e, *pointed, "the rank its peers' echoes point at");
    else if (auto r = launcher_rank(e, facts, events))
      set_rank(e, *r, "launcher's report");
  }
  for (auto& e : events)
    if (!e.origin.rank)
      if (auto local = device_local_rank(e))
        if (auto g = global_of_local(*local, e.source, facts))
          set_rank(e, *g, "the device its out-of-memory message names (one GPU per rank)");
  // Device 0 exists wherever CUDA runs at all, so on a node of two ranks a device ordinal that
  // is invalid (set_device(local_rank) on a machine with one GPU) is local rank 1's.
  const int per_node = facts.procs_per_node > 0                   ? facts.procs_per_node
                       : !facts.node_tags && facts.world_size > 0 ? facts.world_size
                                                                  : 0;
  for (auto& e : events)
    if (!e.origin.rank && e.kind == EventKind::Error && per_node == 2 &&
        e.message.find("invalid device ordinal") != std::string::npos)
      if (auto g = global_of_local(1, e.source, facts))
        set_rank(e, *g, "an invalid device ordinal on a node of two ranks: device 0 always exists");
  // A shell's bare "Killed" is its foreground command: rank 0 under launchers that run a rank in
  // the foreground (no launcher agent of its own printed anything).
  for (auto& e : events)
    if (!e.origin.rank && e.kind == EventKind::Exit && !facts.launcher_seen && !e.origin.pid &&
        e.message.find("shell: ") != std::string::npos)
      set_rank(e, 0, "the shell's foreground process");
  silent = silent_ranks(world, events, facts);
  for (auto& e : events) {
    if (e.origin.rank || e.kind != EventKind::Error || !is_primary(e.category)) continue;
    if (world.size() >= 2 && silent.size() == 1)
      set_rank(e, *silent.begin(), "the only rank with nothing else to show");
  }
  // The only rank the logs name at all shows a failure whose exception line it lacks (a tagged
  // traceback tail, its untagged head quoted apart): an unranked exception is that rank's.
  std::optional<int> only;
  bool headless = false;
  if (world.size() == 1)
    for (const auto& e : events)
      if (e.origin.rank && e.kind == EventKind::Error && is_primary(e.category)) {
        only = e.origin.rank;
        headless = headless || e.exception.empty();
      }
  for (auto& e : events)
    if (only && headless && !e.origin.rank && e.kind == EventKind::Error &&
        is_primary(e.category) && !e.exception.empty())
      set_rank(e, *only, "the only rank the logs name, whose traceback lacks its exception");
  for (auto& e : events)
    if (!e.origin.rank && e.near_rank && !e.weak && e.category != cat::launcher &&
        (e.kind == EventKind::Stack || !is_primary(e.category)))
      set_rank(e, *e.near_rank, "the prefixed line before it");
}

}  // namespace ddpbisect
