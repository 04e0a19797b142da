#include <gtest/gtest.h>

#include "common/text.hpp"
#include "report/repro.hpp"
#include "spec/loader.hpp"

using namespace ddpbisect;

TEST(MarkupEscape, EscapesMarkupAndQuotesAndDropsControlCharacters) {
  EXPECT_EQ(markup_escape("<a href=\"x\">it's & done</a>"),
            "&lt;a href=&quot;x&quot;&gt;it&#39;s &amp; done&lt;/a&gt;");
  EXPECT_EQ(markup_escape("plain\tline\n"), "plain\tline\n");
  EXPECT_EQ(markup_escape(std::string("bell\x07 esc\x1b[0m")), "bell esc[0m");
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
