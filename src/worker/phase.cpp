#include "worker/phase.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>

namespace ddpbisect::worker {

namespace {
constexpr int kMaxDepth = 64;
// Frames of each thread that runs phases; the dump walks all of them. Written only by their own
// thread; read by the signal handler (a torn read prints a stale frame, never crashes).
struct ThreadStack {
  std::atomic<pthread_t> owner{};
  std::atomic<bool> used{false};
  std::atomic<int> depth{0};
  PhaseFrame frames[kMaxDepth];
};
constexpr int kMaxThreads = 8;
ThreadStack g_stacks[kMaxThreads];
thread_local ThreadStack* t_stack = nullptr;
int g_rank = -1;

std::vector<PhaseFrame> g_exception_frames;
bool g_have_exception_frames = false;

ThreadStack* my_stack() {
  if (t_stack) return t_stack;
  for (auto& s : g_stacks) {
    bool expected = false;
    if (s.used.compare_exchange_strong(expected, true)) {
      s.owner = pthread_self();
      t_stack = &s;
      return t_stack;
    }
  }
  return nullptr;
}

// Async-signal-safe output helpers.
void put(const char* s) {
  ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
  (void)ignored;
}
void put_num(unsigned long long v, int base = 10) {
  char buf[32];
  int i = 31;
  buf[i] = 0;
  do {
    buf[--i] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v && i > 0);
  put(buf + i);
}

void dump_all_threads(bool fatal, int sig) {
  if (fatal) {
    put("Fatal error: ddpbisect-worker received signal ");
    put_num(static_cast<unsigned long long>(sig));
    put("\n\n");
  } else {
    put("ddpbisect-worker stack dump (rank ");
    put_num(static_cast<unsigned long long>(g_rank < 0 ? 0 : g_rank));
    put(", pid ");
    put_num(static_cast<unsigned long long>(getpid()));
    put(")\n");
  }
  pthread_t self = pthread_self();
  for (auto& s : g_stacks) {
    if (!s.used.load()) continue;
    int depth = s.depth.load();
    if (depth <= 0) continue;
    put(pthread_equal(s.owner.load(), self) ? "Current thread 0x" : "Thread 0x");
    put_num(static_cast<unsigned long long>(s.owner.load()), 16);
    put(" (most recent call first):\n");
    for (int i = std::min(depth, kMaxDepth) - 1; i >= 0; --i) {
      put("  File \"");
      put(short_path(s.frames[i].file));
      put("\", line ");
      put_num(static_cast<unsigned long long>(s.frames[i].line));
      put(" in ");
      put(s.frames[i].function);
      put("\n");
    }
    put("\n");
  }
}

void on_dump(int) {
  int saved = errno;
  dump_all_threads(false, SIGUSR1);
  errno = saved;
}

void on_fatal(int sig) {
  dump_all_threads(true, sig);
  signal(sig, SIG_DFL);
  raise(sig);
}
}  // namespace

const char* short_path(const char* file) {
  const char* p = strstr(file, "src/worker/");
  return p ? p : file;
}

ScopedPhase::ScopedPhase(const char* file, int line, const char* function)
    : uncaught_(std::uncaught_exceptions()) {
  if (ThreadStack* s = my_stack()) {
    int d = s->depth.load();
    if (d < kMaxDepth) s->frames[d] = {file, line, function};
    s->depth.store(d + 1);
  }
}

ScopedPhase::~ScopedPhase() {
  ThreadStack* s = my_stack();
  if (!s) return;
  int d = s->depth.load();
  // The innermost phase destroyed by an exception sees the full stack at the throw point.
  if (std::uncaught_exceptions() > uncaught_ && !g_have_exception_frames) {
    g_exception_frames.assign(s->frames, s->frames + std::min(d, kMaxDepth));
    g_have_exception_frames = true;
  }
  s->depth.store(d - 1);
}

void install_stack_dump_handlers(int rank) {
  g_rank = rank;
  struct sigaction sa {};
  sa.sa_handler = on_dump;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

std::vector<PhaseFrame> exception_frames() {
  if (g_have_exception_frames) return g_exception_frames;
  ThreadStack* s = my_stack();
  if (!s) return {};
  return std::vector<PhaseFrame>(s->frames, s->frames + std::min(s->depth.load(), kMaxDepth));
}

void clear_exception_frames() {
  g_exception_frames.clear();
  g_have_exception_frames = false;
}

void print_traceback(const std::vector<PhaseFrame>& frames, const std::string& type,
                     const std::string& message) {
  std::string out = "Traceback (most recent call last):\n";
  for (const auto& f : frames)
    out += std::string("  File \"") + short_path(f.file) + "\", line " + std::to_string(f.line) +
           ", in " + f.function + "\n";
  out += type + ": " + message + "\n";
  fputs(out.c_str(), stderr);
  fflush(stderr);
}

}  // namespace ddpbisect::worker
