#include "launch/cgroup.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/text.hpp"
#include "launch/process_tree.hpp"

namespace ddpbisect {

namespace {

// One mounted hierarchy: where it is, which controllers it carries (v1), and this process's
// group in it.
struct Hierarchy {
  std::string mount;
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the mount options
  std::string own;                       // our group's folder
};

bool has(const std::vector<std::string>& v, const std::string& x) {
  for (const auto& e : v)
    if (e == x) return true;
  return false;
}

// Our group per hierarchy, from /proc/self/cgroup: "0::/path" (v2), "N:memory:/path" (v1).
std::string own_path(bool v2, const std::vector<std::string>& controllers) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto parts = split(line, ':');
    if (parts.size() < 3) continue;
    std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    if (v2 && parts[0] == "0" && parts[1].empty()) return path;
    if (!v2)
      for (const auto& c : split(parts[1], ','))
        if (has(controllers, c)) return path;
  }
  return "/";
}

std::vector<Hierarchy> hierarchies() {
  std::vector<Hierarchy> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto left = split(line.substr(0, dash), ' ');
    auto right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    Hierarchy h;
    h.mount = left[4];
    const std::string& root = left[3];
    if (right[0] == "cgroup2") {
      h.v2 = true;
    } else if (right[0] == "cgroup") {
      for (const auto& opt : split(right[2], ','))
        if (opt == "memory" || opt == "pids") h.controllers.push_back(opt);
      if (h.controllers.empty()) continue;
    } else {
      continue;
    }
    std::string own = own_path(h.v2, h.controllers);
    // A mount of a subtree (a container's view): our path relative to its root.
    if (root != "/" && starts_with(own, root)) own = own.substr(root.size());
    h.own = h.mount + (own == "/" ? "" : own);
    out.push_back(h);
  }
  return out;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return false;
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// The counter `key` of a flat keyed file such as memory.events ("oom_kill 3").
int64_t counter(const std::string& file, const std::string& key) {
  if (file.empty()) return 0;
  std::istringstream in(read_kernel_file(file));
  std::string k;
  int64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

std::vector<pid_t> members(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_kernel_file(dir + "/cgroup.procs"));
  long p = 0;
  while (in >> p) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

bool make_dir(const std::string& dir) {
  return mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

// Turns on `controllers` for the children of `dir` (v2); true when they are all on.
bool enable_controllers(const std::string& dir, const std::vector<std::string>& controllers) {
  for (const auto& c : controllers) {
    if (read_kernel_file(dir + "/cgroup.subtree_control").find(c) != std::string::npos) continue;
    if (!write_file(dir + "/cgroup.subtree_control", "+" + c)) return false;
  }
  return true;
}

}  // namespace

TrialCgroup TrialCgroup::create(const std::string& name, const CgroupLimits& limits) {
  TrialCgroup g;
  std::vector<std::string> notes;
  const auto all = hierarchies();
  const Hierarchy* v2 = nullptr;
  const Hierarchy* mem1 = nullptr;
  const Hierarchy* pids1 = nullptr;
  for (const auto& h : all) {
    if (h.v2) v2 = &h;
    if (has(h.controllers, "memory")) mem1 = &h;
    if (has(h.controllers, "pids")) pids1 = &h;
  }
  // The v2 side: controllers it must carry for the limits the v1 side does not take.
  if (v2) {
    std::vector<std::string> want;
    const std::string offered = read_kernel_file(v2->mount + "/cgroup.controllers");
    if (limits.memory_bytes && !mem1 && offered.find("memory") != std::string::npos)
      want.push_back("memory");
    if (limits.max_procs && !pids1 && offered.find("pids") != std::string::npos)
      want.push_back("pids");
    const std::string shared = v2->mount + "/ddpbisect.trials";
    for (const std::string& parent : {v2->own, shared}) {
      if (parent == shared && !(make_dir(shared) && enable_controllers(v2->mount, want))) break;
      std::string dir = parent + "/" + name;
      if (!enable_controllers(parent, want) || !make_dir(dir)) continue;
      g.v2_ = dir;
      if (has(want, "memory")) {
        write_file(dir + "/memory.max", std::to_string(*limits.memory_bytes));
        write_file(dir + "/memory.swap.max", "0");
        g.memory_events_ = dir + "/memory.events";
      }
      if (has(want, "pids")) {
        write_file(dir + "/pids.max", std::to_string(*limits.max_procs));
        g.pids_events_ = dir + "/pids.events";
      }
      break;
    }
    if (g.v2_.empty()) notes.push_back("no writable cgroup v2 group under " + v2->own);
  }
  if (limits.memory_bytes && mem1 && make_dir(mem1->own + "/" + name)) {
    g.memory_v1_ = mem1->own + "/" + name;
    write_file(g.memory_v1_ + "/memory.limit_in_bytes", std::to_string(*limits.memory_bytes));
    // Where swap is accounted, it must not take what the limit refuses.
    write_file(g.memory_v1_ + "/memory.memsw.limit_in_bytes", std::to_string(*limits.memory_bytes));
    g.memory_events_ = g.memory_v1_ + "/memory.oom_control";
  }
  if (limits.max_procs && pids1 && make_dir(pids1->own + "/" + name)) {
    g.pids_v1_ = pids1->own + "/" + name;
    write_file(g.pids_v1_ + "/pids.max", std::to_string(*limits.max_procs));
    g.pids_events_ = g.pids_v1_ + "/pids.events";
  }
  for (const std::string* d : {&g.v2_, &g.memory_v1_, &g.pids_v1_})
    if (!d->empty()) g.dirs_.push_back(*d);

  if (limits.memory_bytes && g.memory_events_.empty())
    g.unenforced_ += "limits.memory: no memory controller this process may use; ";
  if (limits.max_procs && g.pids_events_.empty())
    g.unenforced_ += "limits.max_procs: no pids controller this process may use; ";
  if (!g.v2_.empty()) notes.insert(notes.begin(), "cgroup v2 " + g.v2_);
  if (!g.memory_v1_.empty()) notes.push_back("memory v1 " + g.memory_v1_);
  if (!g.pids_v1_.empty()) notes.push_back("pids v1 " + g.pids_v1_);
  if (g.dirs_.empty()) notes.push_back("token sweep only (no cgroup could be made)");
  g.describe_ = join(notes, "; ");
  return g;
}

TrialCgroup::~TrialCgroup() {
  remove();
}

TrialCgroup::TrialCgroup(TrialCgroup&& o) noexcept {
  *this = std::move(o);
}

TrialCgroup& TrialCgroup::operator=(TrialCgroup&& o) noexcept {
  if (this != &o) {
    remove();
    dirs_ = std::move(o.dirs_);
    v2_ = std::move(o.v2_);
    memory_v1_ = std::move(o.memory_v1_);
    pids_v1_ = std::move(o.pids_v1_);
    memory_events_ = std::move(o.memory_events_);
    pids_events_ = std::move(o.pids_events_);
    describe_ = std::move(o.describe_);
    unenforced_ = std::move(o.unenforced_);
    o.dirs_.clear();
  }
  return *this;
}

std::vector<std::string> TrialCgroup::procs_files() const {
  std::vector<std::string> files;
  for (const auto& d : dirs_) files.push_back(d + "/cgroup.procs");
  return files;
}

CgroupEvents TrialCgroup::events() const {
  CgroupEvents e;
  e.oom_kills = counter(memory_events_, "oom_kill");
  e.fork_refusals = counter(pids_events_, "max");
  return e;
}

int TrialCgroup::kill_all(double timeout_s) const {
  if (dirs_.empty()) return 0;
  const std::string& dir = dirs_.front();
  const int before = static_cast<int>(members(dir).size());
  // cgroup.kill (v2, Linux 5.14+) kills the group at once, forks in flight included; else
  // freeze it (v2) so that nothing forks while each member is killed, and repeat until empty.
  const bool killed = !v2_.empty() && write_file(dir + "/cgroup.kill", "1");
  const bool frozen = !killed && !v2_.empty() && write_file(dir + "/cgroup.freeze", "1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int round = 0; std::chrono::steady_clock::now() < deadline; ++round) {
    auto pids = members(dir);
    if (pids.empty()) break;
    if (!killed)
      for (pid_t p : pids) kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(round < 10 ? 2 : 10));
  }
  if (frozen) write_file(dir + "/cgroup.freeze", "0");
  return before;
}

void TrialCgroup::remove() {
  if (dirs_.empty()) return;
  kill_all();
  // v1 groups can still hold a killed process for a moment: retry briefly.
  for (int round = 0; round < 50; ++round) {
    bool left = false;
    for (const auto& d : dirs_)
      if (rmdir(d.c_str()) != 0 && errno != ENOENT) left = true;
    if (!left) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  dirs_.clear();
}

int kill_cgroup_dirs(const std::vector<std::string>& dirs) {
  int found = 0;
  for (const auto& dir : dirs) {
    if (access((dir + "/cgroup.procs").c_str(), F_OK) != 0) continue;
    found = std::max(found, static_cast<int>(members(dir).size()));
    write_file(dir + "/cgroup.kill", "1");
    for (int round = 0; round < 200; ++round) {
      auto pids = members(dir);
      if (pids.empty()) break;
      for (pid_t p : pids) kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    rmdir(dir.c_str());
  }
  return found;
}

}  // namespace ddpbisect
