// One status line at the bottom of a terminal, as ninja and cargo draw theirs: redrawn in place,
// never wider than the terminal (its width is read again after SIGWINCH), refreshed every
// second so that a running clock moves, and lines printed above it stay on screen. Where
// stderr is not a terminal, or TERM is unset or "dumb", there is no status line: print()
// writes plain lines, fit for a CI log.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ddpbisect {

// SIGWINCH marks the width stale. main() only, like install_interrupt_handlers().
void install_resize_handler();

// `text` cut to at most `columns` terminal columns (UTF-8 code points; control characters
// become their pictures, newline and tab spaces), ending in "…" when cut.
std::string fit_to_width(const std::string& text, size_t columns);

class StatusLine {
 public:
  // Composes the line for a width (called under the lock, from any thread).
  using Compose = std::function<std::string(size_t columns)>;
  StatusLine(bool quiet, Compose compose, std::FILE* out = stderr);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  bool smart() const { return smart_; }
  // Runs `change` (which updates what compose() reads) under the lock, then redraws.
  void update(const std::function<void()>& change);
  // A line that stays: above the status line on a terminal, a plain line otherwise (control
  // characters in it are shown, never obeyed: common/text.hpp visible_text).
  void print(const std::string& line);
  // Erases the status line for good (output that follows starts on a clean line).
  void finish();

 private:
  void draw_locked();
  void tick();
  size_t columns() const;

  const bool quiet_, smart_;
  Compose compose_;
  std::FILE* out_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false, finished_ = false;
  std::thread ticker_;
};

}  // namespace ddpbisect
