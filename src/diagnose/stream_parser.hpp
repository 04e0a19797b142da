// Turns one rank's log lines into events, as a streaming state machine: it holds only the block
// being read (a traceback, a stack dump, a C++ abort), so any log size fits in bounded memory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/event.hpp"

namespace re2 {
class RE2;
}

namespace ddpbisect {

class StreamParser {
 public:
  StreamParser(int rank, std::string source, std::vector<std::string> library_patterns = {});

  void line(std::string_view text, double time, long long order);
  void finish();  // ends a block still open at the end of the stream
  bool idle() const { return state_ == State::Idle; }

  const std::vector<Event>& events() const { return events_; }
  std::vector<Event>& events() { return events_; }

 private:
  enum class State { Idle, Traceback, AfterException, Dump, Terminate, CppBacktrace, Banner };
  void start_event(EventKind kind, double time, long long order);
  void emit();
  void add_excerpt(std::string_view text);
  bool exception_line(std::string_view text);
  void free_line(std::string_view text, double time, long long order);

  int rank_;
  std::string source_;
  std::vector<std::string> library_;
  State state_ = State::Idle;
  Event current_;
  bool current_thread_ = false;  // in a dump, reading the signalled thread's frames
  bool have_current_thread_ = false;
  int continuation_ = 0;
  int rank_for_banner_ = -1;
  std::vector<Event> events_;
  static constexpr size_t kMaxEvents = 400;
  static constexpr size_t kMaxFrames = 200;
  static constexpr size_t kMaxExcerpt = 80;
};

// The words every line that could start or be an event contains: one regex for the per-line
// filter below and for the log reader's skip over whole chunks. Written with shared suffixes
// ("rror" for Error and error) to keep RE2's DFA small and fast.
const re2::RE2& trigger_regex();
// Whether a line could start or be an event (a quick filter; false means skip it safely).
bool could_matter(std::string_view line);

}  // namespace ddpbisect
