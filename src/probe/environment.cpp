#include "probe/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/interrupt.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "launch/process.hpp"
#include "probe/node_probe.hpp"

namespace ddpbisect {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The value of the first "prefix<sep>value" line (/proc/cpuinfo uses ':', /etc/os-release '=').
std::string first_value(const std::string& file, const std::string& prefix, char sep) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(sep);
    if (starts_with(line, prefix) && at != std::string::npos) {
      std::string v(trim(line.substr(at + 1)));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

// The last line of a helper's output that parses as a JSON object.
json last_json_line(const std::string& out) {
  json found = nullptr;
  for (const auto& line : split(out, '\n')) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) found = j;
  }
  return found;
}

}  // namespace

namespace {

// `name` as the shell would find it on PATH; "" when it is not there.
std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':')) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// The Python a script's "#!" line names (torchrun, accelerate, train.py): "/venv/bin/python3",
// or "python3" for "#!/usr/bin/env python3"; "" when the line names no Python.
std::string shebang_python(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line) || !starts_with(line, "#!")) return "";
  std::vector<std::string> words;
  for (auto& w : split(std::string(trim(line.substr(2))), ' '))
    if (!w.empty()) words.push_back(w);
  if (!words.empty() && fs::path(words[0]).filename() == "env") words.erase(words.begin());
  if (!words.empty() && starts_with(words[0], "-")) words.erase(words.begin());  // env -S
  if (words.empty() || !starts_with(fs::path(words[0]).filename().string(), "python")) return "";
  return words[0];
}

}  // namespace

std::string workload_python(const Spec& spec) {
  if (spec.command && !spec.command->argv.empty()) {
    const std::string& a0 = spec.command->argv[0];
    if (starts_with(fs::path(a0).filename().string(), "python")) {
      std::string found = on_path(a0);
      return found.empty() ? a0 : found;
    }
    std::string program = on_path(a0);
    if (!program.empty() && fs::path(program).is_relative())
      program = (fs::path(spec.command->cwd) / program).string();
    if (std::string py = shebang_python(program); !py.empty()) return py;
  }
#ifdef DDPBISECT_BUILD_PYTHON
  // The built-in worker links the libtorch of the Python it was built with.
  std::error_code ec;
  if (spec.builtin && fs::exists(DDPBISECT_BUILD_PYTHON, ec)) return DDPBISECT_BUILD_PYTHON;
#endif
  // A program that is not Python: the Python users run, first on PATH.
  if (std::string py = on_path("python3"); !py.empty()) return py;
  return "/usr/bin/python3";
}

json collect_environment(const std::string& python) {
  utsname u{};
  uname(&u);
  json j;
  j["ddpbisect"] = kVersion;
  j["os"] = first_value("/etc/os-release", "PRETTY_NAME", '=');
  j["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  j["hostname"] = u.nodename;
  j["cpu"] = first_value("/proc/cpuinfo", "model name", ':');
  j["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  auto env = current_environment();

  ProcessSpec probe{{python, "-c", node_probe_script(), "versions"}, env, ""};
  std::string out;
  // Ctrl-C ends the probe at once: a stopped reduction does not wait for torch to import.
  const auto interrupted = [] { return interrupt_signal() != 0; };
  int rc = run_capture(probe, 60, out, 1 << 20, interrupted);
  json py = last_json_line(out);
  j["python_probe"] = python;
  for (const char* k : {"python", "torch", "cuda", "cudnn", "nccl", "gpus", "gloo"})
    j[k] = py.is_object() && py.contains(k) ? py[k] : json(nullptr);
  if (!py.is_object())
    j["probe_error"] = "`" + python + " -c ...` exited " + std::to_string(rc) + ": " +
                       std::string(trim(out.substr(0, 300)));
  else if (py.contains("torch_error"))
    j["probe_error"] = py["torch_error"];

  // What a PyTorch issue asks for, as `python -m torch.utils.collect_env` prints it (its main()
  // prints get_pretty_env_info() after one line of its own).
  std::string text;
  auto quiet = env;
  quiet["PYTHONWARNINGS"] = "ignore";
  ProcessSpec ce{{python, "-c",
                  "from torch.utils import collect_env\nprint(collect_env.get_pretty_env_info())"},
                 quiet,
                 ""};
  int ce_rc = run_capture(ce, 180, text, 1 << 20, interrupted);
  j["collect_env"] = ce_rc == 0 ? json(redact_value("", text)) : json(nullptr);
  if (ce_rc != 0)
    j["collect_env_error"] = "`" + python + " -m torch.utils.collect_env` exited " +
                             std::to_string(ce_rc) + ": " + std::string(trim(text.substr(0, 300)));

  // The GPU driver comes from nvidia-smi, when there is one.
  j["gpu_driver"] = nullptr;
  std::string smi_out;
  ProcessSpec smi{{"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"}, env, ""};
  if (run_capture(smi, 20, smi_out, 1 << 20, interrupted) == 0 && !trim(smi_out).empty())
    j["gpu_driver"] = std::string(trim(split(smi_out, '\n')[0]));

  json vars = json::object();
  for (const auto& [name, value] : env)
    if (starts_with(name, "NCCL_") || starts_with(name, "TORCH_") || starts_with(name, "MASTER_") ||
        starts_with(name, "GLOO_") || starts_with(name, "CUDA_") || name == "OMP_NUM_THREADS")
      vars[name] = redact_value(name, value);
  j["variables"] = vars;
  return j;
}

}  // namespace ddpbisect
