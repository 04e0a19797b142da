#include "observe/stacks.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/text.hpp"
#include "launch/process.hpp"
#include "launch/rank_set.hpp"
#include "launch/torchrun.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

bool python_ranks(const Spec& spec) {
  if (!spec.command || spec.command->argv.empty()) return false;
  const auto& argv = spec.command->argv;
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

std::map<std::string, std::string> flight_recorder_env(const std::string& dir) {
  return {{"TORCH_FR_BUFFER_SIZE", "2000"},
          {"TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"},
          {"TORCH_NCCL_DUMP_ON_TIMEOUT", "1"},
          {"TORCH_FR_DUMP_TEMP_FILE", dir + "/rank"},
          {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", dir + "/rank"},
          {"DDPBISECT_FR_DUMP", dir}};
}

}  // namespace ddpbisect
