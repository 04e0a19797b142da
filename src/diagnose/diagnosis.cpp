#include "diagnose/diagnosis.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/signals.hpp"
#include "common/text.hpp"
#include "diagnose/log_reader.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

namespace {

std::string frame_key(const Frame* f) {
  if (!f) return "";
  return fs::path(f->file).filename().string() + ":" + f->function;
}

std::string frame_display(const Frame* f) {
  if (!f) return "";
  return f->file + ":" + std::to_string(f->line) + " in " + f->function;
}

const Frame* best_frame(const Event& e) {
  if (const Frame* f = e.user_frame()) return f;
  return e.frames.empty() ? nullptr : &e.frames.back();
}

// Earliest first: by capture time when both have one, else by rank and position.
bool earlier(const Event& a, const Event& b) {
  if (a.time >= 0 && b.time >= 0 && a.time != b.time) return a.time < b.time;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.order < b.order;
}

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

}  // namespace

json Signature::to_json() const {
  return {{"category", category}, {"exception", exception}, {"frame", frame},
          {"message", message},   {"ranks", ranks},         {"stuck", stuck}};
}

Signature Signature::from_json(const json& j) {
  Signature s;
  s.category = j.value("category", "");
  s.exception = j.value("exception", "");
  s.frame = j.value("frame", "");
  s.message = j.value("message", "");
  s.ranks = j.value("ranks", std::vector<int>{});
  s.stuck = j.value("stuck", std::vector<std::string>{});
  return s;
}

std::string Signature::to_string() const {
  std::string s = category;
  if (!exception.empty()) s += " " + exception;
  if (!frame.empty()) s += " at " + frame;
  if (!stuck.empty()) s += " (stuck in " + join(stuck, ", ") + ")";
  return s;
}

bool same_failure(const Signature& target, const Signature& cand, const std::string& level,
                  const std::string& regex, const std::string& candidate_text) {
  if (target.category != cand.category) return false;
  if (!regex.empty()) {
    try {
      if (!std::regex_search(candidate_text + "\n" + cand.message, std::regex(regex))) return false;
    } catch (const std::regex_error&) {
      return false;
    }
  }
  if (level == "loose") return true;
  if (target.exception != cand.exception || target.frame != cand.frame) return false;
  if (target.category == "hang" && target.stuck != cand.stuck) return false;
  if (level == "strict") return target.message == cand.message;
  return true;
}

bool matches_pinned(const std::string& category, const std::string& exception,
                    const std::string& frame, const Signature& c) {
  if (category.empty()) return true;
  return c.category == category && (exception.empty() || c.exception == exception) &&
         (frame.empty() || c.frame == frame);
}

json Diagnosis::to_json() const {
  json ranks_json = json::array();
  for (const auto& r : ranks) {
    json j = {
        {"rank", r.rank}, {"category", r.category}, {"primary", r.primary}, {"summary", r.summary}};
    j["echo_of"] = r.echo_of ? json(*r.echo_of) : json(nullptr);
    if (!r.stuck_in.empty()) j["stuck_in"] = r.stuck_in;
    ranks_json.push_back(j);
  }
  json root_json = nullptr;
  if (failed) {
    const Frame* f = best_frame(root);
    json frames = json::array();
    for (const auto& fr : root.frames)
      frames.push_back(
          {{"file", fr.file}, {"line", fr.line}, {"function", fr.function}, {"user", fr.user}});
    root_json = {{"rank", root.rank},
                 {"category", root.category},
                 {"primary", is_primary(root.category)},
                 {"exception", root.exception},
                 {"message", root.message},
                 {"frame", f ? json(frame_display(f)) : json(nullptr)},
                 {"file", f ? json(f->file) : json(nullptr)},
                 {"line", f ? json(f->line) : json(nullptr)},
                 {"function", f ? json(f->function) : json(nullptr)},
                 {"frames", frames},
                 {"excerpt", root.excerpt},
                 {"source", root.source},
                 {"time", root.time >= 0 ? json(root.time) : json(nullptr)}};
  }
  return {{"failed", failed},
          {"root_cause", root_json},
          {"signature", failed ? signature.to_json() : json(nullptr)},
          {"ranks", ranks_json},
          {"explanation", explanation}};
}

Diagnosis diagnose(const DiagnosisInput& in) {
  std::map<int, std::vector<Event>> by_rank;
  read_logs(in, by_rank);

  // Events after ddpbisect asked for stacks, on ranks it stopped, are its own doing.
  std::map<int, const RankExit*> exits;
  for (const auto& x : in.exits) exits[x.rank] = &x;
  auto stopped = [&](int rank) {
    auto it = exits.find(rank);
    return it != exits.end() && !it->second->killed_by.empty();
  };
  for (auto& [rank, events] : by_rank)
    for (auto& e : events)
      if (in.stop_time && stopped(rank) && e.time >= 0 && e.time + 1e-3 >= *in.stop_time)
        e.requested = true;

  // Candidates: errors, plus an exit event for each failed rank that printed no error.
  std::vector<Event> candidates;
  std::optional<int> banner_rank;
  static const std::map<std::string, std::string> kCrash = {{"Segmentation fault", "SIGSEGV"},
                                                            {"Aborted", "SIGABRT"},
                                                            {"Bus error", "SIGBUS"},
                                                            {"Floating point exception", "SIGFPE"},
                                                            {"Illegal instruction", "SIGILL"}};
  for (auto& [rank, events] : by_rank)
    for (auto& e : events) {
      if (e.requested) continue;
      if (e.kind == EventKind::Error) candidates.push_back(e);
      // A crash dump nobody asked for is the failure itself, exit status or not.
      if (e.kind == EventKind::Stack && e.message.rfind("Fatal", 0) == 0) {
        Event c = e;
        c.kind = EventKind::Error;
        c.category = "signal";
        for (const auto& [text, sig] : kCrash)
          if (e.message.find(text) != std::string::npos) c.exception = sig;
        std::string num;
        if (RE2::PartialMatch(e.message, R"(received signal (\d+))", &num))
          c.exception = signal_name(std::stoi(num));
        if (c.exception.empty()) c.exception = "crash";
        c.message = first_line(e.message);
        candidates.push_back(c);
      }
      if (e.kind == EventKind::Exit) {
        if (!banner_rank) banner_rank = e.rank;
        candidates.push_back(e);
      }
    }
  for (const auto& x : in.exits) {
    if (!x.killed_by.empty() || (x.exit_code <= 0 && x.signal == 0)) continue;
    // A rank that printed any error (even an echo) is described by it, not by its exit status.
    bool has_error = std::any_of(candidates.begin(), candidates.end(), [&](const Event& e) {
      return e.rank == x.rank && e.kind == EventKind::Error;
    });
    if (has_error) continue;
    Event e;
    e.kind = EventKind::Exit;
    e.rank = x.rank;
    e.time = x.end_time;
    e.order = 1LL << 60;
    if (x.signal) {
      e.category = "signal";
      e.exception = signal_name(x.signal);
      e.message = "killed by " + e.exception;
      // A crash dump (faulthandler, the worker) gives the frames.
      for (const auto& d : by_rank[x.rank])
        if (d.kind == EventKind::Stack && !d.requested) {
          e.frames = d.frames;
          e.excerpt = d.excerpt;
          e.message += " (" + first_line(d.message) + ")";
        }
    } else {
      e.category = "exit_nonzero";
      e.exception = "exit " + std::to_string(x.exit_code);
      e.message =
          "exited with code " + std::to_string(x.exit_code) + " without an error we could read";
    }
    e.source = "exit status";
    candidates.push_back(e);
  }

  // Pointers into `candidates` are taken below; the hang and timeout events are appended later.
  candidates.reserve(candidates.size() + 2);
  Diagnosis d;
  std::vector<const Event*> primaries, secondaries, launcher;
  for (const auto& e : candidates) {
    if (e.source.find("launcher banner") != std::string::npos) continue;
    if (e.category == "launcher")
      launcher.push_back(&e);
    else if (is_primary(e.category))
      primaries.push_back(&e);
    else
      secondaries.push_back(&e);
  }
  auto pick = [&](std::vector<const Event*>& v) -> const Event* {
    if (v.empty()) return nullptr;
    bool any_time = std::any_of(v.begin(), v.end(), [](const Event* e) { return e->time >= 0; });
    // Without capture times, the launcher's "first observed failure" names the rank.
    if (!any_time && banner_rank)
      for (const Event* e : v)
        if (e->rank == *banner_rank) return e;
    return *std::min_element(v.begin(), v.end(),
                             [](const Event* a, const Event* b) { return earlier(*a, *b); });
  };
  const Event* root = pick(primaries);
  std::vector<const Event*> banners;
  for (const auto& e : candidates)
    if (e.source.find("launcher banner") != std::string::npos) banners.push_back(&e);

  if (!root && in.stop_kind == "hang") {
    Event h;
    h.category = "hang";
    h.exception = "";
    std::vector<std::pair<int, std::string>> stuck;
    for (const auto& x : in.exits) {
      if (x.killed_by != "hang") continue;
      const Event* dump = nullptr;
      for (const auto& e : by_rank[x.rank])
        if (e.kind == EventKind::Stack && e.requested) dump = &e;
      std::string where = dump ? frame_key(best_frame(*dump)) : "";
      stuck.push_back({x.rank, where});
    }
    // The rank that fell behind (the fewest steps); among equals, one that is not waiting in a
    // collective for the others, then one in a frame of its own.
    std::map<std::string, int> frame_count;
    for (auto& [r, f] : stuck) frame_count[f]++;
    auto in_collective = [&](int r) {
      static const RE2 re(
          R"((?i)all_?reduce|barrier|broadcast|all_?gather|reduce_scatter|\bwait\b|recv|send)");
      for (const auto& e : by_rank[r])
        if (e.kind == EventKind::Stack && e.requested && !e.frames.empty())
          return RE2::PartialMatch(e.frames.back().function, re);
      return false;
    };
    int best = -1;
    std::tuple<long long, int, int, int> best_key{LLONG_MAX, INT_MAX, INT_MAX, INT_MAX};
    for (auto& [r, f] : stuck) {
      long long step = exits.count(r) ? exits[r]->last_step : -1;
      std::tuple<long long, int, int, int> key{step, in_collective(r) ? 1 : 0, frame_count[f], r};
      if (key < best_key) best_key = key, best = r;
    }
    h.rank = best;
    std::set<std::string> frames;
    std::string where;
    for (auto& [r, f] : stuck) {
      if (!f.empty()) frames.insert(f);
      where += (where.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " in " +
               (f.empty() ? "?" : f);
    }
    h.message = "no rank made progress for " +
                std::to_string(static_cast<int>(std::lround(in.hang_threshold_s))) + " s: " + where;
    for (const auto& e : by_rank[best])
      if (e.kind == EventKind::Stack && e.requested) h.frames = e.frames, h.excerpt = e.excerpt;
    h.source = "hang";
    candidates.push_back(h);
    root = &candidates.back();
    d.signature.stuck.assign(frames.begin(), frames.end());
    for (auto& [r, f] : stuck) d.signature.ranks.push_back(r);
  }
  if (!root && in.stop_kind == "timeout") {
    Event t;
    t.category = "trial_timeout";
    t.message = "the trial ran past its timeout";
    t.source = "timeout";
    candidates.push_back(t);
    root = &candidates.back();
  }
  if (!root) root = pick(secondaries);
  if (!root && !banners.empty()) root = banners.front();  // the launcher's "first observed failure"
  if (!root) root = pick(launcher);

  if (root) {
    d.failed = true;
    d.root = *root;
    d.signature.category = root->category;
    d.signature.exception = root->exception;
    // A hang is identified by the set of frames ranks were stuck in, not by one rank's frame.
    d.signature.frame = root->category == "hang" ? "" : frame_key(best_frame(*root));
    d.signature.message = normalize_message(first_line(root->message));
    if (d.signature.ranks.empty()) d.signature.ranks = {root->rank};
  }

  // Per-rank summaries: what each rank saw, and whether it is an echo of the root cause.
  std::set<int> ranks;
  for (const auto& x : in.exits) ranks.insert(x.rank);
  for (const auto& [r, ev] : by_rank)
    if (r >= 0) ranks.insert(r);
  for (int r : ranks) {
    RankSummary s;
    s.rank = r;
    const Event* first = nullptr;
    for (const auto& e : candidates)
      if (e.rank == r && e.source.find("launcher banner") == std::string::npos &&
          (!first || (is_primary(e.category) && !is_primary(first->category)) ||
           (is_primary(e.category) == is_primary(first->category) && earlier(e, *first))))
        first = &e;
    if (d.failed && root->rank == r) first = root;
    if (first) {
      s.category = first->category;
      s.primary = is_primary(first->category);
      s.summary = summarize(*first);
      if (d.failed && r != root->rank && (!s.primary || earlier(*root, *first)))
        s.echo_of = root->rank;
    } else if (exits.count(r) && !exits[r]->killed_by.empty()) {
      s.summary = "stopped by ddpbisect (" + exits[r]->killed_by + ")";
      if (d.failed && r != root->rank) s.echo_of = root->rank;
    } else {
      s.summary = "no error";
    }
    if (in.stop_kind == "hang")
      for (const auto& e : by_rank[r])
        if (e.kind == EventKind::Stack && e.requested) s.stuck_in = frame_display(best_frame(e));
    d.ranks.push_back(s);
  }

  if (d.failed) {
    std::ostringstream os;
    if (root->category == "hang") {
      os << "The job hung: " << root->message << ".";
    } else {
      os << "Rank " << root->rank << " failed first: " << summarize(*root) << ".";
    }
    std::vector<std::string> echoes;
    for (const auto& s : d.ranks)
      if (s.echo_of && !s.category.empty() && !s.primary)
        echoes.push_back("rank " + std::to_string(s.rank) + " (" + s.category + ")");
    if (!echoes.empty())
      os << " " << join(echoes, ", ") << (echoes.size() == 1 ? " is an echo" : " are echoes")
         << " of that failure, not a cause.";
    d.explanation = os.str();
  } else {
    d.explanation = "No failure found in these logs.";
  }
  return d;
}

}  // namespace ddpbisect
