#include "launch/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace ddpbisect {

namespace {
[[noreturn]] void child_fail(int report_fd, int err) {
  ssize_t ignored = write(report_fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}
}  // namespace

std::string start_process(const ProcessSpec& spec, Child& child) {
  if (spec.argv.empty()) return "empty command";
  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(report, O_CLOEXEC))
    return std::string("pipe: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: it only calls async-signal-safe functions.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string path_var;
  if (auto it = spec.env.find("PATH"); it != spec.env.end()) path_var = it->second;
  pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the driver died between fork and prctl
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) child_fail(report[1], errno);
    if (std::strchr(argv[0], '/')) {
      execve(argv[0], argv.data(), envp.data());
    } else {
      // PATH lookup with the rank's own PATH, never through a shell.
      const char* p = path_var.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_var.c_str();
      char buf[4096];
      int last = ENOENT;
      while (*p) {
        const char* colon = std::strchr(p, ':');
        size_t len = colon ? static_cast<size_t>(colon - p) : std::strlen(p);
        if (len + std::strlen(argv[0]) + 2 < sizeof buf) {
          std::memcpy(buf, p, len);
          buf[len] = '/';
          std::strcpy(buf + len + 1, argv[0]);
          execve(buf, argv.data(), envp.data());
          if (errno != ENOENT) last = errno;
        }
        p = colon ? colon + 1 : p + len;
      }
      child_fail(report[1], last);
    }
    child_fail(report[1], errno);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before we ever signal it
  close(out[1]);
  close(err[1]);
  close(report[1]);
  int child_errno = 0;
  ssize_t n;
  do n = read(report[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    close(out[0]);
    close(err[0]);
    return "cannot run " + spec.argv[0] + ": " + std::strerror(child_errno);
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  child.pid = pid;
  child.out_fd = out[0];
  child.err_fd = err[0];
  return "";
}

std::string random_token() {
  static std::mutex m;
  static std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(getpid())};
  std::lock_guard<std::mutex> lock(m);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

int run_capture(const ProcessSpec& spec, double timeout_s, std::string& output, size_t cap,
                const std::function<bool()>& stop) {
  Child child;
  std::string error = start_process(spec, child);
  if (!error.empty()) {
    output = error;
    return -1;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int fds[2] = {child.out_fd, child.err_fd};
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || (stop && stop())) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (poll(p, 2, static_cast<int>(std::min<long long>(left, 200))) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = read(fds[i], buf, sizeof buf);
      if (n > 0 && output.size() < cap)
        output.append(buf, std::min(static_cast<size_t>(n), cap - output.size()));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  for (int fd : fds)
    if (fd >= 0) close(fd);
  if (timed_out) kill_group(child.pid);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill_group(child.pid);  // a helper's leftover descendants go with it
  if (timed_out) return -1;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

void kill_group(pid_t pid, int sig) {
  if (pid <= 0) return;
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

std::vector<pid_t> find_token(const std::string& token) {
  std::vector<pid_t> out;
  const std::string needle = "DDPBISECT_TRIAL_TOKEN=" + token;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    if (!in) continue;
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    while ((pos = env.find(needle, pos)) != std::string::npos) {
      bool starts = pos == 0 || env[pos - 1] == '\0';
      size_t after = pos + needle.size();
      if (starts && (after == env.size() || env[after] == '\0')) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
      pos = after;
    }
  }
  closedir(proc);
  return out;
}

namespace {
// Parent pid and state letter of a process, from /proc/PID/stat; false when it is gone.
bool proc_state(pid_t pid, pid_t& ppid, char& state) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 4 >= line.size()) return false;
  std::istringstream rest(line.substr(close_paren + 2));
  long parent = 0;
  rest >> state >> parent;
  ppid = static_cast<pid_t>(parent);
  return true;
}
}  // namespace

int sweep_token(const std::string& token, int rounds) {
  int killed = 0;
  const pid_t self = getpid();
  for (int i = 0; i < rounds; ++i) {
    bool any_alive = false;
    for (pid_t p : find_token(token)) {
      pid_t ppid = 0;
      char state = '?';
      if (!proc_state(p, ppid, state)) continue;
      if (state != 'Z') {
        kill(p, SIGKILL);
        ++killed;
        any_alive = true;
      }
      // Reap only this trial's processes that are our children (ranks, and orphans we
      // inherited as subreaper); never another trial's.
      if (ppid == self) waitpid(p, nullptr, state == 'Z' ? 0 : WNOHANG);
    }
    if (!any_alive && find_token(token).empty()) return killed;
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 5 * i));
  }
  return killed;
}

void become_child_subreaper() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(line.substr(close_paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(utime + stime) / ticks;
}

}  // namespace ddpbisect
