// The journal survives a kill at any byte: every prefix of it loads as its whole records, a torn
// last record is dropped and cut off, and the next append starts on a line of its own.
#include "reduce/journal.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/output.hpp"
#include "synthetic.hpp"

using namespace ddpbisect;
using namespace ddpbisect::testing;

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(Journal, EveryPrefixLoadsItsWholeRecordsAndTakesTheNextAppend) {
  ScratchDir dir;
  const std::vector<nlohmann::json> records = {
      {{"type", "header"}, {"salt", 7}},
      {{"type", "trial"}, {"key", "a"}, {"text", "line\nwith \"quotes\" and é"}},
      {{"type", "trial"}, {"key", "b"}, {"attempt", 1}}};
  {
    Journal j(dir.journal(), false);
    for (const auto& r : records) j.append(r);
  }
  const std::string whole = read_all(dir.journal());
  std::vector<size_t> ends;  // the byte after each record's newline
  for (size_t i = 0; i < whole.size(); ++i)
    if (whole[i] == '\n') ends.push_back(i + 1);
  ASSERT_EQ(ends.size(), records.size());
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    const std::string path = dir.path + "/cut.jsonl";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, cut);
    size_t complete = 0;
    while (complete < ends.size() && ends[complete] <= cut) ++complete;
    {
      Journal j(path, true);
      ASSERT_EQ(j.loaded().size(), complete) << "cut at byte " << cut;
      for (size_t i = 0; i < complete; ++i) EXPECT_EQ(j.loaded()[i], records[i]);
      EXPECT_EQ(j.dropped(), cut > (complete ? ends[complete - 1] : 0) ? 1 : 0) << cut;
      j.append({{"type", "elapsed"}, {"elapsed_s", 1.5}});
    }
    Journal again(path, true);
    ASSERT_EQ(again.loaded().size(), complete + 1) << "cut at byte " << cut;
    EXPECT_EQ(again.loaded().back().value("type", ""), "elapsed");
    EXPECT_EQ(again.dropped(), 0);
  }
}

TEST(Journal, LinesThatAreNotRecordsAreSkippedNotFatal) {
  ScratchDir dir;
  std::ofstream(dir.journal()) << "{\"type\":\"header\",\"salt\":3}\n\ngarbage\n[1,2]\n"
                               << "{\"type\":\"trial\",\"key\":\"k\"}\n";
  Journal j(dir.journal(), true);
  ASSERT_EQ(j.loaded().size(), 2u);
  EXPECT_EQ(j.dropped(), 2);  // "garbage" and a JSON value that is not a record
}

TEST(Journal, AFailedAppendThrowsAnOutputErrorThatSaysTheDiskIsFull) {
  Journal j("/dev/full", false);  // every write fails with ENOSPC
  try {
    j.append({{"type", "trial"}});
    ADD_FAILURE() << "no OutputError";
  } catch (const OutputError& e) {
    EXPECT_TRUE(e.disk_full());
    EXPECT_EQ(e.path(), "/dev/full");
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos);
  }
}

TEST(OutputFile, ReplacesAFileWholeOrNamesWhyNot) {
  ScratchDir dir;
  const std::string path = dir.path + "/report.json";
  write_file_atomically(path, "first\n");
  write_file_atomically(path, "second\n", /*executable=*/true);
  EXPECT_EQ(read_all(path), "second\n");
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  try {
    write_file_atomically(dir.path + "/no/such/folder/x", "y");
    ADD_FAILURE() << "no OutputError";
  } catch (const OutputError& e) {
    EXPECT_FALSE(e.disk_full());
    EXPECT_NE(std::string(e.what()).find("no/such/folder/x"), std::string::npos);
  }
}

TEST(Journal, ARejectedRecordIsDroppedWithAWarningNamingItsLine) {
  ScratchDir dir;
  std::ofstream(dir.journal()) << "{\"type\":\"header\",\"salt\":3}\ngarbage\n"
                               << "{\"type\":\"trial\",\"key\":\"k\"}\n";
  Journal j(dir.journal(), true);
  ASSERT_EQ(j.loaded().size(), 2u);
  EXPECT_EQ(j.line_of(1), 3);
  j.reject(1, "trial.samples: bad");
  EXPECT_EQ(j.dropped(), 2);
  ASSERT_EQ(j.warnings().size(), 2u);
  EXPECT_EQ(j.warnings()[0], dir.journal() + ":2: not a JSON record; ignored");
  EXPECT_EQ(j.warnings()[1], dir.journal() + ":3: trial.samples: bad; ignored");
}
