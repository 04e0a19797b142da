#include "common/status_line.hpp"

#include "common/text.hpp"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ddpbisect {

namespace {
std::atomic<bool> g_resized{false};
void on_resize(int) {
  g_resized.store(true);
}

bool smart_terminal(std::FILE* out) {
  const char* term = std::getenv("TERM");
  return isatty(fileno(out)) != 0 && term && *term && std::strcmp(term, "dumb") != 0;
}
}  // namespace

void install_resize_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_resize;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGWINCH, &sa, nullptr);
}

std::string fit_to_width(const std::string& raw, size_t columns) {
  const std::string text = visible_text(raw);  // ESC shows as a picture, it does nothing
  std::string out;
  size_t used = 0, i = 0;
  const std::string ellipsis = "\xe2\x80\xa6";  // …
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + len > text.size()) len = 1;
    // The last column is left free when something follows: the ellipsis goes there.
    if (used + 1 > columns || (used + 1 == columns && i + len < text.size())) {
      if (columns > 0) out += ellipsis;
      return out;
    }
    if (c < 0x20 || c == 0x7f)
      out += ' ';
    else if (c >= 0x80 && len == 1)
      out += '?';  // a stray byte, not UTF-8
    else
      out.append(text, i, len);
    ++used;
    i += len;
  }
  return out;
}

StatusLine::StatusLine(bool quiet, Compose compose, std::FILE* out)
    : quiet_(quiet),
      smart_(!quiet && smart_terminal(out)),
      compose_(std::move(compose)),
      out_(out) {
  if (smart_) ticker_ = std::thread([this] { tick(); });
}

StatusLine::~StatusLine() {
  finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

size_t StatusLine::columns() const {
  struct winsize ws {};
  if (ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"))
    if (int n = std::atoi(c); n > 0) return static_cast<size_t>(n);
  return 80;
}

void StatusLine::draw_locked() {
  if (!smart_ || finished_) return;
  // One column short of the edge: a line as wide as the terminal leaves the cursor waiting to
  // wrap, and some terminals wrap it.
  const size_t width = columns();
  const std::string line =
      fit_to_width(compose_(width > 1 ? width - 1 : 1), width > 1 ? width - 1 : 1);
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
}

void StatusLine::update(const std::function<void()>& change) {
  std::lock_guard<std::mutex> lock(mu_);
  change();
  draw_locked();
}

void StatusLine::print(const std::string& line) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (smart_ && !finished_) std::fputs("\r\x1b[K", out_);
  std::fprintf(out_, "%s\n", visible_text(line).c_str());
  draw_locked();
  std::fflush(out_);
}

void StatusLine::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (smart_ && !finished_) {
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
  }
  finished_ = true;
}

void StatusLine::tick() {
  using namespace std::chrono;
  std::unique_lock<std::mutex> lock(mu_);
  auto last = steady_clock::now();
  while (!stop_) {
    wake_.wait_for(lock, milliseconds(100));
    if (stop_) break;
    // The clock moves every second; a resize redraws at once at the new width.
    if (g_resized.exchange(false) || steady_clock::now() - last >= seconds(1)) {
      draw_locked();
      last = steady_clock::now();
    }
  }
}

}  // namespace ddpbisect
