#include <gtest/gtest.h>

#include "common/text.hpp"
#include "report/headline.hpp"
#include "report/report_html.hpp"
#include "report/repro.hpp"
#include "spec/loader.hpp"

using namespace ddpbisect;

TEST(MarkupEscape, EscapesMarkupAndQuotesAndShowsControlCharacters) {
  EXPECT_EQ(markup_escape("<a href=\"x\">it's & done</a>"),
            "&lt;a href=&quot;x&quot;&gt;it&#39;s &amp; done&lt;/a&gt;");
  EXPECT_EQ(markup_escape("plain\tline\n"), "plain\tline\n");
  // ESC and BEL show as their control pictures: the ANSI code is text, not a command.
  EXPECT_EQ(markup_escape(std::string("bell\x07 esc\x1b[0m")), "bell\u2407 esc\u241b[0m");
  EXPECT_EQ(markup_escape(std::string("del\x7f")), "del\u2421");
}

TEST(MarkupEscape, KeepsUtf8AndReplacesWhatIsNot) {
  EXPECT_EQ(visible_text("caf\u00e9 \u2192 \U0001F600"), "caf\u00e9 \u2192 \U0001F600");
  EXPECT_EQ(visible_text(std::string("a\xff\xfe b")), "a\ufffd\ufffd b");
  EXPECT_EQ(visible_text(std::string("trunc\xe2\x82")), "trunc\ufffd\ufffd");
  EXPECT_EQ(visible_text(std::string("overlong\xc0\xaf")), "overlong\ufffd\ufffd");
  EXPECT_EQ(visible_text(std::string("surrogate\xed\xa0\x80")), "surrogate\ufffd\ufffd\ufffd");
}

TEST(ReproPython, QuotesInTheSpecCannotEndTheEmbeddedConfiguration) {
  const std::string text = R"(version: 1
name: quotes
workload:
  builtin:
    model: [linear]
    dataset: {kind: synthetic, samples: 8}
    faults:
      - {kind: raise, message: "it's ''' broken \\ here"}
stages:
  - {name: single, nodes: 1, procs_per_node: 2}
)";
  LoadResult loaded = load_spec_text(text, "quotes.yaml");
  ASSERT_TRUE(loaded.spec) << "spec did not load";
  TrialConfig minimal = initial_config(*loaded.spec, loaded.spec->stages[0]);
  Signature target;
  target.category = "python_exception";
  target.exception = "RuntimeError";
  std::string py = repro_python(*loaded.spec, minimal, target);
  size_t open = py.find("CONFIG = json.loads(r'''");
  ASSERT_NE(open, std::string::npos);
  size_t body = open + std::string("CONFIG = json.loads(r'''").size();
  size_t close = py.find("''')", body);
  ASSERT_NE(close, std::string::npos);
  std::string config = py.substr(body, close - body);
  EXPECT_EQ(config.find('\''), std::string::npos) << "a quote inside the raw string";
  EXPECT_NE(config.find("it\\u0027s"), std::string::npos);
  auto parsed = nlohmann::json::parse(config, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded());
  EXPECT_EQ(parsed["trial"]["world_size"], 2);
  EXPECT_EQ(parsed["spec"]["workload"]["builtin"]["faults"][0]["message"],
            "it's ''' broken \\ here");
  EXPECT_EQ(py.find("@CONFIG_JSON@"), std::string::npos);
  EXPECT_EQ(py.find("@TARGET@"), std::string::npos);
  EXPECT_NE(py.find("TARGET = \"python_exception RuntimeError"), std::string::npos);
}

TEST(Headline, RootCauseLeadsWithRankExceptionMessageAndPlace) {
  nlohmann::json root = {{"rank", 1},
                         {"exception", "RuntimeError"},
                         {"message", "planted failure\nsecond line"},
                         {"file", "/src/worker/trainer.cpp"},
                         {"line", 42}};
  EXPECT_EQ(root_cause_headline(root), "rank 1: RuntimeError: planted failure (trainer.cpp:42)");
  EXPECT_EQ(root_cause_headline(nullptr), "");
  root["file"] = nullptr;
  root["line"] = nullptr;
  EXPECT_EQ(root_cause_headline(root), "rank 1: RuntimeError: planted failure");
  // No rank, but the ranks that failed alike: the headline names them all.
  root["rank"] = nullptr;
  root["rank_candidates"] = {0, 3};
  EXPECT_EQ(root_cause_headline(root), "ranks 0, 3: RuntimeError: planted failure");
}

TEST(Headline, CppFramesAreFoldedIntoOneLine) {
  std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 3, in <module>\n"
      "RuntimeError: boom\n"
      "Exception raised from f at x.cpp:1 (most recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in libc10.so)\n"
      "frame #1: <unknown function> + 0x1a (0x7f in libtorch_cpu.so)\n"
      "[rank1]: frame #2: torch::foo() + 0x2\n"
      "done\n";
  EXPECT_EQ(fold_cpp_frames(tb),
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 3, in <module>\n"
            "RuntimeError: boom\n"
            "Exception raised from f at x.cpp:1 (most recent call first):\n"
            "  [3 C++ frames folded]\n"
            "done\n");
  EXPECT_EQ(fold_cpp_frames("no frames"), "no frames");
}

// Issue 26: run.sh runs a plain command once per rank with that rank's placeholders, and a
// launcher form once per node at the minimal topology, its ${local_rank} left to the launcher.
TEST(ReproRunSh, PerRankPlaceholdersAndLauncherForms) {
  auto plain = load_spec_text(R"(workload:
  command: [python3, train.py, "--local_rank={local_rank}", "${rank}"]
stages: [{name: two, nodes: 1, procs_per_node: 2}]
)",
                              "/tmp/x.yaml");
  ASSERT_TRUE(plain.spec);
  Signature sig;
  sig.category = "python_exception";
  sig.exception = "NameError";
  sig.frame = "train.py:<module>";
  const TrialConfig m = initial_config(*plain.spec, plain.spec->stages[0]);
  const std::string sh = repro_run_sh(*plain.spec, m, sig);
  EXPECT_NE(sh.find("train.py '--local_rank='\"$((rank % LOCAL_WORLD_SIZE))\"'' ''\"$rank\"''"),
            std::string::npos)
      << sh;
  EXPECT_NE(sh.find("procs=$WORLD_SIZE unit=rank"), std::string::npos);
  EXPECT_NE(sh.find("line [0-9]+,? in "), std::string::npos);  // faulthandler's form too

  auto launch = load_spec_text(R"(workload:
  command: [python3, -m, torch.distributed.launch, --nproc_per_node, "8", train.py,
            "--x=${local_rank}"]
stages: [{name: two, nodes: 2, procs_per_node: 2}]
)",
                               "/tmp/x.yaml");
  ASSERT_TRUE(launch.spec);
  const TrialConfig n = initial_config(*launch.spec, launch.spec->stages[0]);
  const std::string lsh = repro_run_sh(*launch.spec, n, sig);
  EXPECT_NE(lsh.find("procs=2 unit=node"), std::string::npos);
  EXPECT_NE(lsh.find("--nnodes=2 --nproc_per_node=2 '--node_rank='\"$rank\"''"), std::string::npos)
      << lsh;
  EXPECT_EQ(lsh.find("--nproc_per_node 8"), std::string::npos);
  EXPECT_NE(lsh.find("train.py '--x=${local_rank}'"), std::string::npos) << lsh;
  // torchrun's environment as the trials had it (Lightning reads TORCHELASTIC_RUN_ID).
  EXPECT_NE(sh.find("export TORCHELASTIC_RUN_ID="), std::string::npos);
  EXPECT_NE(sh.find("ROLE_RANK=$rank"), std::string::npos);
  EXPECT_NE(sh.find("ROLE_WORLD_SIZE=2"), std::string::npos);

  // accelerate launch: per node at 2 ranks, its own one-process start at 1.
  auto acc = load_spec_text(R"(workload:
  command: [accelerate, launch, --multi_gpu, --num_processes, "8", train.py]
stages: [{name: one, nodes: 1, procs_per_node: 1}, {name: two, nodes: 1, procs_per_node: 2}]
)",
                            "/tmp/x.yaml");
  ASSERT_TRUE(acc.spec);
  const std::string two =
      repro_run_sh(*acc.spec, initial_config(*acc.spec, acc.spec->stages[1]), sig);
  EXPECT_NE(two.find("procs=1 unit=node"), std::string::npos) << two;
  EXPECT_NE(two.find("accelerate launch --multi_gpu --num_processes=2 --num_machines=1 "
                     "'--main_process_port='\"$MASTER_PORT\"'' --max_restarts=0 train.py"),
            std::string::npos)
      << two;
  const std::string one =
      repro_run_sh(*acc.spec, initial_config(*acc.spec, acc.spec->stages[0]), sig);
  EXPECT_NE(one.find("procs=$WORLD_SIZE unit=rank"), std::string::npos) << one;
  EXPECT_NE(one.find("accelerate launch --num_processes=1 --num_machines=1 train.py"),
            std::string::npos)
      << one;
  EXPECT_EQ(one.find("--multi_gpu"), std::string::npos) << one;
}

// A workload without a samples dimension: the minimal spec has no samples key (not "").
TEST(ReproSpec, NoSamplesDimensionWritesNoSamples) {
  auto r = load_spec_text(
      "workload:\n  command: [python3, train.py]\n"
      "stages: [{name: one, nodes: 1, procs_per_node: 1}]\n",
      "/tmp/x.yaml");
  ASSERT_TRUE(r.spec);
  Signature sig;
  sig.category = "python_exception";
  const std::string yaml =
      minimal_spec_yaml(*r.spec, initial_config(*r.spec, r.spec->stages[0]), "one", sig);
  EXPECT_EQ(yaml.find("samples: \"\""), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("samples: ''"), std::string::npos) << yaml;
  auto again = load_spec_text(yaml, "/tmp/repro.yaml");
  EXPECT_TRUE(again.spec) << (again.errors.empty() ? "" : again.errors[0].to_string());
}

// The HTML trace draws the trials as the reducer judged them: a failure it did not take is
// never drawn as the target, whatever its signature.
TEST(ReportHtml, TheTraceMarksExactlyTheTrialsTheReducerTook) {
  Spec spec;
  spec.name = "trace";
  spec.file = "trace.yaml";
  spec.stages.push_back({});
  spec.stages.back().name = "node";
  ReportInputs in;
  in.spec = &spec;
  in.out_dir = "/nonexistent";
  ReductionResult& r = in.result;
  r.status = ReductionStatus::Reduced;
  r.target.category = "python_exception";
  r.target.exception = "RuntimeError";
  TrialConfig c;
  c.procs_per_node = 2;
  r.job = r.original = r.minimal = c;
  r.trials = {{c, TrialStatus::Fail, true},
              {c, TrialStatus::Fail, false},
              {c, TrialStatus::Pass, false},
              {c, TrialStatus::Infra, false}};
  const std::string html = report_html(in);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<circle class=\"trial\""), 4u);
  EXPECT_EQ(count(", the target failure</title>"), 1u);
  EXPECT_EQ(count(", a different failure</title>"), 1u);
  EXPECT_EQ(count(", passed</title>"), 1u);
  EXPECT_EQ(count(", infra</title>"), 1u);
  EXPECT_NE(html.find("trial number (1 to 4)"), std::string::npos);
}
