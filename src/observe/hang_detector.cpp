#include "observe/hang_detector.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ddpbisect {

std::optional<Heartbeat> parse_heartbeat(std::string_view line) {
  constexpr std::string_view kTag = "DDPBISECT_HEARTBEAT ";
  size_t at = line.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  auto j = nlohmann::json::parse(line.substr(at + kTag.size()), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer())
    return std::nullopt;
  Heartbeat h;
  h.step = j["step"].get<long long>();
  if (j.contains("rank") && j["rank"].is_number_integer()) h.rank = j["rank"].get<int>();
  if (j.contains("t") && j["t"].is_number()) h.t = j["t"].get<double>();
  if (j.contains("loss") && j["loss"].is_number()) h.loss = j["loss"].get<double>();
  if (j.contains("seq") && j["seq"].is_number_integer()) h.seq = j["seq"].get<long long>();
  return h;
}

HangDetector::HangDetector(int ranks, std::optional<double> fixed_threshold_s)
    : ranks_(static_cast<size_t>(ranks)), fixed_(fixed_threshold_s) {}

void HangDetector::on_start(double now) {
  for (auto& r : ranks_) r.last_progress = now;
}

void HangDetector::on_heartbeat(int rank, long long step, double now) {
  auto& r = ranks_[rank];
  if (r.last_heartbeat >= 0 && step > r.step)
    slowest_step_ =
        std::max(slowest_step_, (now - r.last_heartbeat) / static_cast<double>(step - r.step));
  r.last_heartbeat = now;
  r.step = std::max(r.step, step);
  r.last_progress = now;
}

void HangDetector::on_output(int rank, double now) {
  ranks_[rank].last_progress = now;
}

void HangDetector::on_cpu(int rank, double cpu_seconds, double now) {
  auto& r = ranks_[rank];
  // CPU time is progress only for programs without heartbeats: a rank that stopped beating while
  // a library thread spins (Gloo polling a closed socket does) is not making progress.
  // Counted against the CPU time at the last progress, not the last sample: on a loaded machine
  // a rank importing torch gets a few ms per sample yet moves on.
  if (r.cpu < 0) {
    r.cpu = cpu_seconds;
  } else if (r.last_heartbeat < 0 && cpu_seconds - r.cpu >= 0.02) {
    r.last_progress = now;
    r.cpu = cpu_seconds;
  }
}

void HangDetector::on_process_changed(int rank) {
  ranks_[rank].cpu = -1;
}

void HangDetector::on_exit(int rank) {
  ranks_[rank].alive = false;
}

double HangDetector::threshold() const {
  if (fixed_) return *fixed_;
  return std::max(5.0, 5.0 * slowest_step_);
}

double HangDetector::last_progress_any() const {
  double t = 0;
  for (const auto& r : ranks_)
    if (r.alive) t = std::max(t, r.last_progress);
  return t;
}

bool HangDetector::hung(double now) const {
  bool any_alive = false;
  for (const auto& r : ranks_) {
    if (!r.alive) continue;
    any_alive = true;
    if (now - r.last_progress < threshold()) return false;
  }
  return any_alive;
}

}  // namespace ddpbisect
