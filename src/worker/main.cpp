// ddpbisect-worker: one rank of the built-in DDP trainer. Reads the trial configuration from
// --config FILE or $DDPBISECT_CONFIG and the rank from torchrun's environment variables.
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "spec/loader.hpp"
#include "spec/trial_config.hpp"
#include "worker/comm.hpp"
#include "worker/phase.hpp"
#include "worker/probe.hpp"
#include "worker/trainer.hpp"

using namespace ddpbisect;
using namespace ddpbisect::worker;

namespace {
int usage(const char* msg) {
  std::fprintf(
      stderr,
      "%s\nusage: ddpbisect-worker [--config FILE]\n"
      "  FILE (default: $DDPBISECT_CONFIG) is a trial configuration written by ddpbisect:\n"
      "  {\"spec\": <normalized spec>, \"trial\": <trial configuration>}.\n"
      "  The rank comes from RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT.\n",
      msg);
  return 2;
}

int run(const std::string& config_path) {
  DDPB_PHASE();
  std::ifstream in(config_path);
  if (!in) return usage(("ddpbisect-worker: cannot read config " + config_path).c_str());
  std::stringstream text;
  text << in.rdbuf();
  RankConfigRead read = read_rank_config(text.str(), config_path);
  for (const auto& e : read.errors) std::fprintf(stderr, "%s\n", e.c_str());
  if (!read.config || !read.config->spec.builtin)
    return usage("ddpbisect-worker: the config is not a valid built-in workload and trial");
  const Spec& spec = read.config->spec;
  const TrialConfig& trial = read.config->trial;
  RankEnv env = RankEnv::from_environment();
  install_stack_dump_handlers(env.rank);
  if (const char* probe = std::getenv("DDPBISECT_PROBE"); probe && *probe) {
    if (std::string(probe) != "allreduce")
      return usage(("ddpbisect-worker: unknown DDPBISECT_PROBE " + std::string(probe)).c_str());
    const char* max = std::getenv("DDPBISECT_PROBE_MAX_BYTES");
    allreduce_probe(env, max && *max ? std::atoll(max) : (16 << 20), 5);
    return 0;
  }
  train(spec, trial, env);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::string config;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--config") && i + 1 < argc) {
      config = argv[++i];
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage("ddpbisect-worker: the built-in DDP trainer");
      return 0;
    } else {
      return usage((std::string("ddpbisect-worker: unknown argument ") + argv[i]).c_str());
    }
  }
  if (config.empty()) {
    const char* env = std::getenv("DDPBISECT_CONFIG");
    if (!env || !*env)
      return usage("ddpbisect-worker: no configuration (--config or DDPBISECT_CONFIG)");
    config = env;
  }
  try {
    return run(config);
  } catch (const NamedError& e) {
    print_traceback(exception_frames(), e.type, e.what());
  } catch (const c10::Error& e) {
    print_traceback(exception_frames(), "RuntimeError", e.what_without_backtrace());
  } catch (const std::exception& e) {
    print_traceback(exception_frames(), "RuntimeError", e.what());
  }
  std::fflush(stdout);
  // Leave without destructors: peers may be mid-collective, as a crashed Python rank would.
  std::_Exit(1);
}
