#include "launch/rank_plan.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/text.hpp"
#include "launch/agent_env.hpp"
#include "launch/isolation.hpp"
#include "launch/process.hpp"
#include "spec/placeholders.hpp"

namespace ddpbisect {

std::map<std::string, std::string> placeholder_values(const TrialConfig& config) {
  std::map<std::string, std::string> v = {{"samples", config.samples.to_string()},
                                          {"components", join(config.components, ",")},
                                          {"features", join(config.features, ",")}};
  for (const auto& [k, val] : config.params) v[k] = std::to_string(val);
  return v;
}

std::string companion_path(const char* env_var, const std::string& name) {
  if (const char* p = std::getenv(env_var); p && *p) return p;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  return (self.parent_path() / name).string();
}

std::string worker_path() {
  return companion_path("DDPBISECT_WORKER", "ddpbisect-worker");
}

std::vector<RankSlot> plan_ranks(const Spec& spec, const TrialConfig& config,
                                 const TrialPlace& place) {
  std::map<std::string, std::string> base = current_environment();
  // A rank never inherits another trial's identity from the driver's own environment.
  for (auto it = base.begin(); it != base.end();)
    it = starts_with(it->first, "DDPBISECT_") && it->first != "DDPBISECT_WORKER" ? base.erase(it)
                                                                                 : ++it;

  const auto values = placeholder_values(config);
  std::vector<std::string> argv;
  std::string cwd = place.dir;
  if (spec.builtin) {
    argv = {worker_path(), "--config", place.config_path};
  } else {
    for (const auto& a : spec.command->argv) argv.push_back(substitute_placeholders(a, values));
    argv = isolate_argv(spec, place.dir, argv);  // the trial's own view of cwd and state
    cwd = spec.command->cwd;
  }

  std::vector<RankSlot> out;
  const int world = static_cast<int>(config.world_size());
  const int ppn = static_cast<int>(config.procs_per_node);
  for (int rank = 0; rank < world; ++rank) {
    RankSlot slot;
    slot.rank = rank;
    slot.local_rank = rank % ppn;
    slot.node = rank / ppn;
    auto env = base;
    env["RANK"] = std::to_string(rank);
    env["LOCAL_RANK"] = std::to_string(slot.local_rank);
    env["WORLD_SIZE"] = std::to_string(world);
    env["LOCAL_WORLD_SIZE"] = std::to_string(ppn);
    env["GROUP_RANK"] = env["NODE_RANK"] = std::to_string(slot.node);
    env["GROUP_WORLD_SIZE"] = std::to_string(config.nodes);
    env["ROLE_RANK"] = std::to_string(rank);
    env["ROLE_WORLD_SIZE"] = std::to_string(world);
    env["MASTER_ADDR"] = place.master_addr;
    env["MASTER_PORT"] = std::to_string(place.master_port);
    env["TORCHELASTIC_RUN_ID"] = "ddpbisect-" + place.token.substr(0, 8);
    env["DDPBISECT_CONFIG"] = place.config_path;
    env["DDPBISECT_TRIAL_DIR"] = place.dir;
    env["DDPBISECT_TRIAL_TOKEN"] = place.token;
    env["DDPBISECT_SAMPLES"] = values.at("samples");
    env["DDPBISECT_COMPONENTS"] = values.at("components");
    env["DDPBISECT_FEATURES"] = values.at("features");
    for (const auto& [k, v] : config.params) {
      std::string upper = k;
      for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      env["DDPBISECT_PARAM_" + upper] = std::to_string(v);
    }
    env["OMP_NUM_THREADS"] = "1";
    if (spec.command) {
      env["PYTHONUNBUFFERED"] = "1";
      env["PYTHONFAULTHANDLER"] = "1";
      env["TORCH_SHOW_CPP_STACKTRACES"] = "1";
      for (const auto& [k, v] : spec.command->env) env[k] = v;  // the spec wins
      add_agent_env(spec, config, env);
    }
    for (const auto& [k, v] : place.extra_env) env[k] = v;
    slot.process = {argv, env, cwd};
    out.push_back(std::move(slot));
  }
  return out;
}

}  // namespace ddpbisect
