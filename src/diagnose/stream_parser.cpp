#include "diagnose/stream_parser.hpp"

#include <re2/re2.h>

#include "common/text.hpp"

namespace ddpbisect {

namespace {
// '  File "x.py", line 12, in f' (traceback) or '  File "x.py", line 12 in f' (faulthandler).
const RE2& frame_re() {
  // The function is absent for SyntaxError's frame.
  static const RE2 re(R"re(^\s*File "([^"]*)", line (\d+)(?:,? in (.+?))?\s*$)re");
  return re;
}
const RE2& exception_re() {
  static const RE2 re(
      R"(^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Timeout)?)(?::\s?(.*))?$)");
  return re;
}
const RE2& free_error_re() {
  static const RE2 re(R"(^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$)");
  return re;
}

bool has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}
}  // namespace

const RE2& trigger_regex() {
  static const RE2 re = [] {
    RE2::Options o;
    o.set_max_mem(
        32 << 20);  // room for the DFA's states: a starved cache falls back to slower search
    o.set_never_capture(true);
    return RE2(
        R"(rror|xception|Traceback|Fatal|terminate called|what\(\)|Watchdog|imed out|onnection|Signal|exitcode|Root Cause|NCCL WARN|out of memory|Expected|Detected|hread 0x|stack dump|CUDA|Aborted|Segmentation|closing signal|monitoredBarrier|[Nn]a[Nn]|non-finite|FAILED|Killed)",
        o);
  }();
  return re;
}

bool could_matter(std::string_view line) {
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), trigger_regex());
}

StreamParser::StreamParser(int rank, std::string source, std::vector<std::string> library_patterns)
    : rank_(rank), source_(std::move(source)), library_(std::move(library_patterns)) {}

void StreamParser::start_event(EventKind kind, double time, long long order) {
  current_ = Event();
  current_.kind = kind;
  current_.rank = rank_;
  current_.time = time;
  current_.order = order;
  current_.source = source_;
}

void StreamParser::add_excerpt(std::string_view text) {
  if (current_.excerpt.size() < kMaxExcerpt) current_.excerpt.emplace_back(text.substr(0, 2000));
}

void StreamParser::emit() {
  if (current_.kind == EventKind::Error && current_.category.empty()) {
    current_.category = classify_exception(current_.exception, current_.message);
    // A C++ type (c10::Error, std::runtime_error) is a C++ exception unless something more
    // specific matched.
    if (current_.category == "python_exception" &&
        current_.exception.find("::") != std::string::npos)
      current_.category = "cpp_exception";
  }
  if (events_.size() >= kMaxEvents) events_.erase(events_.begin() + kMaxEvents / 2);
  events_.push_back(std::move(current_));
  current_ = Event();
  state_ = State::Idle;
}

bool StreamParser::exception_line(std::string_view text) {
  std::string type, message;
  if (!RE2::FullMatch(re2::StringPiece(text.data(), text.size()), exception_re(), &type, &message))
    return false;
  current_.exception = type;
  current_.message = message;
  return true;
}

void StreamParser::line(std::string_view text, double time, long long order) {
  if (has(text, "DDPBISECT_HEARTBEAT ")) return;
  std::string tmp;
  switch (state_) {
    case State::Traceback: {
      add_excerpt(text);
      std::string file, func;
      int lineno = 0;
      if (RE2::FullMatch(re2::StringPiece(text.data(), text.size()), frame_re(), &file, &lineno,
                         &func)) {
        if (current_.frames.size() < kMaxFrames)
          current_.frames.push_back({file, lineno, func, !is_library_frame(file, library_)});
        return;
      }
      if (!text.empty() && (text[0] == ' ' || text[0] == '\t')) return;  // source and caret lines
      if (exception_line(text)) {
        state_ = State::AfterException;
        continuation_ = 0;
        return;
      }
      emit();  // a traceback cut short
      line(text, time, order);
      return;
    }
    case State::AfterException: {
      // "During handling..." chains a new traceback to this one: this one is the cause.
      if (starts_with(text, "During handling of the above exception") ||
          starts_with(text, "The above exception was the direct cause")) {
        emit();
        return;
      }
      bool continuation = continuation_ < 8 && !text.empty() &&
                          !has(text, "Traceback (most recent") &&
                          !has(text, "Fatal Python error") && !has(text, "terminate called") &&
                          !has(text, "Root Cause (first observed failure)") &&
                          !starts_with(text, "[") && !starts_with(text, "WARNING") &&
                          !starts_with(text, "INFO") && !starts_with(text, "ERROR");
      if (continuation) {
        add_excerpt(text);
        current_.message += "\n" + std::string(text);
        ++continuation_;
        return;
      }
      emit();
      line(text, time, order);
      return;
    }
    case State::Dump: {
      std::string file, func;
      int lineno = 0;
      if (RE2::FullMatch(re2::StringPiece(text.data(), text.size()), frame_re(), &file, &lineno,
                         &func)) {
        add_excerpt(text);
        // Faulthandler lists the most recent call first; keep the signalled thread's frames.
        if (current_thread_ && current_.frames.size() < kMaxFrames)
          current_.frames.insert(current_.frames.begin(),
                                 {file, lineno, func, !is_library_frame(file, library_)});
        return;
      }
      if (starts_with(text, "Current thread 0x") || starts_with(text, "Thread 0x")) {
        add_excerpt(text);
        bool is_current = starts_with(text, "Current thread");
        // The signalled thread's frames; without one, the first thread listed.
        current_thread_ = is_current || (!have_current_thread_ && current_.frames.empty());
        if (is_current) {
          if (!have_current_thread_) current_.frames.clear();
          have_current_thread_ = true;
        }
        return;
      }
      if (text.empty() || starts_with(text, "  <") || starts_with(text, "Extension modules") ||
          starts_with(text, "Stack (most recent") || starts_with(text, "Fatal error")) {
        add_excerpt(text);
        return;
      }
      emit();
      line(text, time, order);
      return;
    }
    case State::Terminate: {
      add_excerpt(text);
      size_t at = text.find("what():");
      if (at != std::string_view::npos) {
        current_.message = std::string(trim(text.substr(at + 7)));
        state_ = State::AfterException;
        continuation_ = 8;  // what() is one line here
        return;
      }
      emit();
      line(text, time, order);
      return;
    }
    case State::CppBacktrace: {
      if (starts_with(trim(text), "frame #")) {
        add_excerpt(text);
        return;
      }
      state_ = State::Idle;
      line(text, time, order);
      return;
    }
    case State::Banner: {
      add_excerpt(text);
      std::string_view t = trim(text);
      if (starts_with(t, "rank") && t.find(':') != std::string_view::npos) {
        try {
          rank_for_banner_ = std::stoi(std::string(trim(t.substr(t.find(':') + 1))));
        } catch (const std::exception&) {
        }
      } else if (starts_with(t, "exitcode") && t.find(':') != std::string_view::npos) {
        current_.message = std::string(trim(t.substr(t.find(':') + 1)));
      } else if (has(t, "Signal ") && has(t, "received by PID")) {
        std::string sig;
        if (RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), R"(\((SIG\w+)\))", &sig))
          current_.exception = sig;
        current_.category = "signal";
        current_.message = std::string(t.substr(t.find("Signal ")));
      } else if (starts_with(t, "====") && current_.excerpt.size() > 3) {
        if (rank_for_banner_ >= 0) current_.rank = rank_for_banner_;
        if (current_.category.empty()) current_.category = "exit_nonzero";
        if (current_.exception.empty()) current_.exception = "ChildFailedError";
        if (current_.category != "signal") current_.message = "exitcode " + current_.message;
        current_.kind = EventKind::Exit;
        emit();
      }
      return;
    }
    case State::Idle:
      break;
  }

  // Idle: does a block or an error line start here?
  if (has(text, "Traceback (most recent call last):")) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    state_ = State::Traceback;
    return;
  }
  if (starts_with(text, "Fatal Python error:") ||
      starts_with(text, "ddpbisect-worker stack dump") ||
      starts_with(text, "Fatal error: ddpbisect-worker received signal")) {
    start_event(EventKind::Stack, time, order);
    add_excerpt(text);
    current_.message = std::string(text);
    current_thread_ = false;
    have_current_thread_ = false;
    state_ = State::Dump;
    return;
  }
  if (starts_with(text, "Current thread 0x") || starts_with(text, "Thread 0x")) {
    // A dump without a header (faulthandler.dump_traceback).
    start_event(EventKind::Stack, time, order);
    current_thread_ = false;
    have_current_thread_ = false;
    state_ = State::Dump;
    line(text, time, order);
    return;
  }
  if (has(text, "terminate called after throwing an instance of")) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    std::string type;
    RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), R"(instance of '([^']+)')",
                      &type);
    current_.exception = type.empty() ? "std::exception" : type;
    state_ = State::Terminate;
    return;
  }
  if (has(text, "Exception raised from ") && has(text, "most recent call first")) {
    state_ = State::CppBacktrace;
    return;
  }
  if (has(text, "Root Cause (first observed failure):")) {
    start_event(EventKind::Error, time, order);
    current_.source = source_ + " (launcher banner)";
    rank_for_banner_ = -1;
    state_ = State::Banner;
    return;
  }
  if (!could_matter(text)) return;
  free_line(text, time, order);
}

void StreamParser::free_line(std::string_view text, double time, long long order) {
  std::string s(text);
  std::string type, message;
  // "RuntimeError: ..." printed without a traceback (logging, a C++ binary).
  if (RE2::FullMatch(s, free_error_re(), &type, &message)) {
    start_event(EventKind::Error, time, order);
    add_excerpt(text);
    current_.exception = type;
    current_.message = message;
    state_ = State::AfterException;
    continuation_ = 0;
    return;
  }
  std::string category = classify_line(s);
  if (category.empty()) return;
  start_event(EventKind::Error, time, order);
  add_excerpt(text);
  current_.category = category;
  current_.message = std::string(trim(text));
  if (category == "nccl_error") current_.exception = "NCCLError";
  emit();
}

void StreamParser::finish() {
  if (state_ == State::Traceback || state_ == State::AfterException || state_ == State::Dump ||
      state_ == State::Terminate)
    emit();
  state_ = State::Idle;
}

}  // namespace ddpbisect
