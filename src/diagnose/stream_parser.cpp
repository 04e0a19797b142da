#include "diagnose/stream_parser.hpp"

#include <re2/re2.h>

#include <algorithm>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/frames.hpp"

namespace ddpbisect {

namespace {

bool has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

re2::StringPiece piece(std::string_view s) {
  return re2::StringPiece(s.data(), s.size());
}

bool indented(std::string_view s) {
  return !s.empty() && (s[0] == ' ' || s[0] == '\t');
}

// An exception's type names itself: Error, Exception, Interrupt, ... or is a dotted class path.
bool plausible_type(const std::string& type, bool has_message) {
  static const RE2 suffix(
      R"((Error|Exception|Exit|Interrupt|Warning|Failure|Fault|NotMet|Timeout|Abort|Iteration|Exited|Raised)$)");
  std::string last = type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
  if (RE2::PartialMatch(last, suffix)) return true;
  if (!has_message || type.find('.') == std::string::npos || last.empty()) return false;
  // The standard library's lower-case types: socket.gaierror, socket.timeout, struct.error.
  static const RE2 lower_type(R"([a-z]*(?:error|timeout))");
  if (RE2::FullMatch(last, lower_type)) return true;
  bool upper = last[0] >= 'A' && last[0] <= 'Z';
  bool lower = std::any_of(last.begin(), last.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  return upper && lower;
}

// A shell's or the kernel's report that a process died ("Killed", "bash: line 2: 123 Killed").
bool shell_report(std::string_view text) {
  static const RE2 re(
      R"(^(?:\S.*: line \d+: +\d+ +)?(Killed|Aborted|Segmentation fault|Bus error|Floating point exception|Illegal instruction)(?: \(core dumped\))?(?: {2,}.*)?$)");
  return RE2::FullMatch(piece(text), re);
}

// NCCL's WARN-level line: "host:pid:tid [dev] file.cc:N NCCL WARN ..." (older NCCL: "WARN").
bool nccl_warn(std::string_view text) {
  static const RE2 old_form(R"(\[\d+\] \S+:\d+ WARN )");
  return has(text, " NCCL WARN ") || RE2::PartialMatch(piece(text), old_form);
}

// A launcher's own line (never part of an exception's message).
bool launcher_line(std::string_view text) {
  static const RE2 re(
      R"(^(?:Sending process \d|Killing subprocess|Terminating process|failed \(exitcode|srun: |slurmstepd: |mpirun |Process \d+ exits|WARNING:torch\.distributed|ERROR:torch\.distributed))");
  return RE2::PartialMatch(piece(text), re);
}

}  // namespace

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
        R"(rror|RROR|CRITICAL|xception|Traceback|Fatal|terminate called|what\(\)|Watchdog|imed out|onnect|Signal|cannot run |exitcode|exit code|Root Cause|NCCL WARN|out of memory|Out [Oo]f [Mm]emory|Expected|Detected|hread |stack dump|CUDA|Aborted|Segmentation|closing signal|monitoredBarrier|[Nn]a[Nn]|non-finite|FAILED|Killed|killed|oom|OOM|SeqNum|enqueued|HEARTBEAT|COLLECTIVES|Process \d|process \d|task \d|[Mm]emory|MEM|RSS|rss|pid|exited|exits|Stack trace|[Rr]eturn code|world size|WORLD_SIZE|GLOBAL_RANK|nproc[_-]per[_-]node|num_gpus|Timeout \(|Python v|mpirank|rank \d+|Rank \d+|\(local_rank: \d|File ")";
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
}

void StreamParser::line(const CleanLine& in, double time, long long order) {
  if (has(in.text, "DDPBISECT_HEARTBEAT ") || has(in.text, "DDPBISECT_COLLECTIVES ")) return;
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
    return;
  }
  if (text.empty() || indented(text)) {  // source and caret lines
    if (!text.empty()) add_excerpt(text);
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

namespace ddpbisect {

namespace {
bool dump_header(std::string_view text) {
  static const RE2 timeout(R"(^Timeout \(\d+:\d\d:\d\d\)!)");
  return starts_with(text, "Fatal Python error:") ||
         starts_with(text, "ddpbisect-worker stack dump") ||
         starts_with(text, "Fatal error: ddpbisect-worker received signal") ||
         RE2::PartialMatch(piece(text), timeout);
}
bool faulthandler_thread(std::string_view text) {
  return (starts_with(text, "Current thread 0x") || starts_with(text, "Thread 0x")) &&
         has(text, "most recent call first");
}
const RE2& pyspy_thread() {
  static const RE2 re(R"re(^Thread (?:0x[0-9A-Fa-f]+|\d+) \([\w+ ]+\): "([^"]*)")re");
  return re;
}
}  // namespace

bool StreamParser::start_block(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  static const RE2 pyspy_process(R"(^Process (\d+): )");
  long pid = 0;
  if (dump_header(text) || faulthandler_thread(text)) {
    start_event(EventKind::Stack, time, order);
    state_ = State::Dump;
    if (dump_header(text)) {
      add_excerpt(text);
      current_.message = std::string(text);
    } else {
      dump_line(l, time, order);
    }
    return true;
  }
  if (RE2::PartialMatch(piece(text), pyspy_process, &pid) ||
      RE2::PartialMatch(piece(text), pyspy_thread())) {
    start_event(EventKind::Stack, time, order);
    current_.message = "py-spy dump";
    if (pid) current_.origin.pid = pid;
    state_ = State::PySpy;
    if (!pid) pyspy_line(l, time, order);
    return true;
  }
  if (has(text, "Stack trace of the failed collective")) {
    start_event(EventKind::Stack, time, order);
    current_.message = "stack of the failed collective";
    current_.thread = "collective";
    state_ = State::CollectiveStack;
    return true;
  }
  if (has(text, "terminate called after throwing an instance of")) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    // Two processes' aborts glued mid-line name the type last: "... instance of '... instance
    // of 'c10::CUDAError'".
    size_t quote = text.rfind("instance of '");
    std::string_view rest = quote == std::string_view::npos ? "" : text.substr(quote + 13);
    std::string type(rest.substr(0, rest.find('\'')));
    current_.exception = type.empty() ? "std::exception" : type;
    state_ = State::Terminate;
    return true;
  }
  if (has(text, "terminate called without an active exception")) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    // The C++ runtime ending a process whose threads outlived their owner, usually at teardown
    // after another failure: evidence of trouble, not a cause by itself.
    current_.exception = "std::terminate";
    current_.message = std::string(trim(text));
    current_.category = cat::cpp_exception;
    current_.weak = true;
    emit();
    return true;
  }
  if (has(text, "Exception raised from ") && has(text, "most recent call first")) {
    state_ = State::CppBacktrace;
    return true;
  }
  return false;
}

void StreamParser::idle_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  bool logged_error = last_logged_error_;
  last_logged_error_ = l.python_log && (l.level == 'E' || l.level == 'W');
  if (has(text, "Traceback (most recent call last)")) {
    start_traceback(text, time, order);
    if (logged_error) current_.handled = true;  // logger.exception(): logged, not raised
    return;
  }
  if (starts_with(text, "Exception ignored in")) {
    next_handled_ = true;  // Python's unraisable hook: the program went on
    return;
  }
  static const RE2 process(R"(-- Process (\d+) terminated with the following error)");
  int index = 0;
  if (RE2::PartialMatch(piece(text), process, &index)) {
    next_rank_ = index;
    return;
  }
  if (start_block(l, time, order)) return;
  // A traceback whose header the excerpt (or a wrapped pipe) lost starts at its first frame.
  Frame f;
  if (has(text, "File \"") && parse_frame(text, f)) {
    start_traceback(text, time, order);
    if (logged_error) current_.handled = true;
    return traceback_line(l, time, order);
  }
  if (could_matter(text)) free_line(l, time, order);
}

void StreamParser::free_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  if (shell_report(text)) return;  // a launcher fact, read by facts.cpp
  std::string type, message;
  bool weak = l.weak() || has(text, " NCCL INFO ") || nccl_warn(text);
  // "RuntimeError: ..." printed without a traceback (a logger, a C++ program).
  if (!weak && parse_exception_line(text, type, message) && !message.empty() &&
      (type.find("Error") != std::string::npos || type.find("Exception") != std::string::npos)) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    current_.exception = type;
    current_.message = message;
    current_.garbled = garbled(text);
    state_ = State::AfterException;
    continuation_ = 0;
    return;
  }
  // torchelastic's error record printed as JSON (the error handler, the ChildFailedError
  // banner's msg field): '"message": "Type: text",'.
  static const RE2 record(
      R"re(^\s*"message": "([A-Za-z_][\w.]*(?:Error|Exception)): (.*?)",?\s*$)re");
  if (RE2::FullMatch(piece(text), record, &type, &message)) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    current_.exception = type;
    current_.message = message;
    return emit();
  }
  std::string category = classify_line(std::string(text));
  if (category.empty()) return;
  // NCCL reports its own errors at WARN level: such a line is the error it names, not a
  // warning (a device-side assertion, CUDA's failure inside NCCL, NCCL's own failure).
  if (nccl_warn(text) && !l.weak() && is_primary(category)) weak = false;
  start_event(EventKind::Error, time, order);
  add_excerpt(text);
  current_.category = category;
  current_.message = std::string(trim(text));
  current_.weak = weak;
  current_.garbled = garbled(text);
  if (category == cat::nccl_error && !nccl_warn(text)) current_.exception = "NCCLError";
  emit();
}

void StreamParser::dump_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  Frame f;
  if (parse_frame(text, f)) {
    add_excerpt(text);
    if (threads_.empty()) threads_.push_back({"", false, {}});
    f.user = !is_library_frame(f.file, library_);
    if (threads_.back().frames.size() < kMaxFrames) threads_.back().frames.push_back(f);
    return;
  }
  if (faulthandler_thread(text)) {
    add_excerpt(text);
    if (threads_.size() < 64) threads_.push_back({"", starts_with(text, "Current thread"), {}});
    return;
  }
  if (text.empty() || starts_with(trim(text), "<") || starts_with(text, "Extension modules") ||
      starts_with(text, "Stack (most recent") || starts_with(text, "Fatal error") ||
      (dump_header(text) && threads_.empty())) {
    add_excerpt(text);
    return;
  }
  finish_dump();
  line(l, time, order);
}

void StreamParser::pyspy_line(const CleanLine& l, double time, long long order) {
  std::string_view text = l.text;
  static const RE2 frame(R"(^\s+(\S+) \((.+?):(\d+)\)\s*$)");
  std::string name, func, file;
  int line_no = 0;
  if (RE2::PartialMatch(piece(text), pyspy_thread(), &name)) {
    add_excerpt(text);
    if (threads_.size() < 64) threads_.push_back({name, false, {}});
    return;
  }
  if (RE2::FullMatch(piece(text), frame, &func, &file, &line_no)) {
    add_excerpt(text);
    if (threads_.empty()) threads_.push_back({"", false, {}});
    Frame f{file, line_no, func, !is_library_frame(file, library_)};
    if (threads_.back().frames.size() < kMaxFrames) threads_.back().frames.push_back(f);
    return;
  }
  if (starts_with(text, "Python v") || (threads_.empty() && text.empty())) return;
  finish_dump();
  line(l, time, order);
}

// The thread a dump is about. A fatal dump ("Fatal Python error: ...") is about the thread the
// signal hit ("Current thread"), when it ran Python code; a stack request's (the agent's signal,
// py-spy, our worker's dump) about the main thread, wherever the request landed: named so by
// py-spy, for faulthandler the one whose outermost frame is the module. Else the signalled one,
// else the first with frames. ddpbisect's own agent thread is never the answer.
void StreamParser::finish_dump() {
  auto ours = [](const Thread& t) {
    return !t.frames.empty() && t.frames.front().file.find("ddpbisect_agent") != std::string::npos;
  };
  auto signalled = [&](const Thread& t) { return t.current && !t.frames.empty() && !ours(t); };
  auto main = [&](const Thread& t) {
    return t.name == "MainThread" || (!t.frames.empty() && t.frames.back().function == "<module>");
  };
  const bool fatal = starts_with(current_.message, "Fatal Python error") ||
                     starts_with(current_.message, "Fatal error");
  const Thread* pick = nullptr;
  auto first = [&](auto&& want) {
    for (const auto& t : threads_)
      if (!pick && want(t)) pick = &t;
  };
  if (fatal) first(signalled);
  first(main);
  first(signalled);
  first([&](const Thread& t) { return !t.frames.empty() && !ours(t); });
  if (!pick && !threads_.empty()) pick = &threads_.front();
  if (pick) {
    current_.frames.assign(pick->frames.rbegin(), pick->frames.rend());
    current_.thread = pick->name.empty() ? (pick->current ? "current" : "main") : pick->name;
  }
  emit();
}

void StreamParser::finish() {
  if (state_ == State::Dump || state_ == State::PySpy)
    finish_dump();
  else if (state_ != State::Idle && state_ != State::CppBacktrace)
    emit();
  state_ = State::Idle;
}

}  // namespace ddpbisect
