#include "observe/outcome.hpp"

#include <filesystem>
#include <fstream>

#include "common/signals.hpp"

namespace ddpbisect {

nlohmann::json TrialOutcome::to_json() const {
  using nlohmann::json;
  json ranks_json = json::array();
  for (const auto& r : ranks) {
    json j = {{"rank", r.rank},
              {"local_rank", r.local_rank},
              {"node", r.node},
              {"pid", r.pid},
              {"argv", r.argv},
              {"start_s", r.start_s},
              {"end_s", r.end_s},
              {"exit_code", r.signal ? json(nullptr) : json(r.exit_code)},
              {"signal", r.signal ? json(signal_name(r.signal)) : json(nullptr)},
              {"signal_number", r.signal},
              {"killed_by",
               r.killed_by == StopReason::None ? json(nullptr) : json(to_string(r.killed_by))},
              {"last_step", r.last_step},
              {"heartbeats", r.heartbeats},
              {"last_progress_s", r.last_progress_s},
              {"step_times_s", r.step_times},
              {"stdout", r.stdout_path},
              {"stderr", r.stderr_path},
              {"bytes", r.bytes},
              {"bytes_dropped", r.dropped}};
    if (!r.stack.empty()) j["stack"] = r.stack;
    if (r.finished_s >= 0) j["finished_s"] = r.finished_s;
    if (!r.blocked_in.empty()) j["blocked_in"] = r.blocked_in;
    ranks_json.push_back(j);
  }
  json j = {{"status", to_string(status)},
            {"reason", reason},
            {"dir", dir},
            {"config", config.to_json()},
            {"master_addr", master_addr},
            {"master_port", master_port},
            {"token", token},
            {"started_unix", started_unix},
            {"duration_s", duration_s},
            {"hang_threshold_s", hang_threshold_s},
            {"hang_declared_s", hang_declared_s ? json(*hang_declared_s) : json(nullptr)},
            {"hang_confirmed_s", hang_confirmed_s ? json(*hang_confirmed_s) : json(nullptr)},
            {"timings",
             {{"first_step_s", first_step_s >= 0 ? json(first_step_s) : json(nullptr)},
              {"slowest_step_s", slowest_step_s},
              {"longest_pause_s", longest_pause_s}}},
            {"first_failure_rank", first_failure_rank ? json(*first_failure_rank) : json(nullptr)},
            {"port_clash", port_clash},
            {"log_cap_hit", log_cap_hit},
            {"launcher", launcher},
            {"containment", containment},
            {"ranks", ranks_json}};
  if (not_started) j["not_started"] = true;
  if (!cleanup_notes.empty()) j["cleanup_notes"] = cleanup_notes;
  if (!hang_confirmed_by.empty()) j["hang_confirmed_by"] = hang_confirmed_by;
  if (stop == StopReason::Hang) j["hang_evidence"] = hang_evidence;
  if (timed_out_exiting) j["timed_out"] = "exiting";
  if (timed_out_progressing) j["timed_out"] = "progressing";
  if (!notes.empty()) j["notes"] = notes;
  if (!stacks_by.empty()) j["stacks_by"] = stacks_by;
  if (!agent_logs.empty()) j["agent_logs"] = agent_logs;
  if (stop != StopReason::None) j["stopped_by"] = to_string(stop);
  if (resource)
    j["resource_limit"] = {{"limit", resource->limit},
                           {"detail", resource->detail},
                           {"rank", resource->rank >= 0 ? json(resource->rank) : json(nullptr)}};
  if (diagnosis) j["diagnosis"] = diagnosis->to_json();
  return j;
}

nlohmann::json read_outcome_json(const std::string& trial_dir) {
  if (trial_dir.empty()) return nullptr;
  std::ifstream in(std::filesystem::path(trial_dir) / "outcome.json");
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j : nlohmann::json(nullptr);
}

}  // namespace ddpbisect
