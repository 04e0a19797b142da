#include "observe/stacks.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "common/text.hpp"
#include "launch/process.hpp"
#include "launch/process_tree.hpp"
#include "launch/rank_plan.hpp"
#include "launch/rank_set.hpp"
#include "launch/torchrun.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

bool python_ranks(const Spec& spec) {
  if (!spec.command || spec.command->argv.empty()) return false;
  const auto argv = command_argv(*spec.command);  // a deepspeed form's: its ranks'
  if (auto torchrun = parse_torchrun(argv)) {
    for (const auto& o : torchrun->options)
      if (o == "--no-python" || o == "--no_python")
        return !torchrun->program.empty() &&
               fs::path(torchrun->program[0]).filename().string().find("python") !=
                   std::string::npos;
    return true;
  }
  return fs::path(argv[0]).filename().string().find("python") != std::string::npos;
}

int stack_signal(const Spec& spec) {
  return python_ranks(spec) ? SIGABRT : SIGUSR1;
}

std::string find_py_spy(const std::string& path) {
  if (const char* v = std::getenv("DDPBISECT_PY_SPY")) {
    std::string s = v;
    return s == "0" ? "" : s;
  }
  for (const auto& dir : split(path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/py-spy";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string render_py_spy(const nlohmann::json& threads) {
  if (!threads.is_array()) return "";
  std::string main, others;
  for (const auto& th : threads) {
    if (!th.is_object()) continue;
    const bool is_main = th.value("os_thread_id", -1L) == th.value("pid", -2L);
    char head[96];
    std::snprintf(head, sizeof head, "%s 0x%016llx (most recent call first):\n",
                  is_main ? "Current thread" : "Thread",
                  static_cast<unsigned long long>(th.value("thread_id", 0ULL)));
    std::string text = head;
    for (const auto& f : th.value("frames", nlohmann::json::array())) {
      // py-spy names methods "Class.method"; faulthandler prints the code object's name.
      std::string name = f.value("name", "?");
      if (size_t dot = name.rfind('.'); dot != std::string::npos && name.back() != '>')
        name = name.substr(dot + 1);
      text += "  File \"" + f.value("filename", "?") + "\", line " +
              std::to_string(f.value("line", 0)) + " in " + name + "\n";
    }
    (is_main ? main : others) += text + "\n";
  }
  return main + others;
}

namespace {

// One `py-spy dump --json` of `pid`: its stdout only (warnings go to stderr).
std::optional<std::string> py_spy_dump(const std::string& py_spy, pid_t pid, double timeout_s) {
  std::string json_text;
  RankSet set(
      [&](size_t, Stream s, const char* data, size_t n) {
        if (s == Stream::Out && json_text.size() < (16u << 20)) json_text.append(data, n);
      },
      [] { return false; });
  ProcessSpec p{
      {py_spy, "dump", "--json", "--pid", std::to_string(pid)}, current_environment(), ""};
  if (!set.start(p).ok()) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (set.running(0) && std::chrono::steady_clock::now() < deadline) set.wait(0.1);
  if (set.running(0)) return std::nullopt;  // the set kills it
  set.drain(0.2);
  if (set.status(0).shell_code() != 0) return std::nullopt;
  std::string rendered = render_py_spy(nlohmann::json::parse(json_text, nullptr, false));
  if (rendered.empty()) return std::nullopt;
  return rendered;
}

}  // namespace

std::vector<std::optional<std::string>> py_spy_dumps(const std::string& py_spy,
                                                     const std::vector<pid_t>& pids,
                                                     double timeout_s) {
  std::vector<std::optional<std::string>> out(pids.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < pids.size(); ++i)
    threads.emplace_back([&, i] { out[i] = py_spy_dump(py_spy, pids[i], timeout_s); });
  for (auto& t : threads) t.join();
  return out;
}

namespace {

std::string base_name(const std::string& path) {
  return fs::path(path).filename().string();
}

bool is_python(const ProcessFacts& p) {
  return starts_with(base_name(p.exe), "python");
}

// A Python that only starts another program: `conda run`, `mamba run`.
bool python_wrapper(const ProcessFacts& p) {
  if (p.argv.size() < 2) return false;
  const std::string script = base_name(p.argv[1]);
  return script == "conda" || script == "mamba";
}

}  // namespace

ProcessFacts process_facts(pid_t pid) {
  ProcessFacts p;
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::string cmdline = read_kernel_file(dir + "/cmdline");
  if (cmdline.empty()) return p;  // gone, or a kernel thread
  p.argv = split(cmdline.back() == '\0' ? cmdline.substr(0, cmdline.size() - 1) : cmdline, '\0');
  std::error_code ec;
  p.exe = fs::read_symlink(dir + "/exe", ec).string();
  if (ec || p.exe.empty()) p.exe = p.argv.empty() ? "" : p.argv[0];
  for (const auto& line : split(read_kernel_file(dir + "/status"), '\n'))
    if (starts_with(line, "SigCgt:")) p.caught = std::strtoull(line.c_str() + 7, nullptr, 16);
  p.pid = pid;
  return p;
}

int agent_stack_signal(const std::map<std::string, std::string>& env) {
  auto it = env.find("DDPBISECT_STACK_SIGNAL");
  if (it == env.end()) return SIGUSR2;
  char* end = nullptr;
  long n = std::strtol(it->second.c_str(), &end, 10);
  return end && *end == '\0' && n > 0 && n < 64 ? static_cast<int>(n) : SIGUSR2;
}

int stack_signal_for(const ProcessFacts& p, bool under_python, int agent_signal) {
  if (agent_signal > 0 && agent_signal <= 64 && (p.caught >> (agent_signal - 1)) & 1)
    return agent_signal;
  if (is_python(p)) return under_python || python_wrapper(p) ? 0 : SIGABRT;
  if (base_name(p.exe) == "ddpbisect-worker") return SIGUSR1;
  return 0;
}

std::vector<std::pair<pid_t, int>> stack_requests(pid_t root, int agent_signal) {
  std::vector<std::pair<pid_t, int>> out;
  // Breadth first: each process with whether a (non-wrapper) Python is above it.
  std::vector<std::pair<pid_t, bool>> queue{{root, false}};
  for (size_t i = 0; i < queue.size() && queue.size() < 4096; ++i) {
    const ProcessFacts p = process_facts(queue[i].first);
    if (p.pid == 0) continue;
    if (int sig = stack_signal_for(p, queue[i].second, agent_signal)) out.emplace_back(p.pid, sig);
    const bool python_here = queue[i].second || (is_python(p) && !python_wrapper(p));
    for (pid_t child : child_pids(p.pid)) queue.emplace_back(child, python_here);
  }
  return out;
}

std::map<std::string, std::string> flight_recorder_env(const std::string& dir) {
  return {{"TORCH_FR_BUFFER_SIZE", "2000"},
          {"TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"},
          {"TORCH_NCCL_DUMP_ON_TIMEOUT", "1"},
          {"TORCH_FR_DUMP_TEMP_FILE", dir + "/rank"},
          {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", dir + "/rank"},
          {"DDPBISECT_FR_DUMP", dir}};
}

// A line of a stack dump (faulthandler's, py-spy's, our worker's, the agent's trace): the answer
// to a stack request, never progress, however late it comes.
bool is_dump_line(std::string_view line) {
  auto starts = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
  return starts("Thread 0x") || starts("Current thread 0x") || starts("  File \"") ||
         starts("Stack (most recent call first)") || starts("DDPBISECT_COLLECTIVES ") ||
         starts("  <no Python frame>") || starts("Process ") || starts("Python v") ||
         starts("Thread ") || starts("    ") || starts("ddpbisect-worker stack dump") ||
         line.empty();
}

// Whether a dump holds a frame (faulthandler's, py-spy's and our worker's all print `File "…"`).
bool has_frames(const std::string& stack) {
  return stack.find("File \"") != std::string::npos;
}

// What a rank printed on stderr after the stack request: its dump.
std::string read_stack(const std::string& stderr_path, double requested_at) {
  std::ifstream err(stderr_path), times(stderr_path + ".times");
  std::string line, tline, stack;
  while (std::getline(err, line) && std::getline(times, tline))
    if (std::stod(tline) / 1000.0 + 1e-3 >= requested_at && stack.size() < (64 << 10))
      stack += line + "\n";
  return stack;
}

}  // namespace ddpbisect
