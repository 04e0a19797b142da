// Golden files for repro/run.sh (tests/golden/run_sh/NAME.sh), one per workload form: the
// script is a template (repro_templates/run.sh) filled from the spec, and these pin what the
// filling makes of each form. DDPBISECT_UPDATE_GOLDEN=1 rewrites the files (review the diff).
// When shellcheck is installed (scripts/setup.sh installs it), every script is also checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/text.hpp"
#include "launch/rank_plan.hpp"
#include "report/repro.hpp"
#include "spec/loader.hpp"

using namespace ddpbisect;
namespace fs = std::filesystem;

namespace {
struct Case {
  const char* name;
  const char* spec;
  int stage;  // the stage whose initial configuration is the minimum
  const char* category;
  const char* exception;
  const char* frame;
};

const Case kCases[] = {
    {"plain_command", R"(workload:
  command: [python3, train.py, "--local_rank={local_rank}", "--batch={batch_size}", "{samples}"]
  env: {MY_FLAG: "it's $HOME"}
  samples: 8
  params: {batch_size: 4}
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
     0, "python_exception", "NameError", "train.py:train"},
    {"launch_era", R"(workload:
  command: [python, -m, torch.distributed.launch, --nproc_per_node, "8", train.py,
            "--x=${local_rank}"]
stages: [{name: two, nodes: 2, procs_per_node: 2}]
)",
     0, "python_exception", "NameError", "train.py:main"},
    {"accelerate", R"(workload:
  command: [accelerate, launch, --multi_gpu, --num_processes, "8", train.py]
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
     0, "collective_mismatch", "RuntimeError", ""},
    {"deepspeed", R"(workload:
  command: [deepspeed, --num_gpus, "8", train.py, --deepspeed_config, ds.json]
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
     0, "python_exception", "ValueError", "train.py:step"},
    {"self_spawning", R"(workload:
  command: [python3, spawn.py, --nprocs, "{nprocs}"]
  world_size_param: nprocs
stages: [{name: node, nodes: 1, procs_per_node: 4}]
)",
     0, "hang", "", ""},
    {"agent", R"(workload:
  command: [python3, train.py]
  agent: true
  samples: auto
  steps: auto
stages: [{name: one, nodes: 1, procs_per_node: 1}]
)",
     0, "signal", "SIGKILL", ""},
    {"builtin", R"(workload:
  builtin:
    model: [linear, dropout]
    dataset: {kind: synthetic, samples: 16, seed: 1}
    params: {batch_size: 2, steps: 3}
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
     0, "python_exception", "RuntimeError", "faults.cpp:fire_step_faults"},
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What depends on this checkout, not on the spec: the worker's path in the build tree.
std::string portable(std::string sh) {
  replace_all(sh, shell_quote(worker_path()), "@WORKER_PATH@");
  return sh;
}

// While it lives, PATH names no folder: what run.sh makes of a launcher found on the PATH
// (deepspeed's interpreter from its #! line) would otherwise depend on who runs the test.
struct NoPath {
  std::string saved;
  bool had;
  NoPath() : had(std::getenv("PATH") != nullptr) {
    if (had) saved = std::getenv("PATH");
    setenv("PATH", "/nonexistent", 1);
  }
  ~NoPath() {
    if (had)
      setenv("PATH", saved.c_str(), 1);
    else
      unsetenv("PATH");
  }
};

std::string run_sh(const Case& c) {
  const NoPath no_path;
  LoadResult r = load_spec_text(c.spec, "/work/job/spec.yaml");
  if (!r.spec) {
    ADD_FAILURE() << c.name << ": the spec does not load: "
                  << (r.errors.empty() ? "" : r.errors.front().to_string());
    return "";
  }
  Signature sig;
  sig.category = c.category;
  sig.exception = c.exception;
  sig.frame = c.frame;
  const TrialConfig m = initial_config(*r.spec, r.spec->stages[static_cast<size_t>(c.stage)]);
  return portable(repro_run_sh(*r.spec, m, sig));
}
}  // namespace

TEST(ReproRunShGolden, EveryFormIsItsGoldenFile) {
  const fs::path dir = fs::path(DDPBISECT_SOURCE_DIR) / "tests/golden/run_sh";
  const bool update = std::getenv("DDPBISECT_UPDATE_GOLDEN") != nullptr;
  for (const Case& c : kCases) {
    const std::string sh = run_sh(c);
    const fs::path file = dir / (std::string(c.name) + ".sh");
    if (update) {
      std::ofstream(file) << sh;
      continue;
    }
    ASSERT_TRUE(fs::exists(file)) << file << " (DDPBISECT_UPDATE_GOLDEN=1 writes it)";
    EXPECT_EQ(sh, read(file)) << c.name << ": run.sh differs from " << file;
  }
}

TEST(ReproRunShGolden, EveryFormIsShellcheckClean) {
  if (std::system("command -v shellcheck >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "shellcheck is not installed (scripts/setup.sh installs it)";
  const fs::path tmp = fs::temp_directory_path() / ("run_sh_lint." + std::to_string(getpid()));
  fs::create_directories(tmp);
  for (const Case& c : kCases) {
    const fs::path file = tmp / (std::string(c.name) + ".sh");
    std::ofstream(file) << run_sh(c);
    const std::string cmd = "shellcheck -s bash " + shell_quote(file.string()) + " >" +
                            shell_quote(file.string() + ".lint") + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << c.name << ":\n" << read(file.string() + ".lint");
  }
  fs::remove_all(tmp);
}
