#include "probe/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
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

std::string workload_python(const Spec& spec) {
  if (spec.command && !spec.command->argv.empty()) {
    const std::string& a0 = spec.command->argv[0];
    if (starts_with(fs::path(a0).filename().string(), "python")) return a0;
  }
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
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

  ProcessSpec probe{{python, "-c", versions_probe_script()}, env, ""};
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
