// diagnose(): the named steps of diagnose_steps.hpp, in order, plus the root, echo and
// explanation steps themselves.
#include "diagnose/diagnosis.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/diagnose_steps.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/log_reader.hpp"

namespace ddpbisect {

namespace {

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

std::string summarize(const Event& e) {
  std::string s = e.exception.empty() ? e.category : e.exception;
  std::string msg = first_line(e.message);
  if (!msg.empty()) s += ": " + msg.substr(0, 200);
  if (const Frame* f = best_frame(e)) s += " (at " + frame_display(f) + ")";
  return s;
}

// Ctrl-C: the user stopped the process; never a cause of its own.
bool interrupted(const Event& e) {
  return e.exception == "KeyboardInterrupt";
}

// 0 real primaries, 1 primary fragments, 2 echoes and infrastructure, 3 what the program
// handled or a warning said, 4 the launchers' own reports.
int tier(const Event& e) {
  if (e.category == cat::launcher) return 4;
  if (e.handled || e.weak) return 3;
  if (!is_primary(e.category) || interrupted(e)) return 2;
  // A traceback cut before its exception line says where, not what: a fragment too.
  return e.exception.empty() && (e.frames.empty() || e.message.empty()) ? 1 : 0;
}

bool same_kind(const Event& a, const Event& b) {
  return a.category == b.category && a.exception == b.exception &&
         frame_key(best_frame(a)) == frame_key(best_frame(b)) &&
         normalize_message(first_line(a.message)) == normalize_message(first_line(b.message));
}

// Earliest first: by time when both have one, by position within one file; across files without
// times, the launcher's first observed failure, then the lowest rank. One failure every rank
// hit alike is the launcher's first observed one, else the lowest rank's, wherever it printed.
bool earlier(const Event& a, const Event& b) {
  if (a.time >= 0 && b.time >= 0 && a.time != b.time) return a.time < b.time;
  if (a.origin.rank && b.origin.rank && *a.origin.rank != *b.origin.rank && same_kind(a, b)) {
    if (a.first_observed != b.first_observed) return a.first_observed;
    return *a.origin.rank < *b.origin.rank;
  }
  if (a.category == b.category && a.garbled != b.garbled) return !a.garbled;
  if (a.source == b.source && a.order != b.order) return a.order < b.order;
  if (a.first_observed != b.first_observed) return a.first_observed;
  if (a.origin.rank != b.origin.rank) {
    if (!a.origin.rank || !b.origin.rank) return a.origin.rank.has_value();
    return *a.origin.rank < *b.origin.rank;
  }
  return a.order < b.order;
}

// Our own trial: events after ddpbisect asked for stacks, on ranks it stopped, are its doing.
void mark_requested(std::vector<Event>& events, const DiagnosisInput& in) {
  if (!in.stop_time) return;
  std::map<int, bool> stopped;
  for (const auto& x : in.exits) stopped[x.rank] = !x.killed_by.empty();
  for (auto& e : events)
    if (e.origin.rank && stopped[*e.origin.rank] && e.time >= 0 && e.time + 1e-3 >= *in.stop_time)
      e.requested = true;
}

bool launcher_reported_failure(const Facts& facts, const DiagnosisInput& in) {
  for (const auto& r : facts.reports)
    if (!r.sent && !r.success && (r.signal || (r.exit_code && *r.exit_code != 0))) return true;
  for (const auto& x : in.exits)
    if (x.killed_by.empty() && (x.exit_code > 0 || x.signal)) return true;
  return false;
}

Event hang_event(const HangVerdict& v, const DiagnosisInput& in, const std::string& timeout) {
  Event h;
  h.category = cat::hang;
  h.origin.rank = v.culprit;
  if (v.culprit) h.origin.rank_from = "the wavefront (" + v.reason + ")";
  h.frames = v.frames;
  h.source = "hang";
  std::ostringstream m;
  if (v.culprit)
    m << "rank " << *v.culprit << " is not where the others are: " << v.reason;
  else
    m << "no rank made progress" << (timeout.empty() ? "" : " (" + timeout + ")");
  if (in.stop == StopReason::Hang && in.hang_threshold_s > 0)
    m << " (no progress for " << std::lround(in.hang_threshold_s) << " s)";
  if (!v.waiting.empty()) {
    m << "; rank" << (v.waiting.size() > 1 ? "s " : " ") << join(v.waiting, ", ")
      << " waited for it";
  }
  h.message = m.str();
  return h;
}

// When every failure is an echo: the rank the echoes point to, or the only rank that said
// nothing, is the cause; say so plainly.
std::optional<int> echo_target(const std::vector<Event>& candidates, const Facts& facts,
                               const std::set<int>& world) {
  std::optional<int> target = pointed_rank(facts);
  if (!target) {
    std::set<int> silent = silent_ranks(world, candidates, facts);
    if (silent.size() == 1 && world.size() >= 2) target = *silent.begin();
  }
  return target;
}

void retarget_echo(Event& root, const std::vector<Event>& candidates, const Facts& facts,
                   const std::set<int>& world) {
  const std::optional<int> target = echo_target(candidates, facts, world);
  if (!target || target == root.origin.rank) return;
  std::string seen = root.category;
  root.origin.rank = target;
  root.origin.rank_from = "the rank its peers' echoes point at";
  root.exception.clear();
  root.frames.clear();
  root.message = "rank " + std::to_string(*target) +
                 " printed no error; every other rank lost its connection to it (" + seen + ")";
}

// NCCL's result code under c10d's wrapper ("NCCL error in: ..., unhandled system error") says
// only which kind of call failed; NCCL's own WARN line before it, from the same process, says
// what failed (a shared memory segment it could not create, an IB completion error). The
// message carries both; the signature keeps the wrapper's first line.
void add_nccl_cause(Event& root, const std::vector<Event>& candidates) {
  static const RE2 generic(
      R"((?i)unhandled system error|unhandled cuda error|internal error|invalid usage|remote process exited)");
  if (root.category != cat::nccl_error || root.message.find("WARN") != std::string::npos ||
      !RE2::PartialMatch(root.message, generic))
    return;
  const Event* cause = nullptr;
  for (const auto& e : candidates)
    if (e.kind == EventKind::Error && e.source == root.source && e.order < root.order &&
        (e.category == cat::nccl_error || e.category == cat::cuda_error) &&
        e.message.find("WARN ") != std::string::npos &&
        (!e.origin.rank || !root.origin.rank || e.origin.rank == root.origin.rank) &&
        (!cause || e.order > cause->order))
      cause = &e;
  if (!cause) return;
  std::string_view words = cause->message;
  words.remove_prefix(words.find("WARN "));
  root.message += "\n" + std::string(words);
  if (root.excerpt.size() < 80) root.excerpt.push_back(cause->message);
}

// A collective mismatch every rank reports is the odd rank's: the one that ran another
// collective than the rest at that sequence number (DETAIL's fingerprints say which).
void prefer_odd_rank(Event& root, const std::vector<Event>& candidates, const Facts& facts) {
  if (root.category != cat::collective_mismatch) return;
  std::vector<int> odd = odd_ranks(facts, nullptr);
  if (odd.empty() || (root.origin.rank && *root.origin.rank == odd.front())) return;
  for (const auto& e : candidates)
    if (e.category == cat::collective_mismatch && e.origin.rank == odd.front()) {
      root = e;
      return;
    }
}

// A collective mismatch that names two ranks ("Rank 2 is running ALLREDUCE …, but Rank 3 is
// running GATHER") with no majority (fingerprints of more ranks) and no launcher's first observed
// failure does not say which rank took the other path: the printer is one of the two, not
// necessarily the odd one. Both are named; the rank stays unknown. So it stays when the message
// is cut after the printer's side.
std::vector<int> mismatch_tie(const Event& root, const Facts& facts) {
  if (root.category != cat::collective_mismatch || root.first_observed) return {};
  if (!odd_ranks(facts, nullptr).empty()) return {};
  static const RE2 running(R"(\b[Rr]ank (\d+) is running collective)");
  std::set<int> named;
  re2::StringPiece in(root.message);
  int r = 0;
  while (RE2::FindAndConsume(&in, running, &r)) named.insert(r);
  // A message cut before its ", but Rank M is running ..." names only the printer's side.
  bool cut = named.size() == 1 && root.message.find(", but ") == std::string::npos;
  if (named.size() != 2 && !cut) return {};
  if (root.origin.rank && !named.count(*root.origin.rank)) return {};
  return {named.begin(), named.end()};
}

// A job the user stopped with Ctrl-C while it waited (in a collective, a join, a select): the
// wait is what they saw, a hang of a rank the interrupt does not name. Stopped anywhere else, it
// was no failure at all.
bool interrupted_while_waiting(const Event& e) {
  static const RE2 waiting(
      R"((?i)^_?(wait\w*|join|select|poll|recv\w*|barrier|monitored_barrier|all_?reduce\w*|all_?gather\w*|broadcast\w*|reduce_scatter\w*|synchronize|acquire|_wait_for_tstate_lock|get)$)");
  size_t depth = 0;
  for (auto it = e.frames.rbegin(); it != e.frames.rend() && depth < 4; ++it, ++depth)
    if (RE2::FullMatch(it->function, waiting)) return true;
  return false;
}

// One failure several ranks hit alike (a placement error, a bad input every rank reads, a fault
// of the fabric), with no capture time or launcher report to order them: no rank is its cause,
// or the log cannot say which was first. The ranks are named; the rank stays unknown.
std::vector<int> alike_ranks(const Event& root, const std::vector<Event>& c) {
  if (!root.origin.rank || root.first_observed || root.kind != EventKind::Error || tier(root) > 1)
    return {};
  std::set<int> ranks = {*root.origin.rank};
  for (const auto& e : c) {
    if (!e.origin.rank || e.kind != EventKind::Error || tier(e) != tier(root) ||
        !same_kind(e, root))
      continue;
    if (e.time >= 0 && root.time >= 0 && e.time != root.time) return {};  // times order them
    ranks.insert(*e.origin.rank);
  }
  if (ranks.size() < 2) return {};
  return {ranks.begin(), ranks.end()};
}

// How sure the diagnosis is of its root cause, from where its rank and category came from.
std::string confidence_of(const Diagnosis& d) {
  const Event& r = d.root;
  if (!r.origin.rank || !is_primary(r.category) || r.kind == EventKind::Exit ||
      (r.category == cat::hang && r.frames.empty()))
    return "low";
  static const std::set<std::string> direct = {
      "prefix", "file name", "error file", "local rank", "process id", "message", "exit status"};
  bool whole = !r.exception.empty() || r.category == cat::hang;
  return direct.count(r.origin.rank_from) && whole ? "high" : "medium";
}

std::vector<std::string> evidence_of(const Diagnosis& d) {
  const Event& r = d.root;
  std::vector<std::string> out;
  std::string where = r.source.empty() ? "" : " in " + r.source;
  if (r.kind == EventKind::Exit)
    out.push_back("category from the exit status" + where + " (no error text of its own)");
  else if (!r.excerpt.empty())
    out.push_back("category " + r.category + " from the line" + where + ": " +
                  first_line(r.excerpt.front()).substr(0, 200));
  else
    out.push_back("category " + r.category + " from" + (where.empty() ? " the logs" : where));
  if (r.origin.rank)
    out.push_back("rank " + std::to_string(*r.origin.rank) + " from " +
                  (r.origin.rank_from.empty() ? "its line" : r.origin.rank_from));
  else
    out.push_back("rank unknown: " + d.unknown_rank_why());
  if (r.first_observed) out.push_back("the launcher named it the first observed failure");
  if (const Frame* f = best_frame(r))
    out.push_back("frame " + frame_display(f) + (f->user ? " (the innermost user frame)" : ""));
  return out;
}

}  // namespace

std::string Diagnosis::unknown_rank_why() const {
  if (root.origin.rank) return "";
  std::string why = "no prefix, file name, launcher report or echo names it";
  if (!rank_candidates.empty())
    why = candidates_alike
              ? "ranks " + join(rank_candidates, ", ") +
                    " failed alike and no time or launcher report says which came first"
          : rank_candidates.size() == 1
              ? "the error shows only rank " + std::to_string(rank_candidates[0]) +
                    "'s side of the mismatch (its message is cut) and nothing says which rank "
                    "took the other path"
              : "the error names ranks " + join(rank_candidates, " and ") +
                    " and nothing says which took the other path";
  if (last_spawned_local_rank)
    why += "; the launcher's failed command line has --local_rank=" +
           std::to_string(*last_spawned_local_rank) +
           ", the last process it started, which may not be the one that failed";
  return why;
}

bool real_primary(const Event& e) {
  return tier(e) == 0;
}

std::optional<size_t> choose_root(const std::vector<Event>& c, bool launcher_failed) {
  std::optional<size_t> best;
  for (size_t i = 0; i < c.size(); ++i) {
    if (tier(c[i]) == 3 && !launcher_failed) continue;
    if (c[i].kind == EventKind::Stack) continue;
    if (!best || tier(c[i]) < tier(c[*best]) ||
        (tier(c[i]) == tier(c[*best]) && earlier(c[i], c[*best])))
      best = i;
  }
  // An error printed twice, once bare (a logger, a wrapper's summary) and once with its
  // traceback, is one error: the copy with the frames says where it happened.
  if (best && c[*best].frames.empty() && !c[*best].exception.empty()) {
    const Event& b = c[*best];
    std::string key = normalize_message(first_line(b.message)).substr(0, 80);
    for (size_t i = 0; i < c.size(); ++i)
      if (i != *best && c[i].kind == EventKind::Error && !c[i].frames.empty() && !c[i].handled &&
          c[i].exception == b.exception && c[i].category == b.category &&
          (!b.origin.rank || !c[i].origin.rank || b.origin.rank == c[i].origin.rank) &&
          normalize_message(first_line(c[i].message)).substr(0, 80) == key)
        return i;
  }
  return best;
}

std::vector<RankSummary> summarize_ranks(const std::vector<Event>& c, const Event& root,
                                         const std::set<int>& world, const DiagnosisInput& in,
                                         const std::optional<HangVerdict>& hang) {
  std::map<int, const RankExit*> exits;
  for (const auto& x : in.exits) exits[x.rank] = &x;
  std::vector<RankSummary> out;
  for (int r : world) {
    RankSummary s;
    s.rank = r;
    const Event* first = nullptr;
    for (const auto& e : c)
      if (e.origin.rank == r && e.kind != EventKind::Stack &&
          (!first || tier(e) < tier(*first) || (tier(e) == tier(*first) && earlier(e, *first))))
        first = &e;
    if (root.origin.rank == r) first = &root;
    if (first) {
      s.category = first->category;
      s.primary = is_primary(first->category) && tier(*first) <= 1;
      s.summary = summarize(*first);
      if (root.origin.rank && r != *root.origin.rank && (!s.primary || earlier(root, *first)))
        s.echo_of = root.origin.rank;
    } else if (exits.count(r) && !exits[r]->killed_by.empty()) {
      s.summary = "stopped by ddpbisect (" + exits[r]->killed_by + ")";
      if (root.origin.rank && r != *root.origin.rank) s.echo_of = root.origin.rank;
    } else {
      s.summary = "no error";
    }
    if (hang)
      for (const auto& [rank, where] : hang->stuck)
        if (rank == r) s.stuck_in = where;
    out.push_back(s);
  }
  return out;
}

std::string explain_diagnosis(const Diagnosis& d) {
  if (!d.failed) return "No failure found in these logs.";
  const Event& root = d.root;
  std::ostringstream os;
  if (root.category == cat::hang) {
    os << "The job hung: " << root.message;
    if (const Frame* f = best_frame(root)) os << "; it was at " << frame_display(f);
    os << ".";
  } else if (!is_primary(root.category)) {
    os << "No rank shows a failure of its own; " << rank_words(root.origin) << ": "
       << summarize(root) << ".";
  } else {
    std::string who = rank_words(root.origin);
    who[0] = static_cast<char>(toupper(who[0]));
    os << who << " failed first: " << summarize(root) << ".";
  }
  std::vector<std::string> echoes;
  for (const auto& s : d.ranks)
    if (s.echo_of && !s.category.empty() && !s.primary)
      echoes.push_back("rank " + std::to_string(s.rank) + " (" + s.category + ")");
  if (!echoes.empty())
    os << " " << join(echoes, ", ") << (echoes.size() == 1 ? " is an echo" : " are echoes")
       << " of that failure, not a cause.";
  return os.str();
}

Diagnosis diagnose(const DiagnosisInput& in) {
  Evidence ev = read_inputs(in);
  for (const auto& x : in.exits)  // our observer counted each rank's heartbeats
    if (x.last_step >= 0) ev.facts.heartbeat_step[x.rank] = x.last_step;
  attribute_ranks(ev.events, ev.facts);
  mark_requested(ev.events, in);
  std::vector<Event> stacks;
  for (const auto& e : ev.events)
    if (e.kind == EventKind::Stack) stacks.push_back(e);
  std::vector<Event> c = find_candidates(std::move(ev.events), ev.facts, in);
  attribute_ranks(c, ev.facts);
  fold_exits(c, ev.facts);
  std::vector<Event> all = c;
  all.insert(all.end(), stacks.begin(), stacks.end());
  std::set<int> world = known_world(all, ev.facts, in);

  std::optional<HangVerdict> hang;
  if (std::none_of(c.begin(), c.end(), real_primary)) {
    hang = attribute_hang(c, stacks, ev.facts, world, in.stop == StopReason::Hang);
    // Ranks that timed out in a collective with no failure of anyone's own in the logs: a hang,
    // whether or not the wavefront can name the rank they waited for (unknown when it cannot).
    auto timeout = std::find_if(c.begin(), c.end(), [](const Event& e) {
      return e.category == cat::comm_timeout && !e.handled && !e.weak;
    });
    std::string quoted = timeout == c.end() ? "" : first_line(timeout->message).substr(0, 300);
    // Unless the timeouts point at one rank (the echoes' target: named by them, or the only
    // rank that said nothing), as a straggler's peers' do: then they are its comm_timeout.
    const bool pointed = echo_target(c, ev.facts, world).has_value();
    if (hang && (hang->culprit || in.stop == StopReason::Hang || (timeout != c.end() && !pointed)))
      c.push_back(hang_event(*hang, in, quoted));
  }
  if (in.stop == StopReason::Timeout && std::none_of(c.begin(), c.end(), real_primary)) {
    Event t;
    t.category = cat::trial_timeout;
    t.message = "the trial ran past its timeout";
    t.source = "timeout";
    c.push_back(t);
  }
  Diagnosis d;
  bool launcher_failed = launcher_reported_failure(ev.facts, in);
  std::optional<size_t> root = choose_root(c, launcher_failed);
  if (!root) {
    d.explanation = explain_diagnosis(d);
    return d;
  }
  if (interrupted(c[*root]) && in.stop == StopReason::None) {
    if (!interrupted_while_waiting(c[*root])) {
      d.explanation = "Stopped by the user (KeyboardInterrupt) while it was working: no failure.";
      return d;
    }
    Event& k = c[*root];
    const Frame* at = k.frames.empty() ? nullptr : &k.frames.back();
    k.category = cat::hang;
    k.exception.clear();
    k.origin.rank.reset();
    k.origin.rank_from.clear();
    k.message = "stopped by the user (KeyboardInterrupt) while waiting" +
                (at ? " in " + at->function : std::string()) +
                ": the job was not making progress; which rank held it up is not in the log";
  }
  d.failed = true;
  d.root = c[*root];
  // The bare copy's rank, when the copy with frames was printed without one.
  if (!d.root.origin.rank)
    for (const auto& e : c)
      if (e.origin.rank && e.kind == EventKind::Error && e.exception == d.root.exception &&
          e.category == d.root.category && e.frames.empty() && !e.handled &&
          first_line(e.message) == first_line(d.root.message)) {
        d.root.origin = e.origin;
        break;
      }
  if (!is_primary(d.root.category)) retarget_echo(d.root, c, ev.facts, world);
  // An echo that is the root cause after all (no rank's own failure, none its words point at)
  // is the error it quotes: NCCL's own error text under a peer's "remote process exited".
  if (d.root.category == cat::peer_closed && !d.root.exception.empty())
    if (std::string quoted = quoted_primary(d.root.message); !quoted.empty())
      d.root.category = quoted;
  prefer_odd_rank(d.root, c, ev.facts);
  add_nccl_cause(d.root, c);
  d.rank_candidates = mismatch_tie(d.root, ev.facts);
  if (d.rank_candidates.empty()) {
    d.rank_candidates = alike_ranks(d.root, c);
    d.candidates_alike = !d.rank_candidates.empty();
  }
  if (!d.rank_candidates.empty() && d.root.origin.rank) {
    d.root.origin.rank.reset();
    d.root.origin.rank_from.clear();
  }
  if (!d.root.origin.rank)
    for (const auto& r : ev.facts.reports)
      if (r.ambiguous && r.last_spawned) d.last_spawned_local_rank = r.last_spawned;
  d.signature.category = d.root.category;
  d.signature.exception = d.root.exception;
  d.signature.frame = frame_key(best_frame(d.root));
  d.signature.message = normalize_message(first_line(d.root.message));
  // The rank, or the ranks it could be (a failure they hit alike, a mismatch's two sides).
  d.signature.ranks =
      d.root.origin.rank ? std::vector<int>{*d.root.origin.rank} : d.rank_candidates;
  if (hang)
    for (const auto& [r, where] : hang->stuck)
      if (!where.empty() && std::find(d.signature.stuck.begin(), d.signature.stuck.end(), where) ==
                                d.signature.stuck.end())
        d.signature.stuck.push_back(where);
  std::sort(d.signature.stuck.begin(), d.signature.stuck.end());
  d.ranks =
      summarize_ranks(c, d.root, world, in, d.root.category == cat::hang ? hang : std::nullopt);
  d.explanation = explain_diagnosis(d);
  d.confidence = confidence_of(d);
  d.evidence = evidence_of(d);
  return d;
}

}  // namespace ddpbisect
