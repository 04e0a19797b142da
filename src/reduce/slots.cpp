#include "reduce/slots.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/text.hpp"
#include "launch/process.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

namespace {

std::vector<std::string> local_gpus() {
  std::vector<std::string> ids;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    for (const auto& id : split(v, ','))
      if (!trim(id).empty()) ids.emplace_back(trim(id));
    return ids;
  }
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != fs::directory_iterator(); ++it)
    ++n;
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

std::vector<std::string> allocation_nodes() {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (!list || !*list) return {};
  std::string out;
  ProcessSpec p{{"scontrol", "show", "hostnames", list}, current_environment(), ""};
  if (run_capture(p, 20, out) != 0) return {};
  std::vector<std::string> hosts;
  for (const auto& line : split(out, '\n'))
    if (!trim(line).empty()) hosts.emplace_back(trim(line));
  return hosts;
}

}  // namespace

Resources detect_resources(const Spec& spec) {
  Resources r;
  cpu_set_t set;
  CPU_ZERO(&set);
  r.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
  if (spec.command)
    if (auto it = spec.command->env.find("OMP_NUM_THREADS"); it != spec.command->env.end())
      r.cores_per_rank = std::max(1, std::atoi(it->second.c_str()));
  bool cuda = false;
  for (const auto& s : spec.stages) cuda = cuda || s.device == "cuda";
  if (cuda && spec.launcher.kind == "local") r.gpus = local_gpus();
  if (spec.launcher.kind == "slurm")
    r.hosts = !spec.launcher.hosts.empty() ? spec.launcher.hosts : allocation_nodes();
  return r;
}

SlotPool::SlotPool(Resources resources, int jobs)
    : all_(std::move(resources)),
      jobs_(jobs),
      free_cores_(all_.cores),
      free_gpus_(all_.gpus),
      free_hosts_(all_.hosts) {}

int SlotPool::cores_needed(const TrialConfig& c) const {
  const int64_t want = c.world_size() * all_.cores_per_rank;
  return static_cast<int>(std::min<int64_t>(want, all_.cores));
}

std::optional<Slot> SlotPool::acquire(const TrialConfig& c) {
  if (jobs_ > 0 && running_ >= jobs_) return std::nullopt;
  Slot s;
  s.cores = cores_needed(c);
  const bool gpus = c.device == "cuda" && !all_.gpus.empty();
  const size_t need_gpus =
      gpus ? std::min(all_.gpus.size(), static_cast<size_t>(c.world_size())) : 0;
  const size_t need_hosts =
      all_.hosts.empty() ? 0 : std::min(all_.hosts.size(), static_cast<size_t>(c.nodes));
  if (running_ > 0) {
    if (jobs_ == 0 && s.cores > free_cores_) return std::nullopt;
    if (free_gpus_.size() < need_gpus || free_hosts_.size() < need_hosts) return std::nullopt;
  }
  // Lowest ids first, so that the same candidates get the same devices run after run.
  std::sort(free_gpus_.begin(), free_gpus_.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // "2" before "10"
  });
  s.gpus.assign(free_gpus_.begin(), free_gpus_.begin() + static_cast<long>(need_gpus));
  free_gpus_.erase(free_gpus_.begin(), free_gpus_.begin() + static_cast<long>(need_gpus));
  s.hosts.assign(free_hosts_.begin(), free_hosts_.begin() + static_cast<long>(need_hosts));
  free_hosts_.erase(free_hosts_.begin(), free_hosts_.begin() + static_cast<long>(need_hosts));
  free_cores_ -= s.cores;
  ++running_;
  return s;
}

void SlotPool::release(const Slot& s) {
  free_cores_ += s.cores;
  free_gpus_.insert(free_gpus_.end(), s.gpus.begin(), s.gpus.end());
  // Hosts go back in the allocation's order.
  for (const auto& h : s.hosts) free_hosts_.push_back(h);
  std::vector<std::string> ordered;
  for (const auto& h : all_.hosts)
    if (std::count(free_hosts_.begin(), free_hosts_.end(), h)) ordered.push_back(h);
  free_hosts_ = ordered;
  --running_;
}

int SlotPool::width(const TrialConfig& c) const {
  int w = jobs_ > 0 ? jobs_ : std::max(1, all_.cores / std::max(1, cores_needed(c)));
  if (c.device == "cuda" && !all_.gpus.empty())
    w = std::min<int>(w, static_cast<int>(all_.gpus.size() / std::max<int64_t>(1, c.world_size())));
  if (!all_.hosts.empty())
    w = std::min<int>(w, static_cast<int>(all_.hosts.size() / std::max<int64_t>(1, c.nodes)));
  return std::max(1, w);
}

}  // namespace ddpbisect
