// Captures one rank stream (stdout or stderr) into a log file, line by line, with each line's
// capture time in a sidecar index. A budget shared by the whole trial caps what reaches disk:
// past it, the head stays, the middle is dropped (and said so), and the last lines are kept,
// since the root cause is usually at the end.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ddpbisect {

// Splits a byte stream into lines; a "line" longer than kMaxLine is cut there (complete=false),
// so that memory stays bounded whatever a rank writes.
class LineSplitter {
 public:
  using Sink = std::function<void(std::string_view line, bool complete)>;
  static constexpr size_t kMaxLine = 1 << 20;
  void feed(const char* data, size_t n, const Sink& sink);
  void flush(const Sink& sink);  // an unterminated last line

 private:
  std::string partial_;
};

struct LogBudget {
  int64_t remaining;
  bool exhausted = false;
};

class StreamCapture {
 public:
  using LineSink = std::function<void(std::string_view line, double t_ms)>;

  // `log_path` receives the text; `times_path` one "<ms>\n" per line written, in order.
  StreamCapture(const std::string& log_path, const std::string& times_path, LogBudget* budget,
                LineSink sink);
  ~StreamCapture();
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;

  void feed(const char* data, size_t n, double t_ms);
  // Ends the stream: an unterminated last line is kept, the kept tail is written.
  void close(double t_ms);
  // What was written so far reaches the files (a reading while the trial runs).
  void flush();

  int64_t bytes_seen() const { return seen_; }
  int64_t bytes_dropped() const { return dropped_; }
  int64_t lines() const { return lines_; }

 private:
  void line(std::string_view text, double t_ms);
  void write_line(std::string_view text, double t_ms);
  FILE* log_ = nullptr;
  FILE* times_ = nullptr;
  LogBudget* budget_;
  LineSink sink_;
  LineSplitter lines_in_;
  std::deque<std::pair<std::string, double>> tail_;
  int64_t tail_bytes_ = 0, seen_ = 0, dropped_ = 0, lines_ = 0;
  bool closed_ = false;
  static constexpr int64_t kTailBytes = 64 << 10;
};

}  // namespace ddpbisect
