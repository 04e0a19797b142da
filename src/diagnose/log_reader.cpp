#include "diagnose/log_reader.hpp"

#include <fcntl.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_util.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/flight_recorder.hpp"
#include "diagnose/line_hygiene.hpp"
#include "diagnose/stream_parser.hpp"

namespace ddpbisect {

namespace {

std::vector<float> read_times(const std::string& path) {
  std::vector<float> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    try {
      out.push_back(std::stof(line) / 1000.0f);
    } catch (const std::exception&) {
      out.push_back(-1);
    }
  }
  return out;
}

// One text log: hygiene, then one parser per process its lines belong to, and the facts.
class Reader {
 public:
  Reader(const LogInput& log, const std::vector<std::string>& library, Facts& facts)
      : log_(log), library_(library), facts_(log.path, facts) {
    times_ = read_times(log.times_path);
  }

  void run_file() {
    int fd = open(log_.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::vector<char> buf(1 << 20);
    std::string carry;
    while (true) {
      ssize_t n = read(fd, buf.data(), buf.size());
      if (n <= 0) break;
      feed(std::string_view(buf.data(), static_cast<size_t>(n)), carry);
    }
    bool unterminated = !carry.empty();
    if (unterminated) line(carry);
    close(fd);
    // The excerpt ends inside its last line: unterminated, or no more than its tags ("[rank9]:[E
    // ProcessGroupNCCL.cpp:563] [Rank 9]"). Whoever printed it may have been saying anything.
    static const RE2 tags(R"(\s*(?:\[[^\]]*\]:?\s*)*)");
    if (last_order_ >= 0 && last_order_ > last_skipped_ &&
        (unterminated || RE2::FullMatch(last_text_, tags)))
      facts_.cut_line(last_origin_);
    finish();
  }

  void run_text(std::string_view text) {
    std::string carry;
    feed(text, carry);
    if (!carry.empty()) line(carry);
    finish();
  }

  // A file named for a rank that turns out to be a launcher's or a node's console (a launcher
  // reports on its processes, or several ranks' prefixes appear) does not belong to that rank.
  void collect(std::vector<Event>& out, const Facts& facts) {
    bool console = tagged_.size() >= 2 || std::any_of(facts.reports.begin(), facts.reports.end(),
                                                      [](const ProcessReport& r) {
                                                        return r.text.rfind("shell: ", 0) != 0;
                                                      });
    for (auto& [key, p] : parsers_)
      for (auto& e : p->events()) {
        if (console && e.origin.rank_from == "file name") {
          e.origin.rank.reset();
          e.origin.rank_from.clear();
        }
        out.push_back(std::move(e));
      }
    if (barrier_wait_) out.push_back(std::move(*barrier_wait_));
  }

 private:
  void feed(std::string_view chunk, std::string& carry) {
    if (!carry.empty()) {
      size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        carry.append(chunk);
        if (carry.size() > (4 << 20)) carry.resize(4 << 20);  // one absurd line
        return;
      }
      carry.append(chunk.substr(0, nl));
      line(carry);
      carry.clear();
      chunk.remove_prefix(nl + 1);
    }
    size_t last_nl = chunk.rfind('\n');
    if (last_nl == std::string_view::npos) {
      carry.assign(chunk);
      return;
    }
    scan(chunk.substr(0, last_nl + 1));
    carry.assign(chunk.substr(last_nl + 1));
  }

  void finish() {
    facts_.finish(times_.empty() ? offset_ + 1 : lineno_);
    long long plain = last_skipped_;
    for (auto& [key, p] : parsers_) {
      p->finish();
      plain = std::max(plain, p->last_plain());
    }
    // A traceback an ERROR log record carried, after which the file shows only more errors, is
    // how the process ended (vLLM's workers log their exception, then exit), not one it survived.
    for (auto& [key, p] : parsers_)
      for (auto& e : p->events())
        if (e.logged && e.order > plain) e.handled = false;
  }

  bool all_idle() const {
    if (!facts_.idle()) return false;
    for (const auto& [key, p] : parsers_)
      if (!p->idle()) return false;
    return true;
  }

  // Whole lines: while every parser is idle, jump to the next line that could matter.
  void scan(std::string_view text) {
    const RE2& trigger = trigger_regex();
    size_t pos = 0;
    while (pos < text.size()) {
      if (all_idle()) {
        re2::StringPiece input(text.data(), text.size()), match;
        if (!trigger.Match(input, pos, text.size(), RE2::UNANCHORED, &match, 1)) {
          skip(text, pos, text.size());
          return;
        }
        size_t at = static_cast<size_t>(match.data() - text.data());
        size_t start = text.rfind('\n', at);
        start = start == std::string_view::npos || start < pos ? pos : start + 1;
        if (start > pos) remember_previous(text, start);
        skip(text, pos, start);
        pos = start;
      }
      size_t nl = text.find('\n', pos);
      line(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }

  // The physical line before `start`, for the hygiene's repeated-prefix check.
  void remember_previous(std::string_view text, size_t start) {
    size_t from = start >= 2 ? text.rfind('\n', start - 2) : std::string_view::npos;
    from = from == std::string_view::npos ? 0 : from + 1;
    previous_.assign(text.substr(from, std::min<size_t>(start - 1 - from, 512)));
  }

  // Skipped text: line numbers matter only to index capture times; without them the byte
  // offset orders events as well, and counting newlines would cost a second pass.
  void skip(std::string_view text, size_t from, size_t to) {
    if (to > from && text.substr(from, to - from).find_first_not_of(" \t\r\n") != text.npos)
      last_skipped_ = times_.empty() ? offset_ + static_cast<long long>(to - from) : lineno_;
    if (!times_.empty())
      lineno_ += std::count(text.begin() + static_cast<long>(from),
                            text.begin() + static_cast<long>(to), '\n');
    offset_ += static_cast<long long>(to - from);
  }

  void line(std::string_view text) {
    offset_ += static_cast<long long>(text.size()) + 1;
    double t = lineno_ < static_cast<long long>(times_.size())
                   ? times_[static_cast<size_t>(lineno_)]
                   : -1.0;
    long long order = times_.empty() ? offset_ : lineno_;
    clean_.clear();
    cleaner_.clean(text, previous_, clean_);
    for (const auto& l : clean_) logical(l, t, order);
    previous_.assign(text.substr(0, 512));
    ++lineno_;
  }

  void logical(const CleanLine& l, double t, long long order) {
    Origin origin = origin_of(l);
    facts_.line(l, origin, order);
    barrier_line(l, origin, t, order);
    if (!trim(l.text).empty() || l.rank) {
      last_origin_ = origin;
      last_order_ = order;
      last_text_.assign(l.text);  // read once, at the end of the file
    }
    // c10d prefixes only the first line of a multi-line message: unprefixed lines right after a
    // prefixed block's start continue that block.
    bool untagged = !l.rank && !l.local_rank && !l.pid;
    bool continues = untagged && last_ && last_tagged_parser_ && last_->in_block();
    StreamParser& p = continues ? *last_ : parser(l, origin);
    last_ = &p;
    last_tagged_parser_ = !untagged || continues;
    if (!l.rank && !l.local_rank && !l.pid) p.set_near_rank(last_tagged_);
    if (l.rank) {
      last_tagged_ = l.rank;
      if (tagged_.size() < 64) tagged_.insert(*l.rank);
    }
    p.line(l, t, order);
  }

  // c10d's store-based barrier in init_process_group logs every 10 s while it waits for the
  // group's workers, then that it completed (or timed out). A log that ends still waiting shows
  // a group that never formed: no worker has failed, some never arrived.
  void barrier_line(const CleanLine& l, const Origin& origin, double t, long long order) {
    static const RE2 waiting(
        R"(Waiting in store based barrier to initialize process group for rank: (\d+), key: \S+ \(world_size=(\d+), worker_count=(\d+))");
    static const RE2 done(R"(Completed store-based barrier|Timed out initializing process group)");
    if (l.text.find("barrier") == std::string::npos &&
        l.text.find("Timed out initializing") == std::string::npos)
      return;  // the quick test: most lines are neither
    re2::StringPiece text(l.text.data(), l.text.size());
    int rank = 0, world = 0, workers = 0;
    if (RE2::PartialMatch(text, waiting, &rank, &world, &workers) && workers < world) {
      Event e;
      e.category = cat::rendezvous;
      e.printer = rank;
      e.origin.host = origin.host;
      e.time = t;
      e.order = order;
      e.source = log_.path;
      e.message = "the process group never formed: rank " + std::to_string(rank) +
                  " still waited in init_process_group's store-based barrier, " +
                  std::to_string(workers) + " of " + std::to_string(world) +
                  " workers arrived, when the log ends";
      e.excerpt.push_back(std::string(trim(l.text)).substr(0, 400));
      if (!barrier_wait_) {
        barrier_wait_ = std::move(e);
      } else {  // when the wait began, with the latest count of workers
        barrier_wait_->message = std::move(e.message);
        barrier_wait_->excerpt = std::move(e.excerpt);
      }
    } else if (RE2::PartialMatch(text, done)) {
      barrier_wait_.reset();
    }
  }

  Origin origin_of(const CleanLine& l) const {
    Origin o;
    o.pid = l.pid;
    o.host = l.host;
    if (l.rank) {
      o.rank = l.rank, o.rank_from = "prefix";
    } else if (l.local_rank) {
      o.local_rank = l.local_rank;
    } else if (log_.rank && *log_.rank >= 0) {
      o.rank = log_.rank, o.rank_from = "file name";
    } else {
      o.process = log_.process;
    }
    return o;
  }

  StreamParser& parser(const CleanLine& l, const Origin& origin) {
    std::string key = l.rank         ? "r" + std::to_string(*l.rank)
                      : l.local_rank ? "l" + l.host + ":" + std::to_string(*l.local_rank)
                      : l.pid        ? "p" + std::to_string(l.pid)
                                     : "-";
    auto& p = parsers_[key];
    if (!p) p = std::make_unique<StreamParser>(origin, log_.path, library_);
    return *p;
  }

  const LogInput& log_;
  const std::vector<std::string>& library_;
  FactReader facts_;
  LineCleaner cleaner_;
  std::vector<CleanLine> clean_;
  std::string previous_;
  std::vector<float> times_;
  std::map<std::string, std::unique_ptr<StreamParser>> parsers_;
  std::optional<int> last_tagged_;
  StreamParser* last_ = nullptr;     // the parser of the previous logical line
  bool last_tagged_parser_ = false;  // ... and whether it is a prefixed process's
  std::set<int> tagged_;
  long long lineno_ = 0;
  long long offset_ = 0;
  long long last_skipped_ = -1;
  // The file's last line that was not blank: whose, where, and its text.
  Origin last_origin_;
  long long last_order_ = -1;
  std::string last_text_;
  std::optional<Event> barrier_wait_;  // a store-based barrier still waited in  // the order of the
                                       // last skipped line that was not blank
};

// torchrun's error.json: {"message": {"message": "Type: msg", "extraInfo": {"py_callstack": ...,
// "timestamp": ...}}}
void read_error_file(const std::string& path, std::optional<int> rank,
                     const std::vector<std::string>& library, std::vector<Event>& out) {
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("message")) return;
  const auto& m = j["message"];
  std::string text, stack, timestamp;
  if (m.is_string()) {
    text = m.get<std::string>();
  } else if (m.is_object()) {
    text = m.value("message", "");
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      stack = m["extraInfo"].value("py_callstack", "");
      auto ts = m["extraInfo"].value("timestamp", nlohmann::json());
      timestamp = ts.is_string() ? ts.get<std::string>() : ts.is_number() ? json_text(ts) : "";
    }
  }
  double t = -1;
  try {
    if (!timestamp.empty()) t = std::stod(timestamp);
  } catch (const std::exception&) {
  }
  Origin origin;
  origin.rank = rank;
  if (rank) origin.rank_from = "error file";
  StreamParser p(origin, path, library);
  long long order = 0;
  for (const auto& l : split(stack.empty() ? text : stack, '\n')) {
    CleanLine cl;
    cl.text = l;
    p.line(cl, t, order++);
  }
  p.finish();
  for (auto& e : p.events())
    if (e.kind == EventKind::Error) {
      e.time = t;  // torchrun orders failures by this timestamp (seconds)
      out.push_back(std::move(e));
      return;
    }
  Event e;
  e.origin = origin;
  e.time = t;
  size_t colon = text.find(": ");
  e.exception = colon == std::string::npos ? "" : text.substr(0, colon);
  e.message = colon == std::string::npos ? text : text.substr(colon + 2);
  e.category = classify_exception(e.exception, e.message);
  e.source = path;
  out.push_back(std::move(e));
}

}  // namespace

Evidence read_inputs(const DiagnosisInput& input) {
  Evidence ev;
  for (const auto& log : input.logs) {
    Facts facts;
    Reader r(log, input.library_patterns, facts);
    r.run_file();
    r.collect(ev.events, facts);
    ev.facts.merge(std::move(facts));
  }
  for (size_t i = 0; i < input.error_files.size(); ++i)
    read_error_file(input.error_files[i], input.error_file_ranks[i], input.library_patterns,
                    ev.events);
  for (const auto& dump : input.flight_recorder)
    read_flight_recorder(dump.path, dump.rank, input.library_patterns, ev.facts);
  for (const auto& trace : input.agent_traces) read_agent_trace(trace, ev.facts);
  return ev;
}

Evidence read_log_text(const std::string& text, std::optional<int> rank) {
  Evidence ev;
  LogInput log;
  log.rank = rank;
  log.path = "<text>";
  std::vector<std::string> library;
  Facts facts;
  Reader r(log, library, facts);
  r.run_text(text);
  r.collect(ev.events, facts);
  ev.facts.merge(std::move(facts));
  return ev;
}

}  // namespace ddpbisect
