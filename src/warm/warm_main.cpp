// ddpbisect-warm: the stand-in for one rank of a warm-started trial (`workload.preload`,
// docs/agent.md "Warm starts"). It runs where the rank would (in the trial's cgroup and its
// isolated view of the working folder, with the rank's environment) and asks the reduction's fork
// server (python/agent/ddpbisect_agent/warm.py) for a rank forked from a Python that has already
// imported the preloaded modules:
//
//   ddpbisect-warm --socket NAME --child 0000000000 -- python SCRIPT ARGS...
//
// It sends its cwd, argv and environment with its stdin/stdout/stderr, forwards the signals the
// driver sends a rank (SIGTERM, SIGINT, SIGHUP, SIGQUIT) to the forked rank, and ends as the rank
// ended (its exit code, or the same signal). The rank's pid is written over the --child digits, so
// that the driver (observe/trial_watch.cpp) sees it in /proc/PID/cmdline and watches its CPU time
// and asks it for stacks. When the server cannot be reached or declines (another interpreter, a
// `python -c` command, a pid namespace of its own), the command starts cold here, with one line on
// stderr saying why. Exit status: the rank's; 127 when the cold command cannot start.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

const char* kMe = "ddpbisect-warm";
volatile sig_atomic_t g_child = 0;

[[noreturn]] void run_cold(char** argv, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: cold start: %s\n", kMe, why.c_str());
  std::fflush(stderr);
  ::execvp(argv[0], argv);
  std::fprintf(stderr, "%s: %s: %s\n", kMe, argv[0], std::strerror(errno));
  std::_Exit(127);
}

void forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

int connect_to(const std::string& name) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(addr.sun_path)) {
    ::close(fd);
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract: sun_path[0] == 0
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

// cwd NUL argc NUL argv... NUL env... NUL, with fds 0, 1 and 2.
bool send_request(int fd, char** argv) {
  std::string msg;
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof(cwd))) return false;
  msg.append(cwd).push_back('\0');
  int argc = 0;
  while (argv[argc]) ++argc;
  msg.append(std::to_string(argc)).push_back('\0');
  for (int i = 0; i < argc; ++i) msg.append(argv[i]).push_back('\0');
  for (char** e = environ; *e; ++e) msg.append(*e).push_back('\0');
  iovec iov{msg.data(), msg.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
  const int fds[3] = {0, 1, 2};
  std::memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  return ::sendmsg(fd, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size());
}

// Writes the rank's pid over the digits of the --child argument, in place: /proc/PID/cmdline
// shows the new text.
void publish_child(char* digits, pid_t pid) {
  if (!digits) return;
  const size_t width = std::strlen(digits);
  std::string text = std::to_string(pid);
  if (text.size() > width) return;
  text.insert(0, width - text.size(), '0');
  std::memcpy(digits, text.data(), width);
}

[[noreturn]] void end_as(int status) {
  if (WIFEXITED(status)) std::_Exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);
    std::_Exit(128 + sig);
  }
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string name;
  char* digits = nullptr;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--socket" && i + 1 < argc) {
      name = argv[++i];
    } else if (a == "--child" && i + 1 < argc) {
      digits = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s --socket NAME [--child DIGITS] -- PROGRAM ARGS...\n", kMe);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "%s: no command after --\n", kMe);
    return 2;
  }
  char** command = argv + i;
  if (name.empty()) run_cold(command, "no --socket");
  const int fd = connect_to(name);
  if (fd < 0) run_cold(command, std::string("no fork server (") + std::strerror(errno) + ")");

  // Signals that reach us before the rank exists are forwarded once it does (the pid arrives
  // first); until then they are held.
  sigset_t held;
  sigemptyset(&held);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&held, sig);
  ::sigprocmask(SIG_BLOCK, &held, nullptr);
  if (!send_request(fd, command))
    run_cold(command, std::string("cannot send the request: ") + std::strerror(errno));

  bool ready = false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf) - 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The server is gone: so is the rank it forked (or it never ran).
      if (g_child > 0) ::kill(g_child, SIGKILL);
      if (!ready) {
        ::sigprocmask(SIG_UNBLOCK, &held, nullptr);
        run_cold(command, "the fork server closed the connection");
      }
      std::fprintf(stderr, "%s: the fork server went away\n", kMe);
      return 1;
    }
    buf[n] = '\0';
    const std::string msg(buf, static_cast<size_t>(n));
    if (msg.rfind("pid ", 0) == 0) {
      g_child = static_cast<pid_t>(std::atol(buf + 4));
      publish_child(digits, g_child);
      struct sigaction sa {};
      sa.sa_handler = forward;
      sa.sa_flags = SA_RESTART;
      for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &sa, nullptr);
      ::sigprocmask(SIG_UNBLOCK, &held, nullptr);
    } else if (msg == "ready") {
      ready = true;
    } else if (msg.rfind("fail ", 0) == 0) {
      ::close(fd);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
      g_child = 0;
      ::sigprocmask(SIG_UNBLOCK, &held, nullptr);
      run_cold(command, msg.substr(5));
    } else if (msg.rfind("exit ", 0) == 0) {
      end_as(std::atoi(buf + 5));
    }
  }
}
