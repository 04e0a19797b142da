#include "diagnose/stream_parser.hpp"

#include <re2/re2.h>

#include <algorithm>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/stream_text.hpp"

namespace ddpbisect {

using namespace stream_text;  // NOLINT: the shared line tests

bool garbled(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size() && words.size() < 64) {
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  // Two processes writing the same words at once: a phrase twice in a row ...
  for (size_t k = 0; k + 5 < words.size(); ++k)
    if (words[k] == words[k + 3] && words[k + 1] == words[k + 4] && words[k + 2] == words[k + 5])
      return true;
  // ... or a number twice in one ("20971522097152").
  for (auto w : words)
    if (w.size() >= 6 && w.size() % 2 == 0 &&
        w.find_first_not_of("0123456789") == std::string_view::npos &&
        w.substr(0, w.size() / 2) == w.substr(w.size() / 2))
      return true;
  return false;
}

// The trigger words, then every category's own pattern: whatever line a category rule
// accepts passes the filter by construction (a rule whose words the list missed, such as
// Gloo's "op.preamble.length" glued mid-line to a warning, would otherwise never fire). Each
// pattern is a group of its own in multi-line mode, so that its flags stay in it and its ^ and $
// hold at every line of a chunk the log reader scans whole.
const RE2& trigger_regex() {
  static const RE2 re = [] {
    RE2::Options o;
    o.set_max_mem(32 << 20);  // room for the DFA's states: a starved cache falls back to slower
    o.set_never_capture(true);
    std::string pattern =
        R"(rror|RROR|CRITICAL|xception|Traceback|Fatal|terminate called|what\(\)|Watchdog|imed out|onnect|Signal|cannot run |exitcode|exit code|Root Cause|NCCL WARN|out of memory|Out [Oo]f [Mm]emory|Expected|Detected|hread |stack dump|CUDA|Aborted|Segmentation|closing signal|monitoredBarrier|[Nn]a[Nn]|non-finite|FAILED|Killed|killed|oom|OOM|SeqNum|enqueued|HEARTBEAT|COLLECTIVES|Process \d|process \d|task \d|[Mm]emory|MEM|RSS|rss|pid|exited|exits|Stack trace|[Rr]eturn code|world size|WORLD_SIZE|GLOBAL_RANK|nproc[_-]per[_-]node|num_gpus|Timeout \(|Python v|mpirank|rank \d+|Rank \d+|\(local_rank: \d|File "|didn't join|didn't finish|store based barrier|store-based barrier)";
    for (const Category& c : categories())
      if (*c.pattern) pattern += std::string("|(?m:") + c.pattern + ")";
    return RE2(pattern, o);
  }();
  return re;
}

bool could_matter(std::string_view line) {
  return RE2::PartialMatch(piece(line), trigger_regex());
}

bool parse_frame(std::string_view text, Frame& f) {
  static const RE2 python(R"re(^\s*File "([^"]*)", line (\d+)(?:,? in (.+?))?\s*$)re");
  static const RE2 ipython(R"(^\s*File (\S+):(\d+),? in ([\w.<>]+))");
  static const RE2 cell(R"(^\s*Cell (In\[\d+\]), line (\d+))");
  std::string file, func;
  int line = 0;
  if (RE2::FullMatch(piece(text), python, &file, &line, &func) ||
      RE2::PartialMatch(piece(text), ipython, &file, &line, &func)) {
    f = {file, line, func, true};
    return true;
  }
  if (RE2::PartialMatch(piece(text), cell, &file, &line)) {
    f = {"Cell " + file, line, "<cell>", true};
    return true;
  }
  return false;
}

bool parse_exception_line(std::string_view text, std::string& type, std::string& message) {
  static const RE2 re(R"(^([A-Za-z_][\w.]*)(\([\w.]+\))?(?::(?: (.*))?)?\s*$)");
  std::string wrapped;
  if (!RE2::FullMatch(piece(text), re, &type, &wrapped, &message)) return false;
  bool has_message = text.find(':') != std::string_view::npos;
  if (!plausible_type(type, has_message)) return false;
  type += wrapped;
  return true;
}

StreamParser::StreamParser(Origin origin, std::string source, std::vector<std::string> library)
    : origin_(std::move(origin)), source_(std::move(source)), library_(std::move(library)) {}

void StreamParser::start_event(EventKind kind, double time, long long order) {
  current_ = Event();
  current_.kind = kind;
  current_.origin = origin_;
  current_.near_rank = near_rank_;
  current_.time = time;
  current_.order = order;
  current_.source = source_;
  part_ = Part::Main;
  chained_frames_.clear();
  chained_text_.clear();
  chain_pending_ = false;
  foreign_ = 0;
  continuation_ = 0;
  threads_.clear();
}

void StreamParser::add_excerpt(std::string_view text) {
  if (current_.excerpt.size() < kMaxExcerpt) current_.excerpt.emplace_back(text.substr(0, 2000));
}

void StreamParser::add_frame(Frame f) {
  f.user = !is_library_frame(f.file, library_);
  auto& frames = part_ == Part::Chained ? chained_frames_ : current_.frames;
  // Interleaved copies of one traceback repeat frames: keep one.
  if (!frames.empty() && frames.back().file == f.file && frames.back().line == f.line) return;
  if (frames.size() < kMaxFrames) frames.push_back(std::move(f));
}

void StreamParser::emit() {
  // A traceback cut before its exception line (the excerpt ends, another block starts) reports
  // the error this process printed just before it: c10d logs an error, then raises it. After a
  // complete traceback it is a truncated copy that adds nothing.
  if (current_.kind == EventKind::Error && current_.exception.empty() && current_.message.empty() &&
      current_.category.empty() && !events_.empty() && events_.back().kind == EventKind::Error &&
      !events_.back().handled && !events_.back().category.empty()) {
    Event& before = events_.back();
    if (before.frames.empty()) {
      before.frames = std::move(current_.frames);
      before.weak = false;
      for (const auto& x : current_.excerpt)
        if (before.excerpt.size() < kMaxExcerpt) before.excerpt.push_back(x);
    }
    current_ = Event();
    state_ = State::Idle;
    return;
  }
  if (current_.kind == EventKind::Error) {
    // A chain's cause without a frame of the user's: the later tracebacks say where it happened.
    if (!current_.user_frame() && std::any_of(chained_frames_.begin(), chained_frames_.end(),
                                              [](const Frame& f) { return f.user; }))
      current_.frames = chained_frames_;
    if (!chained_text_.empty()) current_.message += chained_text_;
    if (current_.category.empty())
      current_.category = classify_exception(current_.exception, current_.message);
  }
  if (events_.size() >= kMaxEvents) events_.erase(events_.begin() + kMaxEvents / 2);
  events_.push_back(std::move(current_));
  current_ = Event();
  state_ = State::Idle;
}

void StreamParser::redispatch(const CleanLine& l, double time, long long order) {
  emit();
  line(l, time, order);
}

bool StreamParser::exception_line(std::string_view text) {
  std::string type, message;
  if (!parse_exception_line(text, type, message)) return false;
  if (part_ == Part::Chained) {
    chained_text_ += "\n" + type + (message.empty() ? "" : ": " + message);
    return true;
  }
  // A bare `assert` says what failed only in its source line, which Python printed above.
  if (message.empty() && type == "AssertionError" && starts_with(code_, "assert ")) message = code_;
  // A wrapper's type names its cause: RayTaskError(KeyError).
  current_.exception = type;
  current_.message = message;
  return true;
}

void StreamParser::start_traceback(std::string_view text, double time, long long order) {
  start_event(EventKind::Error, time, order);
  add_excerpt(text);
  static const RE2 rank_note(R"(\(RANK (\d+)\))");
  int r = 0;
  if (RE2::PartialMatch(piece(text), rank_note, &r)) {
    current_.printer = current_.origin.rank;
    current_.origin.rank = r;
    current_.origin.rank_from = "message";
  } else if (next_rank_) {
    current_.origin.rank = next_rank_;
    current_.origin.local_rank.reset();
    current_.origin.rank_from = "launcher's process index";
  }
  next_rank_.reset();
  current_.handled = next_handled_;
  next_handled_ = false;
  bool rich = has(text, "\xe2\x95\xad") || has(text, "\xe2\x94\x80");  // ╭ or ─
  state_ = rich ? State::Rich : State::Traceback;
  // Indented as a whole: pasted so, or the "traceback :" field of torchrun's banner.
  size_t indent = text.find_first_not_of(' ');
  bool field = ends_with(trim(text.substr(0, text.find("Traceback"))), "traceback :");
  base_indent_ =
      !rich && indent != std::string_view::npos && (field || text.substr(indent, 9) == "Traceback")
          ? indent
          : 0;
  rich_header_.clear();
  code_.clear();
}

void StreamParser::line(const CleanLine& in, double time, long long order) {
  // Our own instrumentation's lines are not the job's: one after a traceback would read as the
  // rest of its message.
  if (has(in.text, "DDPBISECT_HEARTBEAT ") || has(in.text, "DDPBISECT_COLLECTIVES ") ||
      has(in.text, "DDPBISECT_STATE "))
    return;
  // A traceback pasted with every line indented (or in a banner's field) reads as if it were not.
  CleanLine shifted;
  const CleanLine* lp = &in;
  bool block =
      state_ == State::Traceback || state_ == State::AfterException || state_ == State::Rich;
  if (block && base_indent_ > 0 && in.text.size() >= base_indent_ &&
      in.text.find_first_not_of(' ') >= base_indent_) {
    shifted = in;
    shifted.text.erase(0, base_indent_);
    lp = &shifted;
  }
  const CleanLine& l = *lp;
  std::string_view text = l.text;
  switch (state_) {
    case State::Traceback:
      return traceback_line(l, time, order);
    case State::AfterException:
      return after_exception_line(l, time, order);
    case State::Rich:
      return rich_line(l, time, order);
    case State::Dump:
      return dump_line(l, time, order);
    case State::PySpy:
      return pyspy_line(l, time, order);
    case State::CollectiveStack:
      return collective_stack_line(l, time, order);
    case State::Terminate:
      return terminate_line(l, time, order);
    case State::CppBacktrace:
      if (starts_with(trim(text), "frame #")) return;
      state_ = State::Idle;
      break;
    case State::Idle:
      break;
  }
  idle_line(l, time, order);
}

void StreamParser::traceback_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  Frame f;
  if (parse_frame(text, f)) {
    add_excerpt(text);
    add_frame(std::move(f));
    code_.clear();
    return;
  }
  if (text.empty() || indented(text)) {  // source and caret lines
    if (!text.empty()) add_excerpt(text);
    std::string_view code = trim(text);
    if (!code.empty() && code[0] != '^' && code[0] != '~') code_.assign(code.substr(0, 200));
    return;
  }
  if (has(text, "Traceback (most recent call last)")) return;  // an interleaved copy's header
  if (exception_line(text)) {
    add_excerpt(text);
    state_ = State::AfterException;
    continuation_ = 0;
    return;
  }
  // Another block starting here ends this traceback unread; anything else is a foreign line
  // (a logger, a progress bar, another process) printed into the middle of it.
  if (has(text, "terminate called") || starts_with(text, "Fatal Python error") ||
      shell_report(text) || ++foreign_ > kMaxForeign)
    return redispatch(l, time, order);
}

void StreamParser::after_exception_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  if (starts_with(text, "During handling of the above exception") ||
      starts_with(text, "The above exception was the direct cause")) {
    chain_pending_ = true;  // the next traceback is a later link of this chain
    return;
  }
  if (has(text, "Traceback (most recent call last)")) {
    static const RE2 rank_note(R"(\(RANK (\d+)\))");
    int r = 0;
    bool ranked = RE2::PartialMatch(piece(text), rank_note, &r);
    // A chained traceback, or one nested in the exception: DataLoader's "Original Traceback",
    // torch.distributed.checkpoint's per-rank ones. Nested: the inner exception is the cause.
    // Any other traceback here is another exception of its own.
    if (!chain_pending_ && !ranked && !starts_with(text, "Original Traceback"))
      return redispatch(l, time, order);
    if (ranked) {
      current_.printer = current_.origin.rank;
      current_.origin.rank = r;
      current_.origin.rank_from = "message";
    }
    part_ = chain_pending_ ? Part::Chained : Part::Nested;
    chain_pending_ = false;
    state_ = State::Traceback;
    foreign_ = 0;
    add_excerpt(text);
    return;
  }
  Frame f;
  if (!chain_pending_ && parse_frame(text, f)) {
    // Frames right after the exception line: a wrapper's remote traceback (Ray's RayTaskError).
    part_ = Part::Nested;
    state_ = State::Traceback;
    add_excerpt(text);
    add_frame(std::move(f));
    return;
  }
  if (starts_with(text, "Exception raised from ") || starts_with(trim(text), "frame #")) return;
  static const RE2 process(R"(^\s*-- Process (\d+) terminated with the following error)");
  int index = 0;
  if (RE2::PartialMatch(piece(text), process, &index)) {
    next_rank_ = index;                 // mp.spawn: the traceback that follows is process N's
    current_.category = cat::launcher;  // this one is the parent re-raising it
    return emit();
  }
  if (text.empty()) {  // a blank line ends the message; a chain may still follow
    // ... unless the exception line had none: "Type:" then the message after a blank line.
    if (!(current_.message.empty() && continuation_ == 0 && !current_.exception.empty()))
      continuation_ = 8;
    return;
  }
  bool continuation = !chain_pending_ && continuation_ < 8 && !l.level && !shell_report(text) &&
                      !launcher_line(text) && !has(text, "Fatal Python error") &&
                      !has(text, "terminate called") &&
                      !starts_with(text, "Exception ignored in") &&
                      !has(text, "Root Cause (first observed failure)");
  if (continuation) {
    add_excerpt(text);
    current_.message += (current_.message.empty() ? "" : "\n") + std::string(text);
    ++continuation_;
    return;
  }
  redispatch(l, time, order);
}

// Rich draws a traceback in a box: frame headers "│ /path/file.py:12 in func │" (wrapped across
// rows at the box's width), code rows "│ ❱ 12 │ code │", a blank row between frames.
void StreamParser::rich_line(const CleanLine& l, double time, long long order) {
  std::string_view text = trim(l.text);
  static const std::string_view bar = "\xe2\x94\x82";     // │
  static const std::string_view bottom = "\xe2\x95\xb0";  // ╰
  auto flush = [&] {
    static const RE2 header(R"(^(.+?):(\d+) ?in ?(\S+)$)");
    std::string file, func;
    int line = 0;
    if (RE2::FullMatch(rich_header_, header, &file, &line, &func))
      add_frame({file, line, func, true});
    rich_header_.clear();
  };
  if (starts_with(text, bottom)) {
    flush();
    state_ = State::Traceback;  // the exception line follows the box
    return;
  }
  if (!starts_with(text, bar)) {
    if (has(text, "Traceback (most recent call last)")) return;  // an interleaved box
    flush();
    if (++foreign_ > kMaxForeign) return redispatch(l, time, order);
    state_ = State::Traceback;
    return traceback_line(l, time, order);
  }
  add_excerpt(text);
  std::string_view row = trim(text.substr(bar.size()));
  if (ends_with(row, bar)) row = trim(row.substr(0, row.size() - bar.size()));
  bool code =
      !row.empty() && ((row[0] >= '0' && row[0] <= '9') || starts_with(row, "\xe2\x9d\xb1"));
  if (row.empty() || code || row.find(bar) != std::string_view::npos) {
    flush();
    return;
  }
  rich_header_ += std::string(row);
}

void StreamParser::terminate_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  size_t at = text.find("what():");
  if (at != std::string_view::npos) {
    add_excerpt(text);
    current_.message = std::string(trim(text.substr(at + 7)));
    state_ = State::AfterException;
    continuation_ = 8;  // what() is one line
    return;
  }
  if (text.empty()) return;
  // Processes aborting at once print their "terminate called" lines before their what()s.
  if (has(text, "terminate called after throwing an instance of")) return add_excerpt(text);
  redispatch(l, time, order);
}

void StreamParser::collective_stack_line(const CleanLine& l, double time, long long order) {
  static const RE2 frame(R"(^#\d+ (\S+) from (.+?):(\d+)\s*$)");
  std::string func, file;
  int line = 0;
  if (RE2::FullMatch(piece(l.text), frame, &func, &file, &line)) {
    add_excerpt(l.text);
    Frame f{file, line, func, !is_library_frame(file, library_)};
    current_.frames.insert(current_.frames.begin(), f);  // printed innermost first
    return;
  }
  if (l.text.empty() && current_.frames.empty()) return;
  redispatch(l, time, order);
}

}  // namespace ddpbisect
