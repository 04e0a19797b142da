#include "launch/process.hpp"

#include "launch/process_tree.hpp"
#include "launch/rank_set.hpp"

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
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace ddpbisect {

namespace {

// Children whose owner reaps them (a RankSet, run_capture): reap_orphans leaves these alone. The
// lock is held across fork, so no child is ever unregistered when it could first be reaped.
std::mutex owned_mutex;
std::set<pid_t> owned;

[[noreturn]] void child_fail(int report_fd, int err) {
  ssize_t ignored = write(report_fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// What the forked child needs, prepared before fork: it only calls async-signal-safe functions.
struct ChildPlan {
  char* const* argv;
  char* const* envp;
  const char* path;  // the rank's own PATH, for a bare program name
  const char* cwd;
  const char* const* cgroups;  // cgroup.procs files to join, null-terminated
  pid_t parent;
  int out, err, report;  // write ends: stdout, stderr, and the exec-failure report
};

// In the child: its own process group, death with the driver, default signals, the pipes, then
// exec (a PATH lookup without a shell). Reports errno through `report` when nothing ran.
[[noreturn]] void exec_child(const ChildPlan& c) {
  // Into the trial's cgroups first: everything this child starts is born inside them.
  for (const char* const* f = c.cgroups; *f; ++f) {
    int fd = open(*f, O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t ignored = write(fd, "0", 1);
    (void)ignored;
    close(fd);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != c.parent) _exit(127);  // the driver died between fork and prctl
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  dup2(c.out, STDOUT_FILENO);
  dup2(c.err, STDERR_FILENO);
  if (*c.cwd && chdir(c.cwd) != 0) child_fail(c.report, errno);
  const char* name = c.argv[0];
  if (std::strchr(name, '/')) {
    execve(name, c.argv, c.envp);
    child_fail(c.report, errno);
  }
  char buf[4096];
  int last = ENOENT;
  for (const char* p = c.path; *p;) {
    const char* colon = std::strchr(p, ':');
    size_t len = colon ? static_cast<size_t>(colon - p) : std::strlen(p);
    if (len + std::strlen(name) + 2 < sizeof buf) {
      std::memcpy(buf, p, len);
      buf[len] = '/';
      std::strcpy(buf + len + 1, name);
      execve(buf, c.argv, c.envp);
      if (errno != ENOENT) last = errno;
    }
    p = colon ? colon + 1 : p + len;
  }
  child_fail(c.report, last);
}
}  // namespace

StartResult start_process(const ProcessSpec& spec) {
  StartResult result;
  if (spec.argv.empty()) return {{}, "empty command"};
  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(report, O_CLOEXEC))
    return {{}, std::string("pipe: ") + std::strerror(errno)};
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<const char*> cgroups;
  for (const auto& f : spec.join_cgroups) cgroups.push_back(f.c_str());
  cgroups.push_back(nullptr);
  ChildPlan plan{argv.data(),      envp.data(),    "/usr/local/bin:/usr/bin:/bin",
                 spec.cwd.c_str(), cgroups.data(), getpid(),
                 out[1],           err[1],         report[1]};
  if (auto it = spec.env.find("PATH"); it != spec.env.end() && !it->second.empty())
    plan.path = it->second.c_str();

  std::unique_lock<std::mutex> registry(owned_mutex);
  pid_t pid = fork();
  if (pid < 0) return {{}, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) exec_child(plan);
  owned.insert(pid);
  registry.unlock();
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
    disown_child(pid);
    close(out[0]);
    close(err[0]);
    return {{}, "cannot run " + spec.argv[0] + ": " + std::strerror(child_errno)};
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  result.child.pid = pid;
  result.child.out_fd = out[0];
  result.child.err_fd = err[0];
  return result;
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
  output.clear();
  auto keep = [&](size_t, Stream, const char* data, size_t n) {
    if (output.size() < cap) output.append(data, std::min(n, cap - output.size()));
  };
  // Only `stop` ends a helper early: library callers pass the interrupt check themselves.
  RankSet set(
      keep, stop ? stop : [] { return false; });
  StartResult started = set.start(spec);
  if (!started.ok()) {
    output = started.error;
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool cut_short = false;
  while (set.running(0)) {
    double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || set.wait(std::min(left, 0.2)).stopped) {
      cut_short = true;
      break;
    }
  }
  set.kill_all();  // a helper's leftover descendants go with it
  if (cut_short) return -1;
  set.drain(0.2);
  kill_group(set.pid(0));
  return set.status(0).shell_code();
}

void kill_group(pid_t pid, int sig) {
  if (pid <= 0) return;
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

bool group_has_live_member(pid_t pgid) {
  if (pgid <= 0 || kill(-pgid, 0) != 0) return false;  // ESRCH: no member at all
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  bool found = false;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state = '?';
    long ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
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
    const std::string env = read_kernel_file(std::string("/proc/") + e->d_name + "/environ");
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

namespace {
bool is_owned(pid_t pid) {
  std::lock_guard<std::mutex> lock(owned_mutex);
  return owned.count(pid) > 0;
}
}  // namespace

void disown_child(pid_t pid) {
  std::lock_guard<std::mutex> lock(owned_mutex);
  owned.erase(pid);
}

int reap_orphans() {
  std::lock_guard<std::mutex> lock(owned_mutex);
  int reaped = 0;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    pid_t ppid = 0;
    char state = '?';
    if (*end || pid <= 0 || owned.count(static_cast<pid_t>(pid))) continue;
    if (proc_state(static_cast<pid_t>(pid), ppid, state) && ppid == self && state == 'Z' &&
        waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG) > 0)
      ++reaped;
  }
  closedir(proc);
  return reaped;
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    pid_t ppid = 0;
    char state = '?';
    if (*end || pid <= 0) continue;
    if (proc_state(static_cast<pid_t>(pid), ppid, state) && ppid == parent && state != 'Z')
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

std::map<std::string, std::string> process_environment(pid_t pid) {
  std::map<std::string, std::string> env;
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

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
      if (ppid == self && !is_owned(p)) waitpid(p, nullptr, state == 'Z' ? 0 : WNOHANG);
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
