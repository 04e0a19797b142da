// Step "candidates" of diagnose (diagnose_steps.hpp): what could be the root cause.
#include <re2/re2.h>

#include <algorithm>
#include <map>

#include "common/category_names.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/diagnose_steps.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/match.hpp"

namespace ddpbisect {

namespace {

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// A crash dump nobody asked for (faulthandler's "Fatal Python error", our worker's fatal
// signal) is the failure itself, exit status or not.
std::optional<Event> crash_from_dump(const Event& e) {
  if (e.kind != EventKind::Stack || e.requested) return std::nullopt;
  if (!starts_with(e.message, "Fatal")) return std::nullopt;
  static const std::vector<std::pair<std::string, std::string>> kCrash = {
      {"Segmentation fault", "SIGSEGV"},
      {"Aborted", "SIGABRT"},
      {"Bus error", "SIGBUS"},
      {"Floating point exception", "SIGFPE"},
      {"Illegal instruction", "SIGILL"}};
  Event c = e;
  c.kind = EventKind::Error;
  c.category = cat::signal;
  for (const auto& [text, sig] : kCrash)
    if (e.message.find(text) != std::string::npos) c.exception = sig;
  int num = 0;
  if (RE2::PartialMatch(e.message, R"(received signal (\d+))", &num))
    c.exception = signal_name(num);
  if (c.exception.empty()) c.exception = "crash";
  c.message = first_line(e.message);
  return c;
}

Event exit_event(const Origin& origin, int exit_code, int signal, const std::string& text) {
  Event e;
  e.kind = EventKind::Exit;
  e.origin = origin;
  e.order = 1LL << 60;
  if (signal) {
    e.category = cat::signal;
    e.exception = signal_name(signal);
    e.message = "killed by " + e.exception + (text.empty() ? "" : " (" + text + ")");
  } else {
    e.category = cat::exit_nonzero;
    e.exception = "exit " + std::to_string(exit_code);
    e.message = "exited with code " + std::to_string(exit_code) +
                " without an error we could read" + (text.empty() ? "" : " (" + text + ")");
  }
  return e;
}

// The exits our observer saw (trial folders) for ranks that did not stop on our request.
void observed_exits(const DiagnosisInput& in, std::vector<Event>& out) {
  for (const auto& x : in.exits) {
    if (!x.killed_by.empty() || (x.exit_code <= 0 && x.signal == 0)) continue;
    Origin o;
    o.rank = x.rank;
    o.rank_from = "exit status";
    Event e = exit_event(o, x.exit_code, x.signal, "");
    e.time = x.end_time;
    e.source = "exit status";
    out.push_back(std::move(e));
  }
}

// One exit per process a launcher reported failed (not the ones it stopped itself).
void reported_exits(const Facts& facts, std::vector<Event>& out) {
  for (const auto& r : facts.reports) {
    if (r.sent || r.success || (!r.signal && (!r.exit_code || *r.exit_code == 0))) continue;
    Origin o = r.origin;
    if (r.ambiguous) o.local_rank.reset();  // the command line of the last one spawned
    Event e = exit_event(o, r.exit_code.value_or(1), r.signal, r.text);
    if (r.memory) e.category = cat::host_oom;
    e.first_observed = r.root_cause;
    e.source = r.source;
    e.order = r.order;
    out.push_back(std::move(e));
  }
}

// A C++ abort whose what() never came (another process's line took its place) reports the
// error of the line right after it in its file, when that line is a reported error without a
// type of its own (a watchdog quoting "CUDA error: ..."): the abort is that error's wrapper.
void adopt_wrapped_errors(std::vector<Event>& events) {
  for (auto& e : events) {
    if (e.kind != EventKind::Error || e.category != cat::cpp_exception || !e.message.empty() ||
        e.weak)
      continue;
    Event* next = nullptr;
    for (auto& o : events)
      if (&o != &e && o.source == e.source && o.order > e.order && (!next || o.order < next->order))
        next = &o;
    if (!next || next->kind != EventKind::Error || !next->exception.empty() ||
        !next->frames.empty() || !is_primary(next->category) ||
        next->category == cat::cpp_exception)
      continue;
    e.category = next->category;
    e.message = next->message;
    e.excerpt.insert(e.excerpt.end(), next->excerpt.begin(), next->excerpt.end());
    next->category.clear();  // folded into its wrapper
  }
  events.erase(std::remove_if(
                   events.begin(), events.end(),
                   [](const Event& e) { return e.kind == EventKind::Error && e.category.empty(); }),
               events.end());
}

}  // namespace

std::vector<Event> find_candidates(std::vector<Event> events, const Facts& facts,
                                   const DiagnosisInput& in) {
  std::vector<Event> out;
  static const RE2 killed_pid(R"(Killed process (\d+)|,pid=(\d+)|\bpid[ =](\d+)\b)");
  for (auto& e : events) {
    if (e.requested) continue;
    if (auto crash = crash_from_dump(e)) {
      // faulthandler's stack right after a C++ abort is that abort's Python frames.
      Event* abort = out.empty() ? nullptr : &out.back();
      if (abort && abort->kind == EventKind::Error && abort->frames.empty() &&
          abort->source == e.source && abort->origin.rank == e.origin.rank &&
          crash->exception == "SIGABRT") {
        abort->frames = crash->frames;
        continue;
      }
      out.push_back(std::move(*crash));
    }
    if (e.kind != EventKind::Error) continue;
    if (auto g = e.category == cat::host_oom && !e.origin.pid ? captures(e.message, killed_pid)
                                                              : std::nullopt)
      for (const auto& v : *g) e.origin.pid = std::max<long>(e.origin.pid, number(v, 0));
    // What a memory line implies: Rust's allocator aborts, the kernel's OOM killer SIGKILLs.
    if (e.category == cat::host_oom && e.exception.empty()) {
      if (e.message.find("memory allocation of") != std::string::npos)
        e.exception = "SIGABRT";
      else if (RE2::PartialMatch(e.message, R"((?i)killed process|oom[-_ ]kill|out of memory)"))
        e.exception = "SIGKILL";
    }
    out.push_back(std::move(e));
  }
  adopt_wrapped_errors(out);
  observed_exits(in, out);
  reported_exits(facts, out);
  return out;
}

}  // namespace ddpbisect

namespace ddpbisect {

namespace {

bool is_memory_line(const Event& e) {
  return e.kind == EventKind::Error && e.category == cat::host_oom && e.frames.empty();
}

// Whether a memory monitor saw this process's host memory run out: its readings (or, when the
// readings carry no rank, the file's) rose by a fifth and at least a GiB, or reached 90 % of
// the host's memory.
std::string memory_growth(const Event& x, const Facts& facts) {
  double first = -1, last = -1, percent = -1;
  for (const auto& m : facts.memory) {
    bool mine = x.origin.rank && m.origin.rank == x.origin.rank;
    bool anonymous = !m.origin.rank && !m.origin.local_rank;
    if (!mine && !anonymous) continue;
    if (first < 0) first = m.bytes;
    last = m.bytes;
    percent = std::max(percent, m.percent);
  }
  const double gib = 1024.0 * 1024 * 1024;
  char buf[160];
  if (percent >= 90) {
    std::snprintf(buf, sizeof buf, "its host's memory was %.0f %% used (%.1f GB)", percent,
                  last / gib);
    return buf;
  }
  if (first <= 0 || last < first * 1.2 || last - first < gib) return "";
  std::snprintf(buf, sizeof buf, "its host memory grew from %.1f GB to %.1f GB", first / gib,
                last / gib);
  return buf;
}

// The memory line that explains the death `x`: same process id, same rank, or the only one.
long matching_memory_line(const std::vector<Event>& c, const Event& x, size_t deaths) {
  long any = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    const Event& m = c[i];
    if (!is_memory_line(m)) continue;
    if (x.origin.pid && m.origin.pid == x.origin.pid) return static_cast<long>(i);
    if (x.origin.rank && m.origin.rank == x.origin.rank) return static_cast<long>(i);
    if (!m.origin.rank && deaths == 1 && any < 0) any = static_cast<long>(i);
  }
  return any;
}

// Whether what a process printed describes how it ended: an error of its own (or one it printed
// about another rank), or, in a console whose errors carry no rank, one of those errors of the
// kind that ends a process that way.
// Whether `e` is the kind of error that ends a process the way `x` ended: a Python exception
// exits with a code, a C++ exception or a watchdog aborts.
bool ends_like(const Event& e, const Event& x) {
  bool aborts = e.category == cat::comm_timeout || e.category == cat::cpp_exception ||
                e.exception.find("::") != std::string::npos;
  return starts_with(x.exception, "SIG") ? x.exception == "SIGABRT" && aborts : !aborts;
}

bool explained_by_own_events(const std::vector<Event>& c, const Event& x) {
  return std::any_of(c.begin(), c.end(), [&](const Event& e) {
    if (e.kind != EventKind::Error || e.handled || e.category == cat::launcher || is_memory_line(e))
      return false;
    if (!x.origin.rank) return e.source == x.source && ends_like(e, x);
    if (e.origin.rank == x.origin.rank || (e.printer && e.printer == x.origin.rank)) return true;
    return !e.origin.rank && e.source == x.source && ends_like(e, x);
  });
}

}  // namespace

void fold_exits(std::vector<Event>& c, const Facts& facts) {
  // A process that printed its own error is described by it; the launcher's word on it only
  // says it was the first to fail.
  std::vector<Event> kept;
  bool ranked_exit = false;
  for (auto& x : c) {
    if (x.kind != EventKind::Exit) continue;
    if (x.origin.rank && explained_by_own_events(c, x)) {
      if (x.first_observed)
        for (auto& e : c)
          if (e.kind == EventKind::Error && e.origin.rank == x.origin.rank) e.first_observed = true;
      x.category = "";  // dropped below
    } else if (x.origin.rank) {
      ranked_exit = true;
    }
  }
  // An exit whose process is unknown adds nothing when a known one, or a real error, says more.
  bool real = std::any_of(c.begin(), c.end(), [](const Event& e) {
    return e.kind == EventKind::Error && real_primary(e);
  });
  for (auto& x : c)
    if (x.kind == EventKind::Exit && !x.origin.rank &&
        (ranked_exit || real || explained_by_own_events(c, x)))
      x.category = "";
  size_t deaths = std::count_if(c.begin(), c.end(), [](const Event& x) {
    return x.kind == EventKind::Exit && !x.category.empty() && !x.exception.empty() &&
           starts_with(x.exception, "SIG");
  });
  // Memory evidence turns a death by signal into host memory exhaustion.
  for (auto& x : c) {
    if (x.kind != EventKind::Exit || x.category.empty() || !starts_with(x.exception, "SIG"))
      continue;
    long m = matching_memory_line(c, x, deaths);
    if (m >= 0) {
      x.category = cat::host_oom;
      x.message = first_line(c[static_cast<size_t>(m)].message);
      c[static_cast<size_t>(m)].category = "";
    } else if (std::string growth = memory_growth(x, facts); !growth.empty()) {
      x.category = cat::host_oom;
      x.message =
          "killed by " + x.exception + " while " + growth + " (the kernel's OOM killer, probably)";
    } else if (x.exception == "SIGKILL" && x.category == cat::signal) {
      x.message += "; no traceback: the kernel's OOM killer is the usual suspect";
    }
  }
  for (auto& e : c)
    if (!e.category.empty()) kept.push_back(std::move(e));
  c = std::move(kept);
}

}  // namespace ddpbisect
