// One way for library code to tell the user something (a warning, a note) while a reduction
// runs: through the status line while one is drawn (reduce/progress.cpp routes it there), so
// that the line is printed above it instead of through it; else a plain line on stderr.
#pragma once

#include <functional>
#include <string>

namespace ddpbisect {

// `line` (without its newline) to the current route, or to stderr when there is none.
void notice(const std::string& line);

// While it lives, notice() goes to `to`; the route before it comes back when it is destroyed
// (routes nest). From any thread.
class NoticeRoute {
 public:
  using Sink = std::function<void(const std::string&)>;
  explicit NoticeRoute(Sink to);
  ~NoticeRoute();
  NoticeRoute(const NoticeRoute&) = delete;
  NoticeRoute& operator=(const NoticeRoute&) = delete;

 private:
  Sink previous_;
};

}  // namespace ddpbisect
