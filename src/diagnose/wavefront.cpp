// Step "hang" of diagnose (diagnose_steps.hpp): the wavefront. In a hang every rank waits for
// the one that is not where the others are. The evidence, strongest first: two ops at one
// sequence number (watchdog, Flight Recorder, DETAIL fingerprints, the agent's trace); a rank
// behind the others by its own counters (last enqueued work, Flight Recorder, agent, heartbeat
// `seq`); a rank whose stack is outside any collective, or in another one, than the rest
// (faulthandler, py-spy, our dumps, NCCL's stack of the failed collective, the traceback of its
// timeout); the ranks whose watchdog never fired; the rank the others' echoes name.
#include <re2/re2.h>

#include <algorithm>
#include <climits>
#include <map>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/diagnose_steps.hpp"
#include "diagnose/frames.hpp"

namespace ddpbisect {

namespace {

// The collective a stack is in: the innermost collective call, as an op name; "" when none.
std::string stack_op(const std::vector<Frame>& frames) {
  static const RE2 collective(
      R"(^_?(all_?reduce\w*|all_?gather\w*|broadcast\w*|reduce_?scatter\w*|reduce|all_?to_?all\w*|barrier|monitored_barrier|gather\w*|scatter\w*|send|recv|isend|irecv|batch_isend_irecv|allreduce|wait)$)");
  int depth = 0;
  for (auto it = frames.rbegin(); it != frames.rend() && depth < 8; ++it, ++depth) {
    // torch.distributed's own frames, DeepSpeed's comm module, our worker's comm.cpp.
    bool torch = it->file.find("torch/distributed") != std::string::npos ||
                 it->file.find("c10d") != std::string::npos ||
                 it->file.find("comm") != std::string::npos;
    if (!torch || !RE2::FullMatch(it->function, collective)) continue;
    if (it->function == "wait") {
      auto outer = std::next(it);
      if (outer != frames.rend() && RE2::FullMatch(outer->function, collective))
        return normalize_op(outer->function);
      return "WAIT";
    }
    return normalize_op(it->function);
  }
  // DDP's and FSDP's own collectives (the bucket rebuild's broadcast, buffer syncs, FSDP's
  // all-gathers) run under their own functions: stuck in their code is stuck in a collective.
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (it->file.find("ddpbisect_agent") != std::string::npos) continue;
    if (it->file.find("torch/nn/parallel/distributed.py") != std::string::npos) return "DDP";
    if (it->file.find("torch/distributed/fsdp") != std::string::npos ||
        it->file.find("torch/distributed/_composable") != std::string::npos)
      return "FSDP";
    break;
  }
  depth = 0;
  for (auto it = frames.rbegin(); it != frames.rend() && depth < 12; ++it, ++depth) {
    if (it->file.find("torch/autograd") != std::string::npos &&
        it->function.find("backward") != std::string::npos)
      return "BACKWARD";  // DDP's gradient all-reduce runs inside the backward pass
    // A function of the program's own named for the all-reduce it waits in (our worker's
    // backward_and_allreduce, a trainer's sync_grads_allreduce).
    if (it->function.find("allreduce") != std::string::npos ||
        it->function.find("all_reduce") != std::string::npos)
      return "ALLREDUCE";
  }
  return "";
}

struct Stack {
  std::vector<Frame> frames;
  std::string kind;  // dump, collective, traceback
  std::string op() const { return stack_op(frames); }
  std::string where() const { return frame_key(frames.empty() ? nullptr : user_or_last()); }
  const Frame* user_or_last() const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      if (it->user) return &*it;
    return frames.empty() ? nullptr : &frames.back();
  }
};

// Every rank's best stack: a dump (ours, faulthandler, py-spy) before NCCL's stack of the failed
// collective before the traceback of its own timeout.
std::map<int, Stack> rank_stacks(const std::vector<Event>& candidates,
                                 const std::vector<Event>& stacks) {
  std::map<int, Stack> out;
  auto offer = [&](int rank, const std::vector<Frame>& frames, const std::string& kind,
                   int rank_of_kind) {
    static const std::map<std::string, int> order = {
        {"dump", 0}, {"collective", 1}, {"traceback", 2}};
    auto it = out.find(rank);
    if (frames.empty()) return;
    if (it != out.end() && order.at(it->second.kind) <= rank_of_kind) return;
    out[rank] = {frames, kind};
  };
  for (const auto& s : stacks)
    if (s.origin.rank && s.kind == EventKind::Stack)
      offer(*s.origin.rank, s.frames, s.thread == "collective" ? "collective" : "dump",
            s.thread == "collective" ? 1 : 0);
  for (const auto& e : candidates)
    if (e.origin.rank && e.category == cat::comm_timeout)
      offer(*e.origin.rank, e.frames, "traceback", 2);
  return out;
}

// The ranks in the smallest group when the members of `groups` disagree; empty on a tie.
std::vector<int> minority(const std::map<std::string, std::vector<int>>& groups) {
  if (groups.size() < 2) return {};
  const std::vector<int>* best = nullptr;
  bool tie = false;
  for (const auto& [key, ranks] : groups) {
    if (!best || ranks.size() < best->size()) {
      best = &ranks;
      tie = false;
    } else if (ranks.size() == best->size()) {
      tie = true;
    }
  }
  if (tie) return {};
  return *best;
}

}  // namespace

// At one sequence number, groups of ranks in different calls that tie in size (one rank in a
// barrier, one in DDP's all-reduce): the group whose call no rank of the other groups ever made
// (in its agent trace) is the odd one; the others are on the path every rank takes.
std::vector<int> never_joined(const std::map<std::string, std::vector<int>>& ops,
                              const std::map<int, std::string>& call_of, const Facts& facts) {
  std::vector<int> odd;
  int groups = 0;
  for (const auto& [op, ranks] : ops) {
    bool theirs_only = true;
    for (int r : ranks) {
      auto c = call_of.find(r);
      if (c == call_of.end()) return {};
      for (const auto& [other_op, others] : ops) {
        if (other_op == op) continue;
        for (int o : others) {
          auto it = facts.calls.find(o);
          if (it == facts.calls.end()) return {};  // no history to compare with
          if (it->second.count(c->second)) theirs_only = false;
        }
      }
    }
    if (theirs_only) {
      ++groups;
      odd = ranks;
    }
  }
  return groups == 1 ? odd : std::vector<int>{};
}

std::vector<int> odd_ranks(const Facts& facts, std::string* why) {
  std::map<long long, std::map<std::string, std::vector<int>>> by_seq;
  std::map<long long, std::map<int, std::string>> call_at;  // seq -> rank -> "OP@site"
  for (const auto& p : facts.positions) {
    if (p.seq < 0 || p.op.empty() || p.group != 0) continue;
    auto& ranks = by_seq[p.seq][p.op];
    if (std::find(ranks.begin(), ranks.end(), p.rank) == ranks.end()) ranks.push_back(p.rank);
    if (p.kind == "agent" && !p.frames.empty())
      call_at[p.seq][p.rank] =
          p.op + "@" + p.frames.front().file + ":" + std::to_string(p.frames.front().line);
  }
  for (const auto& [seq, ops] : by_seq) {
    std::vector<int> odd = minority(ops);
    bool rare = false;
    if (odd.empty() && ops.size() > 1) {
      odd = never_joined(ops, call_at[seq], facts);
      rare = !odd.empty();
    }
    if (odd.empty()) continue;
    std::sort(odd.begin(), odd.end());
    if (why) {
      std::vector<std::string> parts;
      for (const auto& [op, ranks] : ops) {
        std::vector<int> sorted = ranks;
        std::sort(sorted.begin(), sorted.end());
        parts.push_back(op + " on rank" + (sorted.size() > 1 ? "s " : " ") + join(sorted, ", "));
      }
      *why = "collective " + std::to_string(seq) + " is " + join(parts, " but ");
      if (rare) {
        const std::string& call = call_at[seq][odd.front()];
        *why += "; no other rank ever called " + call.substr(0, call.find('@')) + " at " +
                call.substr(call.find('@') + 1);
      }
    }
    return odd;
  }
  return {};
}

}  // namespace ddpbisect

namespace ddpbisect {

namespace {

// Ranks behind the others by a counter of their own kind (c10d's work numbers, the Flight
// Recorder's sequence ids, the agent's, our heartbeats' `seq`).
std::vector<int> behind(const Facts& facts, std::string* why) {
  std::map<std::string, std::map<int, long long>> reached;
  for (const auto& p : facts.positions) {
    if (p.group != 0 || p.kind == "detail" || p.kind == "stack") continue;
    auto reach = [&](const std::string& kind, long long n) {
      if (n < 0) return;
      auto [it, fresh] = reached[kind].emplace(p.rank, n);
      if (!fresh) it->second = std::max(it->second, n);
    };
    // c10d's numbers are compared like with like: the work a watchdog timed out in is only a
    // lower bound on what that rank enqueued, so a rank whose "last enqueued" line is missing
    // (cut from the excerpt) is not behind the ranks whose line is there.
    if (p.kind == "watchdog" || p.kind == "enqueued") {
      reach("c10d work (timed out in)", p.seq);
      reach("c10d work (last enqueued)", p.last_enqueued);
      continue;
    }
    reach(p.kind, std::max(p.last_enqueued, p.seq));
  }
  for (const auto& [rank, seq] : facts.heartbeat_seq) reached["heartbeat seq"][rank] = seq;
  // Finished steps: a rank still inside a step the others finished is the one holding them up
  // (it entered something they did not).
  for (const auto& [rank, step] : facts.heartbeat_step) reached["steps"][rank] = step;
  for (const auto& [kind, ranks] : reached) {
    if (ranks.size() < 2) continue;
    long long lo = LLONG_MAX, hi = LLONG_MIN;
    for (const auto& [r, n] : ranks) lo = std::min(lo, n), hi = std::max(hi, n);
    if (lo == hi) continue;
    std::vector<int> out;
    for (const auto& [r, n] : ranks)
      if (n == lo) out.push_back(r);
    if (out.size() * 2 > ranks.size()) continue;  // most are behind: they wait, the rest ran on
    if (why)
      *why = "by " + kind + " it reached " + std::to_string(lo) + " while the others reached " +
             std::to_string(hi);
    return out;
  }
  return {};
}

// Ranks whose stack differs from the rest: outside any collective, or in another one. A rank
// its agent saw inside a traced call (DDP's C++ all-reduces among them) is in a collective
// whatever its stack reads.
std::vector<int> odd_stacks(const std::map<int, Stack>& stacks, const std::set<int>& waiting,
                            const Facts& facts, std::string* why) {
  std::set<int> traced_waiting;
  for (const auto& p : facts.positions)
    if (p.kind == "agent" && p.waiting) traced_waiting.insert(p.rank);
  std::map<std::string, std::vector<int>> groups;
  std::vector<int> outside;
  for (const auto& [r, s] : stacks) {
    std::string op = s.op();
    if (op.empty() && traced_waiting.count(r)) op = "TRACED";
    if (op.empty()) outside.push_back(r);
    groups[op.empty() ? "outside any collective" : op + " at " + s.where()].push_back(r);
  }
  // A rank outside any collective while the others wait (stacks or timeouts say so).
  size_t others = std::count_if(waiting.begin(), waiting.end(), [&](int r) {
    return std::find(outside.begin(), outside.end(), r) == outside.end();
  });
  if (!outside.empty() && (outside.size() < stacks.size() || others > 0) &&
      outside.size() <= std::max<size_t>(others, stacks.size() - outside.size())) {
    if (why) *why = "its stack is outside any collective while the others wait in one";
    return outside;
  }
  std::vector<int> odd = minority(groups);
  if (!odd.empty() && why) *why = "its stack is in another collective than the others'";
  return odd;
}

std::vector<Frame> waiting_frames(const Facts& facts, int rank) {
  std::vector<Frame> frames;
  for (const auto& p : facts.positions)
    if (p.rank == rank && !p.frames.empty() && (p.waiting || frames.empty())) frames = p.frames;
  return frames;
}

}  // namespace

std::optional<HangVerdict> attribute_hang(const std::vector<Event>& candidates,
                                          const std::vector<Event>& stacks, const Facts& facts,
                                          const std::set<int>& world, bool declared) {
  std::set<int> waiting;
  for (const auto& e : candidates)
    if (e.category == cat::comm_timeout && e.origin.rank) waiting.insert(*e.origin.rank);
  for (const auto& p : facts.positions)
    if (p.timed_out) waiting.insert(p.rank);
  bool echoes = std::any_of(candidates.begin(), candidates.end(),
                            [](const Event& e) { return e.category == cat::comm_timeout; });
  std::map<int, Stack> st = rank_stacks(candidates, stacks);
  // Stacks someone dumped from live ranks (py-spy, faulthandler's timer), some of them waiting
  // in a collective: what one takes of a job that hangs.
  bool dumped = std::any_of(st.begin(), st.end(), [](const auto& s) {
    return s.second.kind != "traceback" && !s.second.op().empty();
  });
  if (!declared && waiting.empty() && !echoes && !dumped) return std::nullopt;

  HangVerdict v;
  std::string why;
  std::vector<int> culprits = odd_ranks(facts, &why);
  if (culprits.empty()) culprits = behind(facts, &why);
  if (culprits.empty()) culprits = odd_stacks(st, waiting, facts, &why);
  if (culprits.empty() && !waiting.empty()) {
    std::vector<int> silent;
    // A rank the excerpt ends inside the line of may have been saying that it timed out too.
    for (int r : world)
      if (!waiting.count(r) && !facts.cut_ranks.count(r)) silent.push_back(r);
    if (!silent.empty() && silent.size() < waiting.size()) {
      culprits = silent;
      why = "its watchdog never fired while ranks " +
            join(std::vector<int>(waiting.begin(), waiting.end()), ", ") + " timed out waiting";
    }
  }
  if (culprits.empty()) {
    if (auto p = pointed_rank(facts)) {
      culprits = {*p};
      why = "the other ranks' errors point at it";
      for (const auto& ptr : facts.pointers)
        if (ptr.to == *p && !ptr.local) {
          why += " (\"" + ptr.text + "\")";
          break;
        }
    }
  }
  if (!culprits.empty()) {
    v.culprit = culprits.front();
    v.reason = why;
    auto it = st.find(*v.culprit);
    v.frames = it != st.end() ? it->second.frames : waiting_frames(facts, *v.culprit);
  }
  for (int r : waiting)
    if (r != v.culprit) v.waiting.push_back(r);
  for (const auto& [r, s] : st) v.stuck.push_back({r, s.where()});
  return v;
}

}  // namespace ddpbisect
