// Turns one process's clean lines (line_hygiene.hpp) into events, as a streaming state machine:
// it holds only the block being read (a traceback, a stack dump, a C++ abort), so any log size
// fits in bounded memory. Blocks it reads: Python tracebacks (chained, nested "Original
// Traceback", remote ones after a wrapper's line, rich's boxed form, IPython's), faulthandler and
// py-spy stack dumps, our worker's dumps, NCCL's stack of a failed collective, `terminate
// called` aborts, and free-standing error lines. A traceback stays open across foreign lines
// (loggers, progress bars) until its exception line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/event.hpp"
#include "diagnose/line_hygiene.hpp"

namespace re2 {
class RE2;
}

namespace ddpbisect {

class StreamParser {
 public:
  StreamParser(Origin origin, std::string source, std::vector<std::string> library_patterns = {});

  void line(const CleanLine& line, double time, long long order);
  void finish();  // ends a block still open at the end of the stream
  bool idle() const { return state_ == State::Idle; }
  // Inside a block whose next lines a multi-line log message may leave unprefixed.
  bool in_block() const { return state_ != State::Idle && state_ != State::AfterException; }
  // The rank of the nearest prefixed line of the file before this stream's next line.
  void set_near_rank(std::optional<int> r) { near_rank_ = r; }

  const std::vector<Event>& events() const { return events_; }
  std::vector<Event>& events() { return events_; }
  // The order of the last ordinary line it read (one that is neither an event nor an error log).
  long long last_plain() const { return last_plain_; }

 private:
  enum class State {
    Idle,
    Traceback,        // frames of a traceback, until its exception line
    AfterException,   // message continuation, chains, nested and remote tracebacks
    Rich,             // rich's boxed traceback
    Dump,             // faulthandler or our worker's stack dump
    PySpy,            // py-spy dump
    CollectiveStack,  // NCCL's "Stack trace of the failed collective"
    Terminate,        // terminate called ... what():
    CppBacktrace      // c10's "Exception raised from ... frame #N" lines
  };

  void idle_line(const CleanLine& l, double time, long long order);
  void traceback_line(const CleanLine& l, double time, long long order);
  void after_exception_line(const CleanLine& l, double time, long long order);
  void rich_line(const CleanLine& l, double time, long long order);
  void dump_line(const CleanLine& l, double time, long long order);
  void pyspy_line(const CleanLine& l, double time, long long order);
  void collective_stack_line(const CleanLine& l, double time, long long order);
  void terminate_line(const CleanLine& l, double time, long long order);
  bool start_block(const CleanLine& l, double time, long long order);
  void free_line(const CleanLine& l, double time, long long order);

  void start_event(EventKind kind, double time, long long order);
  void start_traceback(std::string_view text, double time, long long order);
  void emit();
  void redispatch(const CleanLine& l, double time, long long order);
  void add_excerpt(std::string_view text);
  void add_frame(Frame f);
  bool exception_line(std::string_view text);
  void finish_dump();

  Origin origin_;
  std::string source_;
  std::vector<std::string> library_;
  std::optional<int> near_rank_;
  State state_ = State::Idle;
  Event current_;
  // A traceback being read: which part of it the frames go to.
  enum class Part { Main, Chained, Nested } part_ = Part::Main;
  std::vector<Frame> chained_frames_;  // the later tracebacks of a chain
  std::string chained_text_;           // their exception lines
  bool chain_pending_ = false;         // "During handling..." seen, its traceback not yet
  int foreign_ = 0;                    // foreign lines inside the current traceback
  int continuation_ = 0;               // message lines after the exception line
  std::string rich_header_;            // rich: a frame header being joined across rows
  size_t base_indent_ = 0;             // a traceback pasted indented: its header's indentation
  std::string code_;                   // the source line under the traceback's last frame
  // Stack dumps: every thread's frames, to pick the signalled or main thread at the end.
  struct Thread {
    std::string name;
    bool current = false;
    std::vector<Frame> frames;  // innermost first, as dumps print them
  };
  std::vector<Thread> threads_;
  // State carried to the next traceback.
  std::optional<int> next_rank_;  // "-- Process N terminated with the following error"
  bool next_handled_ = false;     // "Exception ignored in", an ERROR log record just before
  char last_logged_level_ = 0;    // 'E' or 'W': the previous line was a log record at that level
  long long last_plain_ = -1;
  std::vector<Event> events_;
  static constexpr size_t kMaxEvents = 400;
  static constexpr size_t kMaxFrames = 200;
  static constexpr size_t kMaxExcerpt = 80;
  static constexpr int kMaxForeign = 120;
};

// The words every line that could start or be an event or a fact contains: one regex for the
// per-line filter below and for the log reader's skip over whole chunks. Written with shared
// suffixes ("rror" for Error and error) to keep RE2's DFA small and fast.
const re2::RE2& trigger_regex();
// Whether a line could start or be an event (a quick filter; false means skip it safely).
bool could_matter(std::string_view line);

// Parses a Python traceback frame line: '  File "x.py", line 12, in f' (also faulthandler's
// '  File "x.py", line 12 in f' and IPython's 'File /x.py:12, in f(...)').
bool parse_frame(std::string_view text, Frame& frame);
// Whether a line shows two processes' output mixed mid-line (a phrase or a number doubled).
bool garbled(std::string_view text);
// Whether `text` is an exception line "Type: message" (or a bare exception type), and its parts.
bool parse_exception_line(std::string_view text, std::string& type, std::string& message);

}  // namespace ddpbisect
