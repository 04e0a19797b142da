// ddpbisect's entry point: routes the command line (cli/route.hpp), parses it with CLI11 and
// dispatches to one subcommand. Each subcommand's --help ends with its own exit codes.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/route.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/status_line.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "launch/helpers.hpp"
#include "launch/process.hpp"
#include "spec/passes.hpp"

using namespace ddpbisect;

namespace {

// Once, before the first trial of a command that runs trials: Ctrl-C and SIGTERM become a flag
// that trials poll (common/interrupt.hpp), orphaned descendants of ranks are reparented to us so
// that the token sweep can reap them, and a closed pipe is an error return, not our death. The
// status line redraws at a new width on SIGWINCH.
// Commands that only read (validate, config, explain) keep the default: Ctrl-C ends them.
void prepare_driver_process() {
  install_interrupt_handlers();
  install_resize_handler();
  become_child_subreaper();
  signal(SIGPIPE, SIG_IGN);
}

// "Exit codes:" and one line per code, for a subcommand's --help.
std::string exit_codes(std::initializer_list<std::pair<const char*, const char*>> codes) {
  std::string s = "Exit codes:\n";
  for (const auto& [code, meaning] : codes) {
    std::string c = code;
    s += "  " + c + std::string(c.size() < 7 ? 7 - c.size() : 1, ' ') + meaning + "\n";
  }
  return s;
}

constexpr std::pair<const char*, const char*> kBad{"2", "bad input: the spec, a flag, a path"};
constexpr std::pair<const char*, const char*> kInternal{"70", "internal error of ddpbisect"};
constexpr std::pair<const char*, const char*> kSignal{
    "128+N", "interrupted by signal N (130: Ctrl-C) after every rank was stopped"};

struct Commands {
  CLI::App* reduce;
  CLI::App* run;
  CLI::App* explain;
  CLI::App* check;
  CLI::App* doctor;
  CLI::App* validate;
  CLI::App* config;
};

struct Options {
  cli::ReduceCliOptions reduce;
  cli::RunOptions run;
  cli::ExplainOptions explain;
  cli::CheckOptions check;
  cli::DoctorCliOptions doctor;
  cli::ValidateOptions validate;
  cli::ConfigOptions config;
};

constexpr const char* kSetHelp =
    "override KEY=VALUE: samples, components, features, nodes, procs_per_node, seed or a param "
    "(repeatable)";

CLI::App* add_reduce(CLI::App& app, cli::ReduceCliOptions& o) {
  auto* c = app.add_subcommand(
      "reduce", "Escalate and reduce SPEC to a minimal failing configuration (default)");
  c->add_option("spec", o.spec, "spec file")->required()->option_text("SPEC");
  c->add_option("--out", o.out, "output folder (default: the spec's report.dir); never overwritten")
      ->option_text("DIR");
  c->add_flag("--resume", o.resume,
              "continue the reduction in --out without rerunning finished trials");
  c->add_option("--jobs,-j", o.jobs,
                "trials at once, for every pass: N (1-256), or auto (as many as the cores, "
                "GPUs or Slurm nodes hold)")
      ->option_text("N|auto");
  c->add_option("--strategy", o.strategy, strategy_help())->option_text("NAME");
  c->add_option("--stage", o.stage,
                "the stage known to fail: escalation starts there instead of at the first")
      ->option_text("NAME");
  c->add_option("--max-trials", o.max_trials, "trial budget")
      ->check(CLI::PositiveNumber)
      ->option_text("N");
  c->add_option("--max-time", o.max_time, "time budget (90s, 5m, 2h)")->option_text("DURATION");
  c->add_option("--confirm", o.confirm, "reruns of the minimum (default 3, 10 when flaky)")
      ->check(CLI::Range(0, 1000))
      ->option_text("N");
  c->add_flag("--quiet,-q", o.quiet, "no progress output");
  c->add_option("--from-logs", o.from_logs,
                "chase exactly the failure in these logs (a torchrun --log-dir folder, "
                "per-rank logs, a console log)")
      ->option_text("PATH");
  c->footer(exit_codes({{"0", "reduced: the minimal failing configuration and reports are written"},
                        {"3", "the failure did not reproduce on any stage"},
                        {"4",
                         "the budget ran out: the reports hold the smallest failing "
                         "configuration found so far, not a minimal one"},
                        kBad,
                        kInternal,
                        {"128+N", "interrupted by signal N (130: Ctrl-C); --resume continues"}}));
  return c;
}

CLI::App* add_run(CLI::App& app, cli::RunOptions& o) {
  auto* c = app.add_subcommand("run", "Run one trial of SPEC and print its outcome");
  c->add_option("spec", o.spec, "spec file")->required()->option_text("SPEC");
  c->add_option("--stage", o.stage, "stage name (default: the last stage)")->option_text("NAME");
  c->add_option("--set", o.sets, kSetHelp)->option_text("KEY=VALUE");
  c->add_option("--out", o.out, "output folder (default: the spec's report.dir)")
      ->option_text("DIR");
  c->add_flag("--json", o.json, "print outcome.json (errors as JSON too)");
  c->footer(exit_codes({{"0", "the trial passed"},
                        {"1", "the trial failed"},
                        {"125",
                         "the trial could not be run fairly (infra: port clash, "
                         "missing program)"},
                        kBad,
                        kInternal,
                        kSignal}));
  return c;
}

CLI::App* add_explain(CLI::App& app, cli::ExplainOptions& o) {
  auto* c = app.add_subcommand("explain", "Diagnose existing logs without running anything");
  c->add_option("paths", o.paths,
                "a torchrun --log-dir tree, a folder of per-rank logs, a combined console "
                "log, or a trial folder of ours")
      ->required()
      ->option_text("PATH...");
  c->add_flag("--json", o.json, "print the diagnosis as JSON (errors as JSON too)");
  c->add_option("--ignore-frames", o.ignore_frames,
                "path fragments of frames that are not user code")
      ->option_text("FRAGMENT...");
  c->footer(exit_codes({{"0", "a failure was found"},
                        {"3", "no failure found in the logs"},
                        {"2", "bad input: a path is missing or unreadable, a flag"},
                        kInternal}));
  return c;
}

CLI::App* add_check(CLI::App& app, cli::CheckOptions& o) {
  auto* c = app.add_subcommand("check",
                               "Rerun a repro spec and exit by expectation (CI, git bisect run)");
  c->add_option("spec", o.spec, "repro spec (ddpbisect-out/repro/repro.yaml)")
      ->required()
      ->option_text("SPEC");
  c->add_option("--expect", o.expect, "fail (default) or pass")->option_text("fail|pass");
  c->add_option("--repeats", o.repeats, "runs (default 1)")
      ->check(CLI::Range(1, 1000))
      ->option_text("N");
  c->add_option("--junit", o.junit, "write JUnit XML here")->option_text("FILE");
  c->add_flag("--bisect", o.bisect, "git bisect run's exit codes (below)");
  c->add_option("--stage", o.stage, "stage name (default: the first)")->option_text("NAME");
  c->add_option("--out", o.out,
                "working folder for the trials (default: the spec's report.dir, which a repro "
                "spec sets to ddpbisect-check beside itself)")
      ->option_text("DIR");
  c->footer(
      exit_codes({{"0", "the expectation holds"},
                  {"1", "the expectation does not hold"},
                  {"125", "no run could be judged (each was infra: port clash, missing program)"},
                  kBad,
                  kInternal,
                  kSignal}) +
      "With --bisect (git bisect run: 128 and above abort the bisection):\n"
      "  0      good: the job passed\n"
      "  1      bad: the pinned failure reproduced\n"
      "  125    skip: infra, or a different failure\n"
      "  128    bad input (a broken spec aborts rather than names a commit)\n"
      "  255    internal error of ddpbisect\n"
      "  128+N  interrupted by signal N\n");
  return c;
}

CLI::App* add_doctor(CLI::App& app, cli::DoctorCliOptions& o) {
  auto* c = app.add_subcommand("doctor", "Pre-flight checks on every node of SPEC");
  c->add_option("spec", o.spec, "spec file")->required()->option_text("SPEC");
  c->add_flag("--json", o.json, "print the findings, node reports and bandwidth as JSON");
  c->add_option("--stage", o.stage, "stage to check (default: the one with the most ranks)")
      ->option_text("NAME");
  c->add_option("--out", o.out,
                "folder for the probes' trial folders (default: <report.dir>/doctor)")
      ->option_text("DIR");
  c->add_flag("--no-sanity", o.no_sanity, "skip the single-process run of the workload");
  c->add_flag("--no-comm", o.no_comm, "skip the all-reduce bandwidth probes");
  c->footer(exit_codes({{"0", "no check failed (warnings and skipped checks allowed)"},
                        {"1", "a check failed"},
                        kBad,
                        kInternal,
                        kSignal}));
  return c;
}

CLI::App* add_validate(CLI::App& app, cli::ValidateOptions& o) {
  auto* c = app.add_subcommand("validate", "Check SPEC and print it normalized");
  c->add_option("spec", o.spec, "spec file")->required()->option_text("SPEC");
  c->add_flag("--json", o.json, "print the normalized spec (or the errors) as JSON");
  c->footer(exit_codes({{"0", "the spec is valid (printed normalized)"},
                        {"2", "the spec or a flag is invalid (every error is listed)"},
                        kInternal}));
  return c;
}

CLI::App* add_config(CLI::App& app, cli::ConfigOptions& o) {
  auto* c =
      app.add_subcommand("config", "Print one trial's rank configuration (DDPBISECT_CONFIG JSON)");
  c->add_option("spec", o.spec, "spec file")->required()->option_text("SPEC");
  c->add_option("--stage", o.stage, "stage name (default: the last stage)")->option_text("NAME");
  c->add_option("--set", o.sets, kSetHelp)->option_text("KEY=VALUE");
  c->footer(exit_codes({{"0", "printed"}, kBad, kInternal}));
  return c;
}

int dispatch(const Commands& c, Options& o) {
  if (*c.validate) return cli::validate(o.validate);
  if (*c.config) return cli::config(o.config);
  if (*c.reduce) return cli::reduce(o.reduce);
  if (*c.run) return cli::run(o.run);
  if (*c.explain) return cli::explain(o.explain);
  if (*c.check) return cli::check(o.check);
  if (*c.doctor) return cli::doctor(o.doctor);
  return cli::internal_error("no subcommand was dispatched");
}

// CLI11's message with our prefix, and its exit code mapped to ours.
int parse_error(const CLI::ParseError& e) {
  std::string what = e.what();
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what.rfind("spec ", 0) == 0)
    what = "a spec file is required";
  cli::error(what);
  return cli::bad_input();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ddpbisect: reduce a failing distributed PyTorch job to the smallest configuration "
      "that still fails the same way"};
  app.name("ddpbisect");
  app.set_version_flag("--version", [] {
    // Where the helpers and the agent were found: the build tree, an install, or an override.
    std::string text = std::string("ddpbisect ") + kVersion;
    for (const Helper& h : helpers()) {
      const std::string label = std::string(h.name) + ":";
      text += "\n" + label + std::string(9 - label.size(), ' ') +
              (h.path.empty() ? std::string("not found (set ") + h.variable + ")" : h.path);
    }
    return text;
  });
  app.require_subcommand(1);
  app.footer(
      "ddpbisect SPEC is ddpbisect reduce SPEC. Each subcommand's --help lists its exit codes;\n"
      "every one exits 2 on bad input and 70 on an internal error of ddpbisect.");
  Options o;
  Commands c{add_reduce(app, o.reduce), add_run(app, o.run),       add_explain(app, o.explain),
             add_check(app, o.check),   add_doctor(app, o.doctor), add_validate(app, o.validate),
             add_config(app, o.config)};

  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(s->get_name());
  std::set<std::string> reduce_values;
  for (const CLI::Option* opt : c.reduce->get_options())
    if (opt->get_expected_max() > 0)
      for (const auto& n : opt->get_lnames()) reduce_values.insert("--" + n);
  reduce_values.insert("-j");

  cli::Route route = cli::route_arguments({argv + 1, argv + argc}, names, reduce_values);
  if (!route.error.empty()) {
    cli::error(route.error);
    return cli::bad_input();
  }
  const std::vector<std::string>& args = route.args;
  if (!args.empty() && args[0] != "--help" && args[0] != "-h" && args[0] != "--version") {
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    CLI::App* sub = app.get_subcommand(args[0]);
    cli::set_error_mode(
        {route.implicit_reduce ? "" : args[0],
         sub->get_option_no_throw("--json") != nullptr && cli::has_flag(rest, "--json"),
         args[0] == "check" && cli::has_flag(rest, "--bisect")});
    if (std::string bad = cli::unknown_flag(app, *sub, rest); !bad.empty()) {
      cli::error(bad);
      return cli::bad_input();
    }
  }
  std::vector<const char*> cargv = {argv[0]};
  for (const auto& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), const_cast<char**>(cargv.data()));
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return parse_error(e);
  }

  if (*c.reduce || *c.run || *c.check || *c.doctor) prepare_driver_process();
  try {
    return dispatch(c, o);
  } catch (const Interrupted& e) {
    cli::note(e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    return cli::internal_error(e.what());
  }
}
