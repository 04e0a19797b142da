// The spec: the YAML model of a distributed training job, its reducible dimensions, the stage
// ladder, and how ddpbisect should launch, limit, match and report. Loaded by spec/loader.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/index_set.hpp"
#include "spec/fault_kinds.hpp"

namespace ddpbisect {

// Inclusive integer bound used by fault conditions on params: {min: 48} or {max: 4} or both.
struct IntBound {
  std::optional<int64_t> min, max;
  bool holds(int64_t v) const { return (!min || v >= *min) && (!max || v <= *max); }
};

// Conditions that must all hold for a planted fault to fire (all optional).
struct FaultRequires {
  std::optional<std::vector<int64_t>> ranks;
  std::optional<int64_t> min_world_size;
  std::optional<std::vector<int64_t>> nodes;
  std::optional<int64_t> step;                 // at or after this step
  std::vector<std::string> components;         // all present
  std::vector<std::string> absent_components;  // all absent
  std::vector<std::string> features;           // all on
  std::optional<IndexSet> samples;             // any of these in this rank's shard
  std::optional<IndexSet> all_samples;         // every one of these in this rank's shard
  std::map<std::string, IntBound> params;
};

struct Fault {
  FaultKind kind = FaultKind::raise;  // a row of spec/fault_kinds.def
  std::string message;                // raise
  int64_t exit_code = 1;              // exit
  double probability = 1.0;           // flaky faults fire with this probability per trial
  Millis delay{0};                    // straggler: extra time per step
  std::string path;                   // missing_file
  std::string component;              // unused_parameter
  HangMode mode = HangMode::loader;   // hang
  FaultRequires requires_;
};

struct Dataset {
  std::string kind = "synthetic";   // synthetic | csv | binary
  std::string task = "regression";  // regression | classification
  int64_t samples = 0;
  uint64_t seed = 1;
  std::string path;       // absolute once loaded
  int64_t features = 16;  // input width for synthetic data
  int64_t classes = 4;
  bool drop_last = false;
  bool pad = true;  // pad shards to equal length like DistributedSampler
};

struct BuiltinWorkload {
  std::vector<std::string> model;
  Dataset dataset;
  std::vector<std::string> features;
  std::map<std::string, int64_t> params;
  std::vector<Fault> faults;
  std::optional<IndexSet> samples;       // the subset of the data set to train on (default: all)
  Millis collective_timeout{1'800'000};  // Gloo's default: 30 minutes
  double lr = 0.05;
};

struct CommandWorkload {
  std::vector<std::string> argv;
  std::string cwd;  // absolute once loaded
  std::map<std::string, std::string> env;
  IndexSet samples;
  std::vector<std::string> components;
  std::vector<std::string> features;
  std::map<std::string, int64_t> params;
  // The in-process agent (python/agent, docs/agent.md): on by default; `workload.agent: false`.
  bool agent = true;
  // `samples: auto`: the agent restricts the training data set to the trial's samples; `samples`
  // is empty until the first trial's DDPBISECT_DATASET line gives the length (`{auto: RANGES}`
  // starts from RANGES instead). `steps: auto`: params.steps, when set, is the agent's step limit.
  bool samples_auto = false;
  bool steps_auto = false;
  // Paths outside the cwd that a trial may change (`workload.state`): isolated like the cwd.
  std::vector<std::string> state;
  // Warm starts (`workload.preload`): Python modules a fork server imports once; each rank of a
  // `python SCRIPT` / `python -m MODULE` command is then forked from it (launch/warm_server.hpp).
  std::vector<std::string> preload;
  // No preload key: warm starts by default (the `auto` list) where they can work; where they
  // cannot (another launcher, a command that is not `python SCRIPT`), ranks start cold silently.
  // `preload: none` (or []) turns them off.
  bool preload_default = false;
  // A script that starts its own ranks (mp.spawn, Lightning's devices=N): each trial runs one
  // process per stage, and the stage's rank count reaches it as this param ({NAME},
  // DDPBISECT_PARAM_NAME); it gets none of torchrun's rank variables. "" when not given.
  std::string world_size_param;
};

struct Stage {
  std::string name;
  int64_t nodes = 1;
  int64_t procs_per_node = 1;
  std::string device = "cpu";  // cpu | cuda
  int64_t world_size() const { return nodes * procs_per_node; }
};

struct LauncherSpec {
  std::string kind = "local";  // a name in spec/launchers.def
  std::vector<std::string> hosts;
  std::string prefix;  // prefix launcher: command prefix template with {host}
  std::string master_addr;
  std::vector<std::string> options;  // ssh: extra ssh arguments; slurm: extra srun arguments
  std::map<std::string, std::map<std::string, std::string>> host_env;  // launcher.env, per host
  std::string cwd;  // the working folder on the hosts (default: the workload's)
};

struct ReduceSpec {
  std::map<std::string, bool> dimensions;  // topology, steps, samples, components, features, params
  std::optional<int64_t> max_trials;
  std::optional<Millis> max_time;
  std::string strategy = "default";  // a name in spec/passes.def
  int64_t jobs = 1;
  double confidence = 0.95;
  bool enabled(const std::string& dim) const {
    auto it = dimensions.find(dim);
    return it == dimensions.end() || it->second;
  }
};

struct Limits {
  // `auto` (the default): the first trials may run this long; then the reducer bounds trials by
  // what the job's own trials took (observe/timings.hpp). A duration: every trial, fixed.
  Millis trial_timeout{1'800'000};
  bool trial_timeout_auto = true;
  std::optional<Millis> hang_after;  // nullopt = auto
  int64_t log_cap_bytes = 64ll << 20;
  Millis grace{2000};
  // Per trial, for its processes on this machine together (a cgroup; launch/cgroup.hpp).
  std::optional<int64_t> memory_bytes;  // limits.memory
  std::optional<int64_t> max_procs;     // limits.max_procs: processes and threads
};

struct MatchSpec {
  std::string level = "default";  // strict | default | loose
  std::string regex;
  std::vector<std::string> ignore_frames;  // extra path fragments of non-user frames
  // A pinned target: only a failure with this category (and exception and frame, when given)
  // counts. Written into every repro.yaml.
  std::string signature_category, signature_exception, signature_frame;
};

struct Spec {
  std::string file;  // where it was loaded from (absolute)
  int64_t version = 1;
  std::string name;
  std::optional<BuiltinWorkload> builtin;
  std::optional<CommandWorkload> command;
  std::vector<Stage> stages;
  LauncherSpec launcher;
  ReduceSpec reduce;
  Limits limits;
  MatchSpec match;
  // Absolute once loaded: report.dir against the spec's folder, the default in the current one.
  std::string report_dir = "ddpbisect-out";

  const Stage* find_stage(const std::string& name) const;
};

// Vocabularies the validator enforces; the worker implements exactly these.
const std::vector<std::string>& builtin_components();
const std::vector<std::string>& builtin_features();
// reduce_dimensions() and the strategies: spec/passes.hpp; launcher kinds: spec/launchers.hpp.

}  // namespace ddpbisect
