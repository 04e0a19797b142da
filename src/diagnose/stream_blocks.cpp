// The stream parser's idle state: which line starts a block (a traceback, a stack dump from
// faulthandler, py-spy or the worker, a free-standing error line), and the dump states.
#include <re2/re2.h>

#include <string>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/stream_parser.hpp"
#include "diagnose/stream_text.hpp"

namespace ddpbisect {

using namespace stream_text;  // NOLINT: the shared line tests

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
  // logger.exception(): the traceback was logged, not raised. At ERROR level it is a failure
  // after all when nothing ordinary followed it (the reader decides at the end of its file).
  char logged = last_logged_level_;
  last_logged_level_ = l.python_log && (l.level == 'E' || l.level == 'W') ? l.level : 0;
  auto mark_logged = [&] {
    if (!logged) return;
    current_.handled = true;
    current_.logged = logged == 'E';
  };
  if (has(text, "Traceback (most recent call last)")) {
    start_traceback(text, time, order);
    mark_logged();
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
    mark_logged();
    return traceback_line(l, time, order);
  }
  size_t before = events_.size();
  if (could_matter(text)) free_line(l, time, order);
  if (events_.size() == before && idle() && last_logged_level_ != 'E' && !trim(text).empty())
    last_plain_ = order;
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
