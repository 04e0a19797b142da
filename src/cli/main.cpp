// ddpbisect's entry point: parses the command line (CLI11) and dispatches to one subcommand.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <set>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/version.hpp"
#include "launch/process.hpp"
#include "spec/passes.hpp"

using namespace ddpbisect;

namespace {
// Once, before the first trial of a command that runs trials: Ctrl-C and SIGTERM become a flag
// that trials poll (common/interrupt.hpp), orphaned descendants of ranks are reparented to us so
// that the token sweep can reap them, and a closed pipe is an error return, not our death.
// Commands that only read (validate, config, explain) keep the default: Ctrl-C ends them.
void prepare_driver_process() {
  install_interrupt_handlers();
  become_child_subreaper();
  signal(SIGPIPE, SIG_IGN);
}
}  // namespace

int main(int argc, char** argv) {
  // `ddpbisect SPEC` is `ddpbisect reduce SPEC`.
  static const std::set<std::string> kCommands = {"reduce", "run",      "explain", "check",
                                                  "doctor", "validate", "config",  "help"};
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") args[0] = "--help";
  if (!args.empty() && args[0][0] != '-' && !kCommands.count(args[0]))
    args.insert(args.begin(), "reduce");

  CLI::App app{
      "ddpbisect: reduce a failing distributed PyTorch job to the smallest configuration "
      "that still fails the same way"};
  app.name("ddpbisect");
  app.set_version_flag("--version", std::string("ddpbisect ") + kVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 done, 1 internal error, 2 bad input, 3 the failure did not reproduce;\n"
      "run and check --bisect: 0 good, 1 bad, 125 skip (infra).");

  std::string spec;
  cli::ReduceCliOptions rdo;
  auto* reduce = app.add_subcommand(
      "reduce", "Escalate and reduce SPEC to a minimal failing configuration (default)");
  reduce->add_option("spec", rdo.spec, "spec file")->required();
  reduce->add_option("--out", rdo.out,
                     "output folder (default: the spec's report.dir); never overwritten");
  reduce->add_flag("--resume", rdo.resume,
                   "continue the reduction in --out without rerunning finished trials");
  reduce->add_option("--jobs,-j", rdo.jobs,
                     "trials at once, for every pass: N (1-256), or auto (as many as the cores, "
                     "GPUs or Slurm nodes hold)");
  reduce->add_option("--strategy", rdo.strategy, strategy_help());
  reduce->add_option("--stage", rdo.stage,
                     "the stage known to fail: escalation starts there instead of at the first");
  reduce->add_option("--max-trials", rdo.max_trials, "trial budget")->check(CLI::PositiveNumber);
  reduce->add_option("--max-time", rdo.max_time, "time budget (90s, 5m, 2h)");
  reduce->add_option("--confirm", rdo.confirm, "reruns of the minimum (default 3, 10 when flaky)")
      ->check(CLI::Range(0, 1000));
  reduce->add_flag("--quiet,-q", rdo.quiet, "no progress output");
  reduce->add_option("--from-logs", rdo.from_logs,
                     "chase exactly the failure in these logs (a torchrun --log-dir folder, "
                     "per-rank logs, a console log)");

  cli::RunOptions ro;
  auto* run = app.add_subcommand(
      "run", "Run one trial of SPEC and print its outcome (exit 0 pass, 1 fail, 125 infra)");
  run->add_option("spec", ro.spec, "spec file")->required();
  run->add_option("--stage", ro.stage, "stage name (default: the last stage)");
  run->add_option(
      "--set", ro.sets,
      "override KEY=VALUE (samples, components, features, nodes, procs_per_node, seed, a param)");
  run->add_option("--out", ro.out, "output folder (default: the spec's report.dir)");
  run->add_flag("--json", ro.json, "print outcome.json");

  cli::ExplainOptions eo;
  auto* explain = app.add_subcommand(
      "explain", "Diagnose existing logs without running anything (exit 0 failure found, 3 none)");
  explain
      ->add_option("paths", eo.paths,
                   "a torchrun --log-dir tree, a folder of per-rank logs, a combined console "
                   "log, or a trial folder of ours")
      ->required();
  explain->add_flag("--json", eo.json, "print the diagnosis as JSON");
  explain->add_option("--ignore-frames", eo.ignore_frames,
                      "path fragments of frames that are not user code");

  cli::CheckOptions cko;
  auto* check = app.add_subcommand(
      "check", "Rerun a repro spec and exit by expectation (CI, git bisect run)");
  check->add_option("spec", cko.spec, "repro spec (ddpbisect-out/repro/repro.yaml)")->required();
  check->add_option("--expect", cko.expect, "fail (default) or pass");
  check->add_option("--repeats", cko.repeats, "runs (default 1)")->check(CLI::Range(1, 1000));
  check->add_option("--junit", cko.junit, "write JUnit XML here");
  check->add_flag("--bisect", cko.bisect, "git bisect run codes: 0 good, 1 bad, 125 skip");
  check->add_option("--stage", cko.stage, "stage name (default: the first)");
  check->add_option("--out", cko.out, "output folder (default: the spec's report.dir)");

  cli::DoctorCliOptions dco;
  auto* doctor = app.add_subcommand(
      "doctor",
      "Pre-flight checks on every node of SPEC (exit 0 nothing failed, 1 a check failed)");
  doctor->add_option("spec", dco.spec, "spec file")->required();
  doctor->add_flag("--json", dco.json, "print the findings, node reports and bandwidth as JSON");
  doctor->add_option("--stage", dco.stage, "stage to check (default: the one with the most ranks)");
  doctor->add_option("--out", dco.out,
                     "folder for the probes' trial folders (default: <report.dir>/doctor)");
  doctor->add_flag("--no-sanity", dco.no_sanity, "skip the single-process run of the workload");
  doctor->add_flag("--no-comm", dco.no_comm, "skip the all-reduce bandwidth probes");

  cli::ValidateOptions vo;
  auto* validate = app.add_subcommand("validate", "Check SPEC and print it normalized");
  validate->add_option("spec", vo.spec, "spec file")->required();
  validate->add_flag("--json", vo.json, "print the normalized spec as JSON");

  cli::ConfigOptions co;
  auto* config =
      app.add_subcommand("config", "Print one trial's rank configuration (DDPBISECT_CONFIG JSON)");
  config->add_option("spec", co.spec, "spec file")->required();
  config->add_option("--stage", co.stage, "stage name (default: the last stage)");
  config->add_option(
      "--set", co.sets,
      "override KEY=VALUE (samples, components, features, nodes, procs_per_node, seed, a param)");

  std::vector<const char*> cargv = {argv[0]};
  for (const auto& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), const_cast<char**>(cargv.data()));
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return exit_code::kBadInput;
  }

  if (*reduce || *run || *check || *doctor) prepare_driver_process();
  try {
    if (*validate) return cli::validate(vo);
    if (*config) return cli::config(co);
    if (*reduce) return cli::reduce(rdo);
    if (*run) return cli::run(ro);
    if (*explain) return cli::explain(eo);
    if (*check) return cli::check(cko);
    if (*doctor) return cli::doctor(dco);
  } catch (const std::exception& e) {
    std::cerr << "ddpbisect: internal error: " << e.what() << "\n";
    return exit_code::kInternal;
  }
  return exit_code::kInternal;
}
