#include "launch/warm_server.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "launch/process_tree.hpp"
#include "launch/rank_plan.hpp"
#include "launch/torchrun.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

namespace {
const char* kChildDigits = "0000000000";

// Whether an abstract Unix socket named `name` is bound on this host (/proc/net/unix lists it
// as @name): the server binds once its imports are done.
bool socket_bound(const std::string& name) {
  std::ifstream in("/proc/net/unix");
  std::string line;
  const std::string want = " @" + name;
  while (std::getline(in, line))
    if (ends_with(line, want)) return true;
  return false;
}
}  // namespace

std::unique_ptr<WarmServer> WarmServer::start(const ProcessSpec& process,
                                              const std::vector<std::string>& modules,
                                              const std::string& log, std::string& why) {
  if (process.argv.empty()) {
    why = "no command";
    return nullptr;
  }
  std::unique_ptr<WarmServer> server(new WarmServer());
  server->socket_ = "ddpbisect-warm-" + random_token();
  std::string list;
  for (const auto& m : modules) list += (list.empty() ? "" : ",") + m;
  ProcessSpec spec = process;
  spec.argv = {
      process.argv[0], "-m", "ddpbisect_agent.warm", "--socket", server->socket_, "--preload", list,
      "--log",         log};
  spec.join_cgroups.clear();
  server->keeper_ = std::thread([s = server.get(), spec] { s->keep(spec); });
  {
    std::unique_lock<std::mutex> lock(server->mutex_);
    server->changed_.wait(lock, [&] { return server->started_; });
  }
  if (server->pid_ <= 0) {
    why = server->start_error_;
    return nullptr;  // the keeper has ended; the destructor joins it
  }
  // The server binds once its imports are done (seconds: torch alone takes ~2 s); a server that
  // dies first is reported, not waited for. This wait is outside every trial's clock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!socket_bound(server->socket_) && std::chrono::steady_clock::now() < deadline) {
    pid_t ppid = 0;
    char state = '?';
    if (interrupt_signal() != 0 || !proc_state(server->pid_, ppid, state) || state == 'Z') break;
    ::usleep(10000);
  }
  if (!socket_bound(server->socket_)) {
    why = "the fork server did not start (see " + log + ")";
    return nullptr;
  }
  return server;
}

void WarmServer::keep(const ProcessSpec& spec) {
  StartResult r = start_process(spec);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = true;
    if (r.ok()) {
      // Its output goes to the log (warm.py redirects it): the pipes are not read.
      ::close(r.child.out_fd);
      ::close(r.child.err_fd);
      pid_ = r.child.pid;
    } else {
      start_error_ = r.error;
    }
  }
  changed_.notify_all();
  if (!r.ok()) return;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stopping_; });
  }
  kill_group(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  disown_child(pid_);
}

WarmServer::~WarmServer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

bool warm_startable(const std::vector<std::string>& argv) {
  if (argv.size() < 2 || fs::path(argv[0]).filename().string().rfind("python", 0) != 0)
    return false;
  if (parse_torchrun(argv)) return false;  // the launcher's agents start the ranks, not a fork
  size_t i = 1;
  while (i < argv.size() && (argv[i] == "-u" || argv[i] == "-B")) ++i;
  if (i >= argv.size()) return false;
  if (argv[i] == "-m") return i + 1 < argv.size();
  return argv[i].empty() || argv[i][0] != '-';
}

std::string warm_stub_path() {
  return companion_path("DDPBISECT_WARM", "ddpbisect-warm");
}

std::vector<std::string> warm_argv(const std::string& socket,
                                   const std::vector<std::string>& argv) {
  std::vector<std::string> out = {warm_stub_path(), "--socket",   socket,
                                  "--child",        kChildDigits, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

pid_t warm_rank_pid(pid_t stub) {
  const std::string text = read_kernel_file("/proc/" + std::to_string(stub) + "/cmdline");
  // argv[0] is the stub; its first arguments are --socket NAME --child DIGITS.
  const std::vector<std::string> argv = split(text, '\0');
  if (argv.size() < 5 || fs::path(argv[0]).filename() != "ddpbisect-warm" || argv[3] != "--child")
    return -1;
  const long pid = std::strtol(argv[4].c_str(), nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : -1;
}

}  // namespace ddpbisect
