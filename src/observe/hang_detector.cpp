#include "observe/hang_detector.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ddpbisect {

namespace {

// CPU time is progress when the tree used at least this share of one core over the last
// kCpuWindow seconds (and kCpuMin in all): an idle launcher polling its workers, or the
// agent's watcher, stays below it; a rank importing torch on a machine loaded several times
// over still gets far more.
constexpr double kCpuShare = 0.05, kCpuMin = 0.02, kCpuWindow = 1.0;
// Bytes read or written (files, sockets, pipes) since the last such progress.
constexpr int64_t kIoBytes = 256 << 10;

std::optional<nlohmann::json> tagged_json(std::string_view line, std::string_view tag) {
  size_t at = line.find(tag);
  if (at == std::string_view::npos) return std::nullopt;
  auto j = nlohmann::json::parse(line.substr(at + tag.size()), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::optional<Heartbeat> parse_heartbeat(std::string_view line) {
  auto j = tagged_json(line, "DDPBISECT_HEARTBEAT ");
  if (!j || !j->contains("step") || !(*j)["step"].is_number_integer()) return std::nullopt;
  Heartbeat h;
  h.step = (*j)["step"].get<long long>();
  if (j->contains("rank") && (*j)["rank"].is_number_integer()) h.rank = (*j)["rank"].get<int>();
  if (j->contains("t") && (*j)["t"].is_number()) h.t = (*j)["t"].get<double>();
  if (j->contains("loss") && (*j)["loss"].is_number()) h.loss = (*j)["loss"].get<double>();
  if (j->contains("seq") && (*j)["seq"].is_number_integer()) h.seq = (*j)["seq"].get<long long>();
  return h;
}

std::optional<ActivityLine> parse_activity(std::string_view line) {
  auto j = tagged_json(line, "DDPBISECT_STATE ");
  if (!j || !j->contains("state") || !(*j)["state"].is_string()) return std::nullopt;
  ActivityLine a;
  const std::string s = (*j)["state"].get<std::string>();
  if (s == "running")
    a.activity = Activity::Running;
  else if (s == "collective")
    a.activity = Activity::Collective;
  else if (s == "finished")
    a.activity = Activity::Finished;
  else if (s == "exiting")
    a.activity = Activity::Exiting;
  else
    return std::nullopt;
  if (j->contains("pid") && (*j)["pid"].is_number_integer()) a.pid = (*j)["pid"].get<pid_t>();
  a.error = j->contains("error") && (*j)["error"].is_boolean() && (*j)["error"].get<bool>();
  if (j->contains("t") && (*j)["t"].is_number() && j->contains("since") &&
      (*j)["since"].is_number())
    a.age = std::clamp((*j)["t"].get<double>() - (*j)["since"].get<double>(), 0.0, 60.0);
  return a;
}

HangDetector::HangDetector(int ranks, HangOptions options)
    : ranks_(static_cast<size_t>(ranks)), opt_(options) {}

void HangDetector::on_start(double now) {
  for (auto& r : ranks_) r.last_progress = now;
  last_any_ = now;
}

void HangDetector::progress(int rank, double now) {
  if (now < mute_until_) return;
  if (!finished(rank)) {
    longest_pause_ = std::max(longest_pause_, now - last_any_);
    last_any_ = std::max(last_any_, now);
  }
  ranks_[rank].last_progress = std::max(ranks_[rank].last_progress, now);
}

void HangDetector::on_heartbeat(int rank, long long step, double now) {
  auto& r = ranks_[rank];
  if (r.last_heartbeat >= 0 && step > r.step)
    slowest_step_ =
        std::max(slowest_step_, (now - r.last_heartbeat) / static_cast<double>(step - r.step));
  if (first_heartbeat_ < 0) first_heartbeat_ = now;
  r.started = true;
  r.last_heartbeat = now;
  r.step = std::max(r.step, step);
  progress(rank, now);
}

void HangDetector::on_output(int rank, double now) {
  progress(rank, now);
}

bool HangDetector::in_collective(const RankState& r) const {
  if (r.told.empty()) return false;
  return std::all_of(r.told.begin(), r.told.end(),
                     [](const auto& t) { return t.second.activity == Activity::Collective; });
}

void HangDetector::on_cpu(int rank, double cpu_seconds, double now) {
  auto& r = ranks_[rank];
  if (cpu_seconds < 0) return;
  r.cpu.emplace_back(now, cpu_seconds);
  while (r.cpu.size() > 2 && r.cpu[1].first <= now - kCpuWindow) r.cpu.pop_front();
  const auto [t0, cpu0] = r.cpu.front();
  const double used = cpu_seconds - cpu0, span = now - t0;
  if (span < kCpuWindow * 0.5 || used < std::max(kCpuMin, kCpuShare * span)) return;
  // A rank waiting in a collective may spin (CUDA's synchronisation does); on CUDA ranks CPU
  // time is progress only until the first heartbeat.
  if (in_collective(r) && !opt_.cpu_after_heartbeat) return;
  if (!opt_.cpu_after_heartbeat && r.last_heartbeat >= 0) return;
  progress(rank, now);
}

void HangDetector::on_io(int rank, int64_t bytes, double now) {
  auto& r = ranks_[rank];
  if (r.io_mark < 0 || bytes < r.io_mark) {
    r.io_mark = bytes;
    return;
  }
  if (bytes - r.io_mark < kIoBytes) return;
  r.io_mark = bytes;
  progress(rank, now);
}

void HangDetector::on_activity(int rank, const ActivityLine& line, double now) {
  auto& r = ranks_[rank];
  const bool left_collective = line.activity == Activity::Running;
  r.told[line.pid] = line;
  r.started = true;
  if (left_collective) progress(rank, now);
  // Entering the call was the rank's last move: its quiet starts then, not when it told.
  if (line.activity == Activity::Collective) progress(rank, now - line.age);
}

void HangDetector::on_exit(int rank) {
  ranks_[rank].alive = false;
}

bool HangDetector::finished(int rank) const {
  const auto& told = ranks_[rank].told;
  if (told.empty()) return false;
  return std::all_of(told.begin(), told.end(), [](const auto& t) {
    return t.second.activity == Activity::Finished || t.second.activity == Activity::Exiting;
  });
}

bool HangDetector::exiting_with_error(int rank) const {
  for (const auto& [pid, t] : ranks_[rank].told)
    if (t.activity == Activity::Exiting && t.error) return true;
  return false;
}

double HangDetector::threshold() const {
  if (opt_.fixed_threshold_s) return *opt_.fixed_threshold_s;
  return std::max({opt_.floor_s * load_, opt_.learned_floor_s, 5.0 * slowest_step_});
}

double HangDetector::last_progress_any() const {
  double t = 0;
  for (const auto& r : ranks_)
    if (r.alive) t = std::max(t, r.last_progress);
  return t;
}

bool HangDetector::any_training(double) const {
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].alive && !finished(static_cast<int>(i))) return true;
  return false;
}

double HangDetector::quiet_for(double now) const {
  double latest = -1;
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].alive && !finished(static_cast<int>(i)))
      latest = std::max(latest, ranks_[i].last_progress);
  return latest < 0 ? 0 : now - latest;
}

bool HangDetector::hung(double now, double extra) const {
  bool any = false;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const RankState& r = ranks_[i];
    if (!r.alive || finished(static_cast<int>(i))) continue;
    any = true;
    const double allowed =
        (r.started ? threshold() : std::max(threshold(), opt_.startup_s * load_)) + extra;
    if (now - r.last_progress < allowed) return false;
  }
  return any;
}

}  // namespace ddpbisect
