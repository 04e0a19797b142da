#include "report/repro.hpp"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "common/output.hpp"
#include "common/templates.hpp"
#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "launch/agent_env.hpp"
#include "launch/rank_plan.hpp"
#include "launch/torchrun.hpp"
#include "spec/placeholders.hpp"
#include "spec/serialize.hpp"

namespace ddpbisect {

namespace {
// Text for a "#" comment line of a script: one line, nothing a shell could run.
std::string comment_text(const std::string& s) {
  std::string out = visible_text(s);
  replace_all(out, "\n", " ");
  replace_all(out, "\t", " ");
  return out;
}
}  // namespace

std::string minimal_spec_yaml(const Spec& spec, const TrialConfig& m, const std::string& stage,
                              const Signature& target) {
  nlohmann::json j = spec_to_json(spec);
  j["match"]["signature"] = {
      {"category", target.category}, {"exception", target.exception}, {"frame", target.frame}};
  j["name"] = spec.name + "-minimal";
  j["stages"] = nlohmann::json::array({{{"name", stage},
                                        {"nodes", m.nodes},
                                        {"procs_per_node", m.procs_per_node},
                                        {"device", m.device}}});
  auto& w = j["workload"];
  std::string samples = m.samples.to_string();
  if (spec.builtin) {
    w["builtin"]["model"] = m.components;
    w["builtin"]["features"] = m.features;
    w["builtin"]["params"] = m.params;
    w["builtin"]["samples"] = samples;
  } else if (spec.command->samples_auto) {
    if (!m.samples.empty()) w["samples"] = {{"auto", samples}};  // else: all, as in the spec
    w["components"] = m.components;
    w["features"] = m.features;
    w["params"] = m.params;
  } else {
    // A workload without a samples dimension keeps none (an empty set would be an error).
    if (!m.samples.empty() || !spec.command->samples.empty()) w["samples"] = samples;
    w["components"] = m.components;
    w["features"] = m.features;
    w["params"] = m.params;
  }
  j["report"]["dir"] = "ddpbisect-check";
  return "# The minimal configuration found by ddpbisect for " + spec.file +
         ".\n# Rerun it with: ddpbisect check repro.yaml --expect fail\n" + json_to_yaml(j);
}

namespace {
// Text as a POSIX extended regular expression that matches it literally.
std::string ere_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view(".[]{}()\\*+?^$|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string repro_run_sh(const Spec& spec, const TrialConfig& m, const Signature& target) {
  const Category* category = find_category(target.category);
  std::string frame_re;  // a Python traceback line of the pinned frame (command workloads)
  if (spec.command && !target.frame.empty()) {
    const size_t colon = target.frame.rfind(':');
    if (colon != std::string::npos && colon > 0)
      frame_re = "File \"([^\"]*/)?" + ere_literal(target.frame.substr(0, colon)) +
                 "\", line [0-9]+,? in " + ere_literal(target.frame.substr(colon + 1)) + "$";
  }
  // A script that starts its own ranks gets their count as its param, and none of torchrun's
  // variables (as in the trials); deepspeed's launch.py sets its own three.
  const bool self_spawning = spec.command && !spec.command->world_size_param.empty();
  const bool deepspeed = spec.command && parse_deepspeed(spec.command->argv);
  std::map<std::string, std::string> fill;
  fill["SIGNATURE"] = comment_text(target.to_string());
  fill["TOPOLOGY"] = plural(m.world_size(), "rank") + " on this machine (" +
                     plural(m.nodes, "node") + " of " + std::to_string(m.procs_per_node) + ")";
  fill["CONTRACT"] = deepspeed ? "each rank as deepspeed's launch.py starts it"
                               : "with torchrun's environment contract";
  fill["NEEDS"] = spec.builtin
                      ? ", and ddpbisect-worker (DDPBISECT_WORKER, PATH, or the build it came from)"
                      : "";
  // Every value from the spec or the signature is one quoted word: it stays data.
  fill["WANT_EXCEPTION"] = shell_quote(target.exception);
  fill["WANT_CATEGORY"] = shell_quote(target.category);
  fill["WANT_PATTERN"] = shell_quote(category && category->pattern ? category->pattern : "");
  fill["WANT_FRAME"] = shell_quote(frame_re);
  fill["TIMEOUT_S"] =
      std::to_string(std::max<long long>(1, spec.limits.trial_timeout.count() / 1000));

  // The minimal configuration's environment and program, a line each.
  std::string s;
  s += "export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-$((20000 + RANDOM "
       "% 20000))}\n";
  if (deepspeed)
    s += "LOCAL_WORLD_SIZE=" + std::to_string(m.procs_per_node) +
         "  # not exported: the loop's arithmetic\n"
         "export WORLD_SIZE=" +
         std::to_string(m.world_size()) + " CROSS_SIZE=" + std::to_string(m.nodes) +
         " LOCAL_SIZE=" + std::to_string(m.procs_per_node) + "\n";
  else if (!self_spawning)
    s += "export WORLD_SIZE=" + std::to_string(m.world_size()) +
         " LOCAL_WORLD_SIZE=" + std::to_string(m.procs_per_node) +
         " GROUP_WORLD_SIZE=" + std::to_string(m.nodes) +
         " ROLE_WORLD_SIZE=" + std::to_string(m.world_size()) +
         "\n"
         // torchrun's too, as the trials had it: Lightning reads it as "launched by torchrun".
         "export TORCHELASTIC_RUN_ID=${TORCHELASTIC_RUN_ID:-ddpbisect-repro}\n";
  s += "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} DDPBISECT_CONFIG=\"$here/config.json\"\n";
  auto values = placeholder_values(spec, m);
  const bool samples_auto = spec.command && spec.command->agent && spec.command->samples_auto;
  if (samples_auto && m.samples.empty())
    s += "unset DDPBISECT_SAMPLES\n";  // every sample
  else
    s += "export DDPBISECT_SAMPLES=" + shell_quote(values["samples"]) + "\n";
  s += "export DDPBISECT_COMPONENTS=" + shell_quote(values["components"]) +
       " DDPBISECT_FEATURES=" + shell_quote(values["features"]) + "\n";
  for (const auto& [k, v] : m.params)
    s += "export " + shell_quote(param_variable(k) + "=" + std::to_string(v)) + "\n";
  if (self_spawning)
    s += "export " +
         shell_quote(param_variable(spec.command->world_size_param) + "=" +
                     std::to_string(m.world_size())) +
         "\n";
  std::vector<std::string> argv;
  bool per_node = false;
  if (spec.builtin) {
    s += "worker=\n"
         "for w in \"${DDPBISECT_WORKER:-}\" \"$(command -v ddpbisect-worker)\" " +
         shell_quote(worker_path()) +
         " \"$here/../../build/ddpbisect-worker\"; do\n"
         "  if [[ -n $w && -x $w ]]; then worker=$w; break; fi\n"
         "done\n"
         "[[ -n $worker ]] || cant_start \"ddpbisect-worker not found (set DDPBISECT_WORKER)\"\n";
    argv = {"\"$worker\"", "--config", "\"$here/config.json\""};
  } else {
    const CommandWorkload& c = *spec.command;
    s += "export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 TORCH_SHOW_CPP_STACKTRACES=1\n";
    for (const auto& [k, v] : c.env) s += "export " + shell_quote(k + "=" + v) + "\n";
    // Ours, shipped beside this script: the helper module, and the agent when it was on.
    s += std::string("export PYTHONPATH=") + (c.agent ? "\"$here/python/agent:" : "\"") +
         "$here/python${PYTHONPATH:+:$PYTHONPATH}\"\n";
    if (c.agent) {
      s += "export DDPBISECT_AGENT=1 DDPBISECT_STACK_SIGNAL=" + std::to_string(kAgentStackSignal) +
           "\n";
      if (c.samples_auto) s += "export DDPBISECT_SAMPLES_AUTO=1\n";
      if (c.steps_auto && m.params.count("steps"))
        s += "export DDPBISECT_MAX_STEPS=" + std::to_string(m.params.at("steps")) + "\n";
    }
    s += "cd " + shell_quote(c.cwd) + " || cant_start \"no working folder \"" + shell_quote(c.cwd) +
         "\n";
    // Each rank's own placeholders ({rank}, {local_rank}, {node_rank}): the loop's values.
    static const std::vector<std::pair<std::string, std::string>> per_rank = {
        {"rank", "$rank"},
        {"local_rank", "$((rank % LOCAL_WORLD_SIZE))"},
        {"node_rank", "$((rank / LOCAL_WORLD_SIZE))"}};
    // (A launcher form's ranks are the launcher's: its ${local_rank} is left for it to fill.)
    const bool launcher_form = parse_torchrun(c.argv).has_value();
    if (!launcher_form)
      for (const auto& [k, shell] : per_rank) values.emplace(k, "\1" + k + "\1");
    std::vector<std::string> words;
    for (const std::string& a : command_argv(c))  // a deepspeed form's: its ranks' command
      words.push_back(
          substitute_placeholders(launcher_form ? a : rank_placeholders_unified(a), values));
    if (auto launcher = parse_torchrun(words)) {
      // The user's launcher, one agent per node at the minimal topology (as in the trials): it
      // starts the node's ranks itself (or, for a form that does, its own one-process start).
      auto single = m.nodes * m.procs_per_node == 1 ? single_rank_argv(*launcher) : std::nullopt;
      if (single) {
        words = *single;
      } else {
        AgentPlace place;
        place.nodes = static_cast<int>(m.nodes);
        place.procs_per_node = static_cast<int>(m.procs_per_node);
        place.node_rank = "\1node\1";
        place.addr = "\1addr\1";
        place.port = "\1port\1";
        place.static_rendezvous = true;
        words = agent_argv(*launcher, place);
        per_node = true;
      }
    }
    for (const auto& w : words) {
      std::string q = shell_quote(w);
      for (const auto& [k, shell] : per_rank)
        replace_all(q, "\1" + k + "\1", "'\"" + shell + "\"'");
      replace_all(q, "\1node\1", "'\"$rank\"'");
      replace_all(q, "\1addr\1", "'\"$MASTER_ADDR\"'");
      replace_all(q, "\1port\1", "'\"$MASTER_PORT\"'");
      argv.push_back(q);
    }
    s += "command -v " + argv[0] + " >/dev/null || cant_start \"no program \"" + argv[0] + "\n";
  }
  s.pop_back();  // the template's line ends it
  fill["ENVIRONMENT"] = s;
  // A launcher form runs one agent per node (its log: node<N>.log); otherwise one process a rank.
  if (per_node) {
    fill["PROCS"] = std::to_string(m.nodes);
    fill["UNIT"] = "node";
  } else {
    fill["PROCS"] = self_spawning ? "1" : "$WORLD_SIZE";  // a self-spawning script starts them
    fill["UNIT"] = "rank";
  }
  fill["RANK_VARIABLES"] = self_spawning ? ""
                           : deepspeed
                               ? "RANK=$rank LOCAL_RANK=$((rank % LOCAL_WORLD_SIZE)) "
                                 "CROSS_RANK=$((rank / LOCAL_WORLD_SIZE)) "
                               : "RANK=$rank LOCAL_RANK=$((rank % LOCAL_WORLD_SIZE)) "
                                 "NODE_RANK=$((rank / LOCAL_WORLD_SIZE)) \\\n"
                                 "  GROUP_RANK=$((rank / LOCAL_WORLD_SIZE)) ROLE_RANK=$rank ";
  fill["COMMAND"] = join(argv, " ");
  return fill_template(run_sh_template(), fill);
}

std::string repro_python(const Spec& spec, const TrialConfig& m, const Signature& target) {
  std::string s = ddp_repro_py_template();
  // The header and target first: a spec value that happens to read "@HEADER@" stays data.
  replace_all(s, "@HEADER@",
              comment_text("Reproduces: " + target.to_string() + " (ddpbisect " + spec.file + ")"));
  replace_all(s, "\"@TARGET@\"",
              nlohmann::json(target.to_string())
                  .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
  // The configuration sits in a raw triple-quoted string: no single quote may end it early
  // (ensure_ascii: no byte of it can be anything but printable ASCII).
  std::string config =
      rank_config_json(spec, m).dump(1, ' ', true, nlohmann::json::error_handler_t::replace);
  replace_all(config, "'", "\\u0027");
  replace_all(s, "@CONFIG_JSON@", config);
  return s;
}

void write_repro_support(const ReportInputs& in) {
  if (!in.spec->command || in.result.status == ReductionStatus::NotReproduced) return;
  const std::string agent = agent_dir();
  if (agent.empty()) return;  // run.sh then runs without (the rank logs say so)
  const std::filesystem::path to = std::filesystem::path(in.out_dir) / "repro" / "python";
  const std::filesystem::path from = std::filesystem::path(agent).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(to / "agent", ec);
  if (!ec)
    std::filesystem::copy(agent, to / "agent",
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing,
                          ec);
  if (ec) throw OutputError((to / "agent").string(), ec.value());
  if (std::filesystem::exists(from / "ddpbisect.py", ec)) {
    std::filesystem::copy_file(from / "ddpbisect.py", to / "ddpbisect.py",
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw OutputError((to / "ddpbisect.py").string(), ec.value());
  }
  // Bytecode caches are the build's, not the repro's.
  for (const auto& dir :
       {to / "agent" / "__pycache__", to / "agent" / "ddpbisect_agent" / "__pycache__"})
    std::filesystem::remove_all(dir, ec);
}

std::string render_repro_yaml(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  return minimal_spec_yaml(*in.spec, r.minimal, r.stage, r.target);
}

std::string render_rank_config(const ReportInputs& in) {
  return rank_config_json(*in.spec, in.result.minimal)
             .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string render_run_sh(const ReportInputs& in) {
  return repro_run_sh(*in.spec, in.result.minimal, in.result.target);
}

std::string render_repro_py(const ReportInputs& in) {
  return repro_python(*in.spec, in.result.minimal, in.result.target);
}

}  // namespace ddpbisect
