#include "launch/torchrun.hpp"

#include <cstdlib>
#include <filesystem>

#include "common/text.hpp"

namespace ddpbisect {

namespace {

// torchrun options that take no value (2.x; both spellings are accepted by torchrun).
bool is_flag(const std::string& opt) {
  for (const char* f : {"--standalone", "-m", "--module", "--no-python", "--run-path",
                        "--virtual-local-rank", "--use-env", "-h", "--help"})
    if (opt == f) return true;
  return false;
}

// Options whose value ddpbisect sets per trial.
bool is_ours(const std::string& opt) {
  for (const char* o :
       {"--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id",
        "--standalone", "--max-restarts", "--log-dir", "--redirects", "-r", "--tee", "-t",
        "--node-rank", "--master-addr", "--master-port", "--local-ranks-filter", "--logs-specs"})
    if (opt == o) return true;
  return false;
}

// "--nproc_per_node" and "--nproc-per-node" are one option to torchrun.
std::string canonical(std::string opt) {
  for (size_t i = 2; i < opt.size(); ++i)
    if (opt[i] == '_') opt[i] = '-';
  return opt;
}

}  // namespace

const char* const kAgentPrefixTemplate = "[ddpbisect rank=${rank} local=${local_rank}]:";

std::optional<TorchrunCommand> parse_torchrun(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  TorchrunCommand cmd;
  size_t i = 0;
  const std::string exe = std::filesystem::path(argv[0]).filename().string();
  if (exe == "torchrun") {
    cmd.launcher = {argv[0]};
    i = 1;
  } else if (exe.rfind("python", 0) == 0) {
    // python [-u|-B ...] -m torch.distributed.run | torch.distributed.launch: the launch-era
    // module is torchrun's parser plus --use-env, and passes --local-rank=N unless given it.
    size_t m = 1;
    while (m < argv.size() && (argv[m] == "-u" || argv[m] == "-B")) ++m;
    if (m + 1 >= argv.size() || argv[m] != "-m" ||
        (argv[m + 1] != "torch.distributed.run" && argv[m + 1] != "torch.distributed.launch"))
      return std::nullopt;
    cmd.launcher.assign(argv.begin(), argv.begin() + static_cast<long>(m + 2));
    i = m + 2;
  } else {
    return std::nullopt;
  }
  while (i < argv.size() && starts_with(argv[i], "-") && argv[i] != "--") {
    const std::string& word = argv[i];
    size_t eq = word.find('=');
    std::string opt = canonical(word.substr(0, eq));
    bool takes_value = eq == std::string::npos && !is_flag(opt);
    std::vector<std::string> words = {word};
    if (takes_value && i + 1 < argv.size()) words.push_back(argv[++i]);
    auto& to = is_ours(opt) ? cmd.dropped : cmd.options;
    to.insert(to.end(), words.begin(), words.end());
    ++i;
  }
  if (i < argv.size() && argv[i] == "--") ++i;
  cmd.program.assign(argv.begin() + static_cast<long>(i), argv.end());
  return cmd;
}

std::vector<std::string> agent_argv(const TorchrunCommand& cmd, const AgentPlace& p) {
  std::vector<std::string> argv = cmd.launcher;
  // The underscore spellings: torchrun 2.x takes both, 1.x only these.
  argv.insert(argv.end(),
              {"--nnodes=" + std::to_string(p.nodes),
               "--nproc_per_node=" + std::to_string(p.procs_per_node), "--rdzv_backend=c10d",
               "--rdzv_endpoint=" + p.endpoint, "--rdzv_id=" + p.run_id, "--max_restarts=0",
               "--log_dir=" + p.log_dir, "--redirects=3", "--tee=3"});
  argv.insert(argv.end(), cmd.options.begin(), cmd.options.end());
  argv.insert(argv.end(), cmd.program.begin(), cmd.program.end());
  return argv;
}

PrefixedLine split_agent_line(std::string_view line) {
  PrefixedLine out;
  out.text = line;
  auto number = [](std::string_view s, size_t& pos) {
    int v = 0;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 7)
      v = v * 10 + (s[pos++] - '0');
    return pos > start ? v : -1;
  };
  const std::string_view ours = "[ddpbisect rank=";
  if (line.substr(0, ours.size()) == ours) {
    size_t pos = ours.size();
    int rank = number(line, pos);
    if (rank < 0 || line.substr(pos, 7) != " local=") return out;
    pos += 7;
    int local = number(line, pos);
    if (local < 0 || line.substr(pos, 2) != "]:") return out;
    out.rank = rank;
    out.local_rank = local;
    out.text = line.substr(pos + 2);
    return out;
  }
  // torchrun's own prefix (no template support): "[default3]:" names the local rank only.
  const std::string_view deflt = "[default";
  if (line.substr(0, deflt.size()) == deflt) {
    size_t pos = deflt.size();
    int local = number(line, pos);
    if (local < 0 || line.substr(pos, 2) != "]:") return out;
    out.local_rank = local;
    out.text = line.substr(pos + 2);
  }
  return out;
}

}  // namespace ddpbisect
