#include "launch/process_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ddpbisect {

std::string read_kernel_file(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // the end, or the process is gone (ESRCH): what was read so far
    }
  }
  ::close(fd);
  return out;
}

namespace {

bool read_stat(pid_t pid, pid_t& ppid, char& state, double& cpu) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) return false;
  std::istringstream fields(line.substr(close_paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  long parent = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 3) state = f.empty() ? '?' : f[0];
    if (i == 4) parent = std::strtol(f.c_str(), nullptr, 10);
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  ppid = static_cast<pid_t>(parent);
  cpu = static_cast<double>(utime + stime) / ticks;
  return true;
}

}  // namespace

ProcessTable ProcessTable::read() {
  ProcessTable t;
  DIR* proc = opendir("/proc");
  if (!proc) return t;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    Entry en;
    if (!read_stat(static_cast<pid_t>(pid), en.ppid, en.state, en.cpu)) continue;
    t.procs_[static_cast<pid_t>(pid)] = en;
    t.children_.emplace(en.ppid, static_cast<pid_t>(pid));
  }
  closedir(proc);
  return t;
}

std::vector<pid_t> ProcessTable::tree(pid_t root) const {
  std::vector<pid_t> out;
  auto it = procs_.find(root);
  if (root <= 0 || it == procs_.end() || it->second.state == 'Z') return out;
  out.push_back(root);
  for (size_t i = 0; i < out.size() && out.size() < 4096; ++i) {
    auto [b, e] = children_.equal_range(out[i]);
    for (auto c = b; c != e; ++c) {
      auto p = procs_.find(c->second);
      if (p != procs_.end() && p->second.state != 'Z') out.push_back(c->second);
    }
  }
  return out;
}

double ProcessTable::cpu_seconds(pid_t pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? -1 : it->second.cpu;
}

char ProcessTable::state(pid_t pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? '?' : it->second.state;
}

int ProcessTable::runnable_except(const std::vector<pid_t>& except) const {
  std::ifstream in("/proc/stat");
  std::string key;
  long running = -1;
  for (std::string line; running < 0 && std::getline(in, line);)
    if (line.rfind("procs_running ", 0) == 0) running = std::strtol(line.c_str() + 14, nullptr, 10);
  if (running < 0) return 0;
  long ours = 1;  // the reader
  for (pid_t pid : except) {
    auto it = procs_.find(pid);
    if (it != procs_.end() && it->second.state == 'R') ++ours;
  }
  return static_cast<int>(std::max(0L, running - ours));
}

int64_t process_io_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  long long value = 0, sum = 0;
  bool any = false;
  while (in >> key >> value)
    if (key == "rchar:" || key == "wchar:") sum += value, any = true;
  return any ? sum : -1;
}

std::string process_wait_channel(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/wchan");
  std::string w;
  std::getline(in, w);
  return w == "0" ? "" : w;
}

double machine_load() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  std::string five, fifteen, running;
  if (!(in >> one >> five >> fifteen >> running)) return 0;
  const double now = std::strtod(running.c_str(), nullptr);  // "3/412": runnable/total
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? std::max(one, now) / static_cast<double>(cpus) : 0;
}

void TreeCounter::update(const ProcessTable& table, pid_t root) {
  std::map<pid_t, Last> now;
  io_wait_ = false;
  for (pid_t pid : table.tree(root)) {
    io_wait_ = io_wait_ || table.state(pid) == 'D';
    Last l{table.cpu_seconds(pid), process_io_bytes(pid)};
    auto it = last_.find(pid);
    // A process new to the tree brings what it used so far (it started since the last look,
    // or just joined the tree being watched).
    const Last before = it != last_.end() ? it->second : Last{0, 0};
    if (l.cpu > before.cpu) cpu_ += l.cpu - before.cpu;
    if (l.io > before.io) io_ += l.io - before.io;
    if (l.io < 0) l.io = before.io;
    now[pid] = l;
  }
  last_ = std::move(now);
}

}  // namespace ddpbisect
