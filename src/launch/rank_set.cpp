#include "launch/rank_set.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include "common/interrupt.hpp"

namespace ddpbisect {

namespace {

// A descriptor that becomes readable when `pid` ends (Linux 5.3+); -1 where the kernel lacks it.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return fd >= 0 ? fd : -1;
#else
  (void)pid;
  return -1;
#endif
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

timespec to_timespec(double seconds) {
  if (seconds < 0) seconds = 0;
  timespec ts;
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  return ts;
}

// Bytes read from one stream per wait: a rank that writes without pause cannot starve the
// others' streams, the exits or the caller's clock.
constexpr int kReadsPerWait = 4;
constexpr size_t kChunk = 64 << 10;

}  // namespace

RankSet::RankSet(OutputSink sink, std::function<bool()> stop)
    : sink_(std::move(sink)), stop_(std::move(stop)) {}

RankSet::~RankSet() {
  std::vector<pid_t> groups;
  for (const auto& c : children_)
    if (c.running) groups.push_back(c.pid);
  kill_all();
  for (size_t i = 0; i < children_.size(); ++i)
    if (children_[i].running) reap(i, true);
  // A child's own processes (its group) got the SIGKILL too, but are gone only once the kernel
  // has run them to their end: the set is over when they are (bounded: 2 s).
  const double until = now_s() + 2.0;
  for (pid_t g : groups)
    while (group_has_live_member(g) && now_s() < until) ::usleep(2000);
  for (auto& c : children_) {
    close_fd(c.fd[0]);
    close_fd(c.fd[1]);
    close_fd(c.pidfd);
  }
}

StartResult RankSet::start(const ProcessSpec& spec) {
  StartResult r = start_process(spec);
  if (!r.ok()) return r;
  Child c;
  c.pid = r.child.pid;
  c.fd[0] = r.child.out_fd;
  c.fd[1] = r.child.err_fd;
  c.pidfd = open_pidfd(c.pid);
  c.running = true;
  children_.push_back(c);
  return r;
}

bool RankSet::any_running() const {
  for (const auto& c : children_)
    if (c.running) return true;
  return false;
}

bool RankSet::should_stop() const {
  return stop_ ? stop_() : interrupt_signal() != 0;
}

void RankSet::close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

bool RankSet::read_some(size_t i, int which) {
  char buf[kChunk];
  int& fd = children_[i].fd[which];
  for (int k = 0; k < kReadsPerWait && fd >= 0; ++k) {
    ssize_t got = read(fd, buf, sizeof buf);
    if (got > 0) {
      if (sink_) sink_(i, which == 0 ? Stream::Out : Stream::Err, buf, static_cast<size_t>(got));
      if (static_cast<size_t>(got) < sizeof buf) return true;
    } else if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
      return true;
    } else {
      close_fd(fd);
      return false;
    }
  }
  return fd >= 0;
}

bool RankSet::reap(size_t i, bool block) {
  Child& c = children_[i];
  int status = 0;
  pid_t got;
  do got = waitpid(c.pid, &status, block ? 0 : WNOHANG);
  while (got < 0 && errno == EINTR);
  if (got < 0 && errno == ECHILD) {  // reaped elsewhere: ended, status unknown
    c.running = false;
    close_fd(c.pidfd);
    disown_child(c.pid);
    return true;
  }
  if (got != c.pid) return false;
  c.running = false;
  disown_child(c.pid);
  if (WIFEXITED(status)) c.status.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) c.status.signal = WTERMSIG(status);
  close_fd(c.pidfd);
  return true;
}

RankSet::Events RankSet::wait(double timeout_s) {
  Events ev;
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, int>> owner;  // child, 0/1 = stdout/stderr, 2 = pidfd
  bool waitpid_polling = false;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    for (int w = 0; w < 2; ++w)
      if (c.fd[w] >= 0) fds.push_back({c.fd[w], POLLIN, 0}), owner.push_back({i, w});
    if (c.running && c.pidfd >= 0) fds.push_back({c.pidfd, POLLIN, 0}), owner.push_back({i, 2});
    if (c.running && c.pidfd < 0) waitpid_polling = true;
  }
  if (waitpid_polling && timeout_s > 0.05) timeout_s = 0.05;

  // Block SIGINT/SIGTERM, look at the flag, and let them in only inside ppoll: a signal that
  // arrives after the look interrupts the wait instead of waiting out the timeout.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  if (!should_stop()) {
    timespec ts = to_timespec(timeout_s);
    int n = ppoll(fds.data(), fds.size(), &ts, &old);
    if (n < 0) fds.clear();  // EINTR: a signal; the flag is looked at below
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);

  for (size_t k = 0; k < fds.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)) || owner[k].second == 2) continue;
    read_some(owner[k].first, owner[k].second);
  }
  for (size_t i = 0; i < children_.size(); ++i)
    if (children_[i].running && reap(i, false)) ev.exited.push_back(i);
  ev.stopped = should_stop();
  return ev;
}

void RankSet::signal(size_t i, int sig) {
  if (children_[i].running) kill_group(children_[i].pid, sig);
}

void RankSet::kill_all() {
  for (size_t i = 0; i < children_.size(); ++i) signal(i, SIGKILL);
}

void RankSet::drain(double seconds) {
  const double until = now_s() + seconds;
  for (size_t i = 0; i < children_.size(); ++i) {
    for (int w = 0; w < 2; ++w) {
      int& fd = children_[i].fd[w];
      while (fd >= 0 && now_s() < until) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 20) > 0 && !read_some(i, w)) break;
      }
      close_fd(fd);
    }
  }
}

}  // namespace ddpbisect
