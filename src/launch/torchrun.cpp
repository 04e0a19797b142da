#include "launch/torchrun.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/text.hpp"

namespace ddpbisect {

namespace {

// "--nproc_per_node" and "--nproc-per-node" are one option to torchrun (and to accelerate).
std::string canonical(std::string opt) {
  for (size_t i = 2; i < opt.size(); ++i)
    if (opt[i] == '_') opt[i] = '-';
  return opt;
}

bool among(const std::string& opt, std::initializer_list<const char*> list) {
  for (const char* o : list)
    if (opt == o) return true;
  return false;
}

// A form's options that take no value (in their canonical spelling).
bool is_flag(LaunchForm form, const std::string& opt) {
  if (form == LaunchForm::accelerate)  // accelerate 1.x's store_true options
    return among(opt, {"-h",
                       "--help",
                       "-q",
                       "--quiet",
                       "--cpu",
                       "--multi-gpu",
                       "--tpu",
                       "--enable-cpu-affinity",
                       "--dynamo-use-fullgraph",
                       "--dynamo-use-dynamic",
                       "--dynamo-use-regional-compilation",
                       "--use-deepspeed",
                       "--use-fsdp",
                       "--use-parallelism-config",
                       "--use-megatron-lm",
                       "--same-network",
                       "-m",
                       "--module",
                       "--no-python",
                       "--tpu-cluster",
                       "--no-tpu-cluster",
                       "--tpu-use-sudo",
                       "--downcast-bf16",
                       "--fp8-use-autocast-during-eval",
                       "--debug"});
  if (form == LaunchForm::deepspeed)  // deepspeed's runner's store_true options
    return among(
        opt, {"-h", "--help", "-q", "--quiet", "--module", "--no-python", "--no-local-rank",
              "--no-ssh", "--no-ssh-check", "--force-multi", "--save-pid", "--bind-cores-to-rank"});
  return among(opt, {"--standalone", "-m", "--module", "--no-python", "--run-path",
                     "--virtual-local-rank", "--use-env", "-h", "--help"});
}

// A form's options whose value ddpbisect sets per trial.
bool is_ours(LaunchForm form, const std::string& opt) {
  if (form == LaunchForm::accelerate)
    return among(opt,
                 {"--multi-gpu", "--num-processes", "--num-machines", "--machine-rank",
                  "--main-process-ip", "--main-process-port", "--same-network", "--rdzv-backend",
                  "--rdzv-conf", "--max-restarts", "--log-dir", "--tee", "-t"});
  // deepspeed: ddpbisect is its launch.py, so every runner option but those that shape a
  // rank's command line is replaced (hosts, slots, ports, ssh, core binding, its logs).
  if (form == LaunchForm::deepspeed)
    return !among(opt, {"--module", "--no-python", "--no-local-rank"});
  return among(opt, {"--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint",
                     "--rdzv-id", "--standalone", "--max-restarts", "--log-dir", "--redirects",
                     "-r", "--tee", "-t", "--node-rank", "--master-addr", "--master-port",
                     "--local-ranks-filter", "--logs-specs"});
}

// The form `argv` starts and the number of its words that are the launcher itself.
std::optional<std::pair<LaunchForm, size_t>> launcher_words(const std::vector<std::string>& argv) {
  const std::string exe = std::filesystem::path(argv[0]).filename().string();
  if (exe == "torchrun") return std::make_pair(LaunchForm::torchrun, size_t{1});
  if (exe == "accelerate-launch") return std::make_pair(LaunchForm::accelerate, size_t{1});
  if (exe == "deepspeed" || exe == "ds") return std::make_pair(LaunchForm::deepspeed, size_t{1});
  if (exe == "accelerate")
    return argv.size() > 1 && argv[1] == "launch"
               ? std::optional(std::make_pair(LaunchForm::accelerate, size_t{2}))
               : std::nullopt;
  if (exe.rfind("python", 0) != 0) return std::nullopt;
  // python [-u|-B ...] -m MODULE: the launch-era module is torchrun's parser plus --use-env, and
  // passes --local-rank=N unless given it; accelerate's module is `accelerate launch`.
  size_t m = 1;
  while (m < argv.size() && (argv[m] == "-u" || argv[m] == "-B")) ++m;
  if (m + 1 >= argv.size() || argv[m] != "-m") return std::nullopt;
  const std::string& module = argv[m + 1];
  if (module == "torch.distributed.run") return std::make_pair(LaunchForm::torchrun, m + 2);
  if (module == "torch.distributed.launch")
    return std::make_pair(LaunchForm::distributed_launch, m + 2);
  if (module == "accelerate.commands.launch") return std::make_pair(LaunchForm::accelerate, m + 2);
  if (module == "deepspeed.launcher.runner") return std::make_pair(LaunchForm::deepspeed, m + 2);
  return std::nullopt;
}

}  // namespace

const char* launch_form_name(LaunchForm form) {
  switch (form) {
#define DDPBISECT_LAUNCH_FORM(name, matches, replaced, ranks) \
  case LaunchForm::name:                                      \
    return #name;
#include "launch/launch_forms.def"
  }
  return "?";
}

const char* const kAgentPrefixTemplate = "[ddpbisect rank=${rank} local=${local_rank}]:";

namespace {

// Any form's launcher words, options (the user's and those ddpbisect replaces) and program.
std::optional<TorchrunCommand> parse_form(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  auto found = launcher_words(argv);
  if (!found) return std::nullopt;
  TorchrunCommand cmd;
  cmd.form = found->first;
  size_t i = found->second;
  cmd.launcher.assign(argv.begin(), argv.begin() + static_cast<long>(i));
  while (i < argv.size() && starts_with(argv[i], "-") && argv[i] != "--") {
    const std::string& word = argv[i];
    size_t eq = word.find('=');
    std::string opt = canonical(word.substr(0, eq));
    bool takes_value = eq == std::string::npos && !is_flag(cmd.form, opt);
    std::vector<std::string> words = {word};
    if (takes_value && i + 1 < argv.size()) words.push_back(argv[++i]);
    auto& to = is_ours(cmd.form, opt) ? cmd.dropped : cmd.options;
    to.insert(to.end(), words.begin(), words.end());
    ++i;
  }
  if (i < argv.size() && argv[i] == "--") ++i;
  cmd.program.assign(argv.begin() + static_cast<long>(i), argv.end());
  return cmd;
}

bool has_option(const TorchrunCommand& cmd, const char* opt) {
  for (const auto& o : cmd.options)
    if (canonical(o) == opt) return true;
  return false;
}

}  // namespace

std::optional<TorchrunCommand> parse_torchrun(const std::vector<std::string>& argv) {
  auto cmd = parse_form(argv);
  if (cmd && cmd->form == LaunchForm::deepspeed) return std::nullopt;
  return cmd;
}

std::optional<TorchrunCommand> parse_deepspeed(const std::vector<std::string>& argv) {
  auto cmd = parse_form(argv);
  if (cmd && cmd->form != LaunchForm::deepspeed) return std::nullopt;
  return cmd;
}

std::vector<std::string> launch_form_notes(const std::vector<std::string>& argv) {
  auto cmd = parse_form(argv);
  if (!cmd || cmd->dropped.empty()) return {};
  const std::string form = launch_form_name(cmd->form);
  std::vector<std::string> replaced, notes;
  const auto& d = cmd->dropped;
  for (size_t i = 0; i < d.size(); ++i) {
    const size_t eq = d[i].find('=');
    const std::string o = canonical(d[i].substr(0, eq));
    std::string words = d[i], value = eq == std::string::npos ? "" : d[i].substr(eq + 1);
    if (eq == std::string::npos && i + 1 < d.size() && !starts_with(d[i + 1], "-")) {
      value = d[++i];
      words += " " + value;
    }
    if (o == "--bind-cores-to-rank" || o == "--bind-core-list")
      notes.push_back(form + ": " + words +
                      " is not applied: the ranks run without numactl's core binding, so a "
                      "failure that needs it may not reproduce");
    else if (o == "--include" || o == "--exclude")
      notes.push_back(form + ": " + words +
                      " is not applied: the ranks see every GPU of the machine (set "
                      "CUDA_VISIBLE_DEVICES in workload.env to choose them)");
    else if (o == "--launcher" && value != "pdsh")
      notes.push_back(form + ": " + words +
                      " is not used: the ranks start through the spec's launcher.kind");
    else if (o == "--max-restarts" && value != "0")
      notes.push_back(form + ": " + words +
                      " is replaced by 0: a trial judges the first failure, never a restart");
    else
      replaced.push_back(words);
  }
  if (!replaced.empty())
    notes.insert(notes.begin(), form + ": " + join(replaced, " ") +
                                    " replaced per trial: the stage sets the topology, the "
                                    "trial its rendezvous and logs");
  return notes;
}

std::vector<std::string> deepspeed_rank_argv(const TorchrunCommand& cmd,
                                             const std::string& python) {
  if (cmd.program.empty()) return cmd.launcher;  // no script: the runner's own usage error
  std::vector<std::string> argv;
  const bool no_python = has_option(cmd, "--no-python");
  if (!no_python) argv = {python, "-u"};
  if (!no_python && has_option(cmd, "--module")) argv.push_back("-m");
  argv.push_back(cmd.program[0]);
  if (!has_option(cmd, "--no-local-rank")) argv.push_back("--local_rank={local_rank}");
  argv.insert(argv.end(), cmd.program.begin() + 1, cmd.program.end());
  return argv;
}

std::string deepspeed_python(const TorchrunCommand& cmd, const std::string& path) {
  if (cmd.launcher.size() > 1) return cmd.launcher[0];  // python -m deepspeed.launcher.runner
  std::string exe = cmd.launcher[0];
  if (exe.find('/') == std::string::npos)
    for (const auto& dir : split(path, ':')) {
      std::error_code ec;
      const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / exe;
      if (std::filesystem::is_regular_file(candidate, ec)) {
        exe = candidate.string();
        break;
      }
    }
  std::ifstream in(exe);
  std::string line;
  if (!in || !std::getline(in, line) || !starts_with(line, "#!")) return "python3";
  std::vector<std::string> words;
  for (const auto& w : split(trim(line.substr(2)), ' '))
    if (!w.empty()) words.push_back(w);
  size_t i = 0;
  if (!words.empty() && std::filesystem::path(words[0]).filename() == "env") {
    ++i;
    while (i < words.size() && starts_with(words[i], "-")) ++i;  // env -S
  }
  return i < words.size() ? words[i] : "python3";
}

std::vector<std::string> agent_argv(const TorchrunCommand& cmd, const AgentPlace& p) {
  std::vector<std::string> argv = cmd.launcher;
  auto add = [&](std::initializer_list<std::string> words) {
    argv.insert(argv.end(), words.begin(), words.end());
  };
  if (cmd.form == LaunchForm::accelerate) {
    // accelerate's --num_processes is the total over machines. Its c10d path would have machine
    // 0 refuse a port another node's agent already holds, so a static rendezvous: machine 0
    // hosts the store, the others wait for it.
    if (p.nodes * p.procs_per_node > 1) add({"--multi_gpu"});
    add({"--num_processes=" + std::to_string(p.nodes * p.procs_per_node),
         "--num_machines=" + std::to_string(p.nodes)});
    if (p.nodes > 1)
      add({"--machine_rank=" + p.node_rank, "--same_network", "--main_process_ip=" + p.addr});
    add({"--main_process_port=" + p.port, "--max_restarts=0"});
    if (!p.log_dir.empty()) add({"--log_dir=" + p.log_dir, "--tee=3"});
  } else if (p.static_rendezvous) {
    // The underscore spellings: torchrun 2.x takes both, 1.x only these.
    add({"--nnodes=" + std::to_string(p.nodes),
         "--nproc_per_node=" + std::to_string(p.procs_per_node), "--node_rank=" + p.node_rank,
         "--master_addr=" + p.addr, "--master_port=" + p.port, "--max_restarts=0"});
  } else {
    add({"--nnodes=" + std::to_string(p.nodes),
         "--nproc_per_node=" + std::to_string(p.procs_per_node), "--rdzv_backend=c10d",
         "--rdzv_endpoint=" + p.addr + ":" + p.port, "--rdzv_id=" + p.run_id, "--max_restarts=0",
         "--log_dir=" + p.log_dir, "--redirects=3", "--tee=3"});
  }
  argv.insert(argv.end(), cmd.options.begin(), cmd.options.end());
  argv.insert(argv.end(), cmd.program.begin(), cmd.program.end());
  return argv;
}

std::optional<std::vector<std::string>> single_rank_argv(const TorchrunCommand& cmd) {
  if (cmd.form != LaunchForm::accelerate) return std::nullopt;
  std::vector<std::string> argv = cmd.launcher;
  argv.insert(argv.end(), {"--num_processes=1", "--num_machines=1"});
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
