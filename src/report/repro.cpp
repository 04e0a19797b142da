#include "report/repro.hpp"

#include "common/text.hpp"
#include "launch/rank_plan.hpp"
#include "report/templates.hpp"
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
  } else {
    w["samples"] = samples;
    w["components"] = m.components;
    w["features"] = m.features;
    w["params"] = m.params;
  }
  j["report"]["dir"] = "ddpbisect-check";
  return "# The minimal configuration found by ddpbisect for " + spec.file +
         ".\n# Rerun it with: ddpbisect check repro.yaml --expect fail\n" + json_to_yaml(j);
}

std::string repro_run_sh(const Spec& spec, const TrialConfig& m, const Signature& target) {
  std::string s =
      "#!/usr/bin/env bash\n"
      "# Reproduces, without ddpbisect: " +
      comment_text(target.to_string()) +
      "\n"
      "# " +
      plural(m.world_size(), "rank") + " on this machine (" + plural(m.nodes, "node") + " of " +
      std::to_string(m.procs_per_node) +
      "), with torchrun's environment contract.\n"
      "# Exit status: 1 when any rank fails. Rank logs: rank<N>.log beside this script.\n"
      "set -u\n"
      "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
      "export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-$((20000 + RANDOM % "
      "20000))}\n"
      "export WORLD_SIZE=" +
      std::to_string(m.world_size()) + " LOCAL_WORLD_SIZE=" + std::to_string(m.procs_per_node) +
      " GROUP_WORLD_SIZE=" + std::to_string(m.nodes) +
      "\n"
      "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} DDPBISECT_CONFIG=\"$here/config.json\"\n";
  auto values = placeholder_values(m);
  s += "export DDPBISECT_SAMPLES=" + shell_quote(values["samples"]) +
       " DDPBISECT_COMPONENTS=" + shell_quote(values["components"]) +
       " DDPBISECT_FEATURES=" + shell_quote(values["features"]) + "\n";
  // Every assignment is one quoted word: a name or value from the spec never reaches the shell
  // as syntax (a bad name makes `export` fail, it runs nothing).
  for (const auto& [k, v] : m.params) {
    std::string upper = k;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    s += "export " + shell_quote("DDPBISECT_PARAM_" + upper + "=" + std::to_string(v)) + "\n";
  }
  std::vector<std::string> argv;
  if (spec.builtin) {
    s += "worker=${DDPBISECT_WORKER:-$(command -v ddpbisect-worker || echo "
         "\"$here/../../build/ddpbisect-worker\")}\n";
    argv = {"\"$worker\"", "--config", "\"$here/config.json\""};
  } else {
    s += "export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 TORCH_SHOW_CPP_STACKTRACES=1\n";
    for (const auto& [k, v] : spec.command->env) s += "export " + shell_quote(k + "=" + v) + "\n";
    s += "cd " + shell_quote(spec.command->cwd) + " || exit 2\n";
    for (const auto& a : spec.command->argv)
      argv.push_back(shell_quote(substitute_placeholders(a, values)));
  }
  s += "pids=()\n"
       "for ((rank = 0; rank < WORLD_SIZE; rank++)); do\n"
       "  RANK=$rank LOCAL_RANK=$((rank % LOCAL_WORLD_SIZE)) NODE_RANK=$((rank / "
       "LOCAL_WORLD_SIZE)) \\\n"
       "  GROUP_RANK=$((rank / LOCAL_WORLD_SIZE)) " +
       join(argv, " ") +
       " >\"$here/rank$rank.log\" 2>&1 &\n"
       "  pids+=($!)\n"
       "done\n"
       "status=0\n"
       "for ((rank = 0; rank < WORLD_SIZE; rank++)); do\n"
       "  wait \"${pids[$rank]}\"; rc=$?\n"
       "  echo \"rank $rank exited $rc (log: $here/rank$rank.log)\"\n"
       "  [[ $rc -eq 0 ]] || status=1\n"
       "done\n"
       "exit $status\n";
  return s;
}

std::string repro_python(const Spec& spec, const TrialConfig& m, const Signature& target) {
  std::string s = ddp_repro_template();
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
