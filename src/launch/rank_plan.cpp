#include "launch/rank_plan.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/text.hpp"
#include "launch/agent_env.hpp"
#include "launch/isolation.hpp"
#include "launch/process.hpp"
#include "launch/torchrun.hpp"
#include "launch/warm_server.hpp"
#include "spec/placeholders.hpp"

namespace ddpbisect {

std::string param_variable(const std::string& name) {
  std::string upper = name;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return "DDPBISECT_PARAM_" + upper;
}

std::map<std::string, std::string> placeholder_values(const Spec& spec, const TrialConfig& config) {
  std::map<std::string, std::string> v = {{"samples", config.samples.to_string()},
                                          {"components", join(config.components, ",")},
                                          {"features", join(config.features, ",")}};
  v["nodes"] = std::to_string(config.nodes);
  v["procs_per_node"] = std::to_string(config.procs_per_node);
  v["world_size"] = std::to_string(config.world_size());
  for (const auto& [k, val] : config.params) v[k] = std::to_string(val);  // a param's name wins
  if (spec.command && !spec.command->world_size_param.empty())
    v[spec.command->world_size_param] = std::to_string(config.world_size());
  return v;
}

std::vector<std::string> command_argv(const CommandWorkload& c) {
  auto ds = parse_deepspeed(c.argv);
  if (!ds) return c.argv;
  const char* path = std::getenv("PATH");
  return deepspeed_rank_argv(
      *ds, deepspeed_python(*ds, c.env.count("PATH") ? c.env.at("PATH") : (path ? path : "")));
}

namespace {
// {rank}, {local_rank} and {node_rank} in a plain command: each rank's own argv (a launch-era
// script that reads --local_rank runs without its launcher). torchrun's own spelling,
// ${local_rank}, is accepted too; a launcher form keeps it for the launcher to fill.
std::vector<std::string> rank_argv(const std::vector<std::string>& raw,
                                   std::map<std::string, std::string> values, int rank,
                                   int local_rank, int node) {
  for (auto [k, v] :
       {std::pair<const char*, int>{"rank", rank}, {"local_rank", local_rank}, {"node_rank", node}})
    values.emplace(k, std::to_string(v));  // a param of that name wins
  std::vector<std::string> out;
  for (const std::string& a : raw)
    out.push_back(substitute_placeholders(rank_placeholders_unified(a), values));
  return out;
}
}  // namespace

std::string companion_path(const char* env_var, const std::string& name) {
  if (const char* p = std::getenv(env_var); p && *p) return p;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  // The build tree keeps the helpers beside ddpbisect; an install (cmake --install, the .deb)
  // under PREFIX/libexec/ddpbisect. A helper found in neither is named beside the binary.
  const auto beside = self.parent_path() / name;
  const auto installed = self.parent_path().parent_path() / "libexec" / "ddpbisect" / name;
  if (!std::filesystem::exists(beside, ec) && std::filesystem::exists(installed, ec))
    return installed.string();
  return beside.string();
}

std::string worker_path() {
  return companion_path("DDPBISECT_WORKER", "ddpbisect-worker");
}

namespace {

// What every process of the trial gets: the driver's environment (less other trials'
// identity), the trial's DDPBISECT_* variables, Python defaults for commands, the spec's env and
// the request's extra variables. The rank contract (RANK, ...) is added per rank.
std::map<std::string, std::string> trial_env(const Spec& spec, const TrialConfig& config,
                                             const TrialPlace& place,
                                             const std::map<std::string, std::string>& values) {
  std::map<std::string, std::string> env = current_environment();
  // A rank never inherits another trial's identity from the driver's own environment.
  for (auto it = env.begin(); it != env.end();)
    it = starts_with(it->first, "DDPBISECT_") && it->first != "DDPBISECT_WORKER" ? env.erase(it)
                                                                                 : ++it;
  env["DDPBISECT_CONFIG"] = place.config_path;
  env["DDPBISECT_TRIAL_DIR"] = place.dir;
  env["DDPBISECT_TRIAL_TOKEN"] = place.token;
  env["DDPBISECT_SAMPLES"] = values.at("samples");
  env["DDPBISECT_COMPONENTS"] = values.at("components");
  env["DDPBISECT_FEATURES"] = values.at("features");
  for (const auto& [k, v] : config.params) env[param_variable(k)] = std::to_string(v);
  if (spec.command && !spec.command->world_size_param.empty())
    env[param_variable(spec.command->world_size_param)] = values.at(spec.command->world_size_param);
  env["OMP_NUM_THREADS"] = "1";
  if (spec.command) {
    env["PYTHONUNBUFFERED"] = "1";
    env["PYTHONFAULTHANDLER"] = "1";
    env["TORCH_SHOW_CPP_STACKTRACES"] = "1";
    for (const auto& [k, v] : spec.command->env) env[k] = v;  // the spec wins
    add_agent_env(spec, config, env);
  }
  for (const auto& [k, v] : place.extra_env) env[k] = v;
  return env;
}

// One torchrun agent per node; the agents start the ranks (launch/torchrun.hpp).
std::vector<RankSlot> plan_agents(const Spec& spec, const TorchrunCommand& cmd,
                                  const TrialConfig& config, const TrialPlace& place,
                                  std::map<std::string, std::string> env, const std::string& cwd) {
  const int ppn = static_cast<int>(config.procs_per_node);
  for (const char* k : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                        "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"})
    env.erase(k);  // torchrun sets them for its ranks
  env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = kAgentPrefixTemplate;
  std::vector<RankSlot> out;
  for (int node = 0; node < static_cast<int>(config.nodes); ++node) {
    AgentPlace ap;
    ap.nodes = static_cast<int>(config.nodes);
    ap.procs_per_node = ppn;
    ap.addr = place.master_addr;
    ap.port = std::to_string(place.master_port);
    ap.run_id = "ddpbisect-" + place.token.substr(0, 8);
    ap.log_dir =
        (std::filesystem::path(place.dir) / ("node" + std::to_string(node)) / "torchrun").string();
    ap.node_rank = std::to_string(node);
    RankSlot slot;
    slot.rank = node * ppn;
    slot.node = node;
    slot.agent_ranks = ppn;
    // The agent runs in the trial's own view of cwd and state; its ranks inherit it.
    slot.process = {isolate_argv(spec, place.dir, agent_argv(cmd, ap)), env, cwd};
    out.push_back(std::move(slot));
  }
  return out;
}

}  // namespace

ProcessSpec warm_server_process(const Spec& spec) {
  const TrialConfig config;
  const auto values = placeholder_values(spec, config);
  auto env = trial_env(spec, config, TrialPlace{}, values);
  for (auto it = env.begin(); it != env.end();) {
    const bool keep = it->first == "DDPBISECT_AGENT" || it->first == "DDPBISECT_STACK_SIGNAL" ||
                      it->first == "DDPBISECT_WORKER";
    it = starts_with(it->first, "DDPBISECT_") && !keep ? env.erase(it) : ++it;
  }
  std::vector<std::string> argv;
  if (spec.command)
    for (const auto& a : command_argv(*spec.command))
      argv.push_back(substitute_placeholders(a, values));
  return {argv, env, spec.command ? spec.command->cwd : ""};
}

std::vector<RankSlot> plan_ranks(const Spec& spec, const TrialConfig& config,
                                 const TrialPlace& place) {
  const auto values = placeholder_values(spec, config);
  std::vector<std::string> argv;
  std::string cwd = place.dir;
  if (spec.builtin) {
    argv = {worker_path(), "--config", place.config_path};
  } else {
    for (const auto& a : command_argv(*spec.command))
      argv.push_back(substitute_placeholders(a, values));
    cwd = spec.command->cwd;
  }
  const auto base = trial_env(spec, config, place, values);
  const bool warm = spec.command && !place.warm_socket.empty() && warm_startable(argv);
  std::vector<std::string> command = spec.command ? command_argv(*spec.command) : argv;
  // deepspeed's launch.py gives its ranks fewer variables than torchrun, and three of its own.
  const bool deepspeed = spec.command && parse_deepspeed(spec.command->argv);
  if (spec.command)
    if (auto launcher = parse_torchrun(argv)) {
      auto single =
          config.world_size() == 1 ? single_rank_argv(*parse_torchrun(command)) : std::nullopt;
      if (!single) return plan_agents(spec, *launcher, config, place, base, cwd);
      command = *single;  // the launcher's own one-process start is the rank
    }
  // Each rank's argv: its own placeholders, a warm start, the trial's view of cwd and state.
  auto argv_of = [&](int rank, int local_rank, int node) {
    if (!spec.command) return argv;
    std::vector<std::string> a = rank_argv(command, values, rank, local_rank, node);
    if (warm) a = warm_argv(place.warm_socket, a);
    return isolate_argv(spec, place.dir, a);
  };

  std::vector<RankSlot> out;
  if (spec.command && !spec.command->world_size_param.empty()) {
    // A script that starts its own ranks: one process, told the rank count through its param
    // (in base already), without torchrun's rank variables (Lightning, seeing them, would take
    // itself for one rank of an outside launcher and start none); a rendezvous address only.
    RankSlot slot;
    auto env = base;
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"MASTER_ADDR", place.master_addr},
          {"MASTER_PORT", std::to_string(place.master_port)}})
      if (!spec.command->env.count(k) && !place.extra_env.count(k)) env[k] = v;
    slot.process = {argv_of(0, 0, 0), env, cwd};
    out.push_back(std::move(slot));
    return out;
  }
  const int world = static_cast<int>(config.world_size());
  const int ppn = static_cast<int>(config.procs_per_node);
  for (int rank = 0; rank < world; ++rank) {
    RankSlot slot;
    slot.rank = rank;
    slot.local_rank = rank % ppn;
    slot.node = rank / ppn;
    // The rank contract, except where the spec's env or the request set a variable: theirs win
    // (base has them already, after the agent's variables).
    auto env = base;
    auto contract = [&](const std::string& key, const std::string& value) {
      const bool overridden =
          (spec.command && spec.command->env.count(key)) || place.extra_env.count(key);
      if (!overridden) env[key] = value;
    };
    contract("RANK", std::to_string(rank));
    contract("LOCAL_RANK", std::to_string(slot.local_rank));
    contract("WORLD_SIZE", std::to_string(world));
    contract("MASTER_ADDR", place.master_addr);
    contract("MASTER_PORT", std::to_string(place.master_port));
    if (deepspeed) {
      contract("CROSS_RANK", std::to_string(slot.node));
      contract("CROSS_SIZE", std::to_string(config.nodes));
      contract("LOCAL_SIZE", std::to_string(ppn));
    } else {
      contract("LOCAL_WORLD_SIZE", std::to_string(ppn));
      contract("GROUP_RANK", std::to_string(slot.node));
      contract("NODE_RANK", std::to_string(slot.node));
      contract("GROUP_WORLD_SIZE", std::to_string(config.nodes));
      contract("ROLE_RANK", std::to_string(rank));
      contract("ROLE_WORLD_SIZE", std::to_string(world));
      contract("TORCHELASTIC_RUN_ID", "ddpbisect-" + place.token.substr(0, 8));
    }
    slot.process = {argv_of(rank, slot.local_rank, slot.node), env, cwd};
    out.push_back(std::move(slot));
  }
  return out;
}

}  // namespace ddpbisect
