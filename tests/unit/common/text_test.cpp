#include "common/text.hpp"
#include "common/templates.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace ddpbisect;

TEST(Text, TrimSplitJoin) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
}

TEST(Text, EditDistanceAndSuggestions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_match("proc_per_node", {"name", "nodes", "procs_per_node", "device"}),
            "procs_per_node");
  EXPECT_EQ(closest_match("bulitin", {"builtin", "command"}), "builtin");
  EXPECT_EQ(closest_match("zzzzzz", {"builtin", "command"}), "");
}

TEST(Text, ASwapOfNeighboursIsOneEdit) {
  EXPECT_EQ(edit_distance("rasie", "raise"), 1u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // optimal string alignment, not Damerau
  EXPECT_EQ(closest_match("rasie", {"raise", "abort", "exit"}), "raise");
  EXPECT_EQ(closest_match("stpes", {"steps", "batch_size"}), "steps");
  EXPECT_EQ(closest_match("modle", {"model", "dataset"}), "model");
}

TEST(Text, SuggestByCaseMeaningThenTypo) {
  const std::vector<std::pair<std::string, std::string>> meanings = {{"gpu", "cuda"},
                                                                     {"srun", "slurm"}};
  EXPECT_EQ(suggest("CUDA", {"cpu", "cuda"}, meanings), "cuda");
  EXPECT_EQ(suggest("gpu", {"cpu", "cuda"}, meanings), "cuda");  // a typo distance says cpu
  EXPECT_EQ(suggest("GPU", {"cpu", "cuda"}, meanings), "cuda");
  EXPECT_EQ(suggest("gpu", {"cpu", "tpu"}, meanings), "cpu");  // cuda is not offered here
  EXPECT_EQ(suggest("srun", {"local", "ssh", "slurm"}, meanings), "slurm");
  EXPECT_EQ(suggest("zzzzzz", {"local", "ssh"}, meanings), "");
}

TEST(Text, NumbersAsPeopleWriteThem) {
  EXPECT_EQ(format_number(0.919667), "0.92");
  EXPECT_EQ(format_number(0.94999999999999996), "0.95");
  EXPECT_EQ(format_number(0.050000000000000003), "0.05");
  EXPECT_EQ(format_number(3.0), "3");
  EXPECT_EQ(format_number(12.5, 1), "12.5");
  EXPECT_EQ(format_number(-0.001), "0");
  EXPECT_EQ(plural(1, "rank"), "1 rank");
  EXPECT_EQ(plural(2, "rank"), "2 ranks");
  EXPECT_EQ(plural(0, "answer"), "0 answers");
  EXPECT_EQ(plural(3, "process", "processes"), "3 processes");
}

TEST(Text, FailureHeadline) {
  EXPECT_EQ(failure_headline({1}, "RuntimeError", "planted failure\nmore", "trainer.cpp:42"),
            "rank 1: RuntimeError: planted failure (trainer.cpp:42)");
  EXPECT_EQ(failure_headline({}, "", "Segmentation fault", ""), "Segmentation fault");
  EXPECT_EQ(failure_headline({0}, "SIGKILL", "", ""), "rank 0: SIGKILL");
  EXPECT_EQ(failure_headline({2, 3}, "FileNotFoundError", "gone", ""),
            "ranks 2, 3: FileNotFoundError: gone");
  EXPECT_EQ(failure_headline({-1}, "", "Segmentation fault", ""), "Segmentation fault");
}

TEST(Text, ShellQuote) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(Text, VisibleTextLeavesNoC1ControlOrXmlNonCharacter) {
  // Found by fuzz.escapers: U+009B (CSI) passed as valid UTF-8, as did U+FFFE and U+FFFF.
  EXPECT_EQ(visible_text("a\xc2\x9b"
                         "31mb"),
            "a\xef\xbf\xbd\xef\xbf\xbd"
            "31mb");
  EXPECT_EQ(visible_text("\xef\xbf\xbe"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(visible_text("\xc2\xa0\xef\xbf\xbd"), "\xc2\xa0\xef\xbf\xbd");  // NBSP, U+FFFD stay
}

TEST(Text, Utf8ErrorFindsTheFirstByteThatBeginsNoCharacter) {
  EXPECT_EQ(utf8_error("plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(utf8_error("ab\xdf"), 2u);                       // cut short
  EXPECT_EQ(utf8_error("a\xc0\xafz"), 1u);                   // overlong '/'
  EXPECT_EQ(utf8_error("ok\xed\xa0\x80"), 2u);               // a surrogate (U+D800)
  EXPECT_EQ(utf8_error("\xf4\x90\x80\x80"), 0u);             // above U+10FFFF
  EXPECT_EQ(utf8_error("x\x80"), 1u);                        // a continuation byte alone
  EXPECT_EQ(utf8_error("\xef\xbf\xbe"), std::string::npos);  // U+FFFE is UTF-8 (not XML)
}

TEST(Text, CsvHeaderRowIsNotASample) {
  EXPECT_TRUE(is_csv_header({"x0", " x1", "label"}));
  EXPECT_FALSE(is_csv_header({"1.5", "x", "0"}));  // a typo in a data row, not a header
  EXPECT_FALSE(is_csv_header({"1e-3", "2"}));
  const std::string path = testing::TempDir() + "/ddpbisect_csv_rows.csv";
  {
    std::ofstream out(path);
    out << "# made by a test\nf0,f1,label\n1,2,0\n\n3,4,1\n";
  }
  EXPECT_EQ(csv_data_rows(path), 2);
  {
    std::ofstream out(path);
    out << "1,2,0\n3,4,1\n5,6,0\n";
  }
  EXPECT_EQ(csv_data_rows(path), 3);
  EXPECT_EQ(csv_data_rows(path + ".missing"), -1);
  std::remove(path.c_str());
}

// repro_templates/ are filled by fill_template (common/templates.hpp).
TEST(Templates, FillsEveryPlaceholderInOnePass) {
  EXPECT_EQ(fill_template("a=@A@ b=@B_2@ ${x[@]} user@host @ @@", {{"A", "1"}, {"B_2", "@A@"}}),
            "a=1 b=@A@ ${x[@]} user@host @ @@");
  EXPECT_THROW(fill_template("@A@ @MISSING@", {{"A", "1"}}), std::logic_error);
  EXPECT_THROW(fill_template("@A@", {{"A", "1"}, {"UNUSED", "2"}}), std::logic_error);
  // Every shipped template has its placeholders in capitals; the probe has none at all.
  EXPECT_NO_THROW(fill_template(node_probe_py_template(), {}));
}
