#include "observe/log_capture.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

using namespace ddpbisect;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ddpb-capture-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST(StreamCapture, SplitsLinesAcrossChunksWithTimes) {
  TempDir d;
  LogBudget budget{1 << 20};
  std::vector<std::string> seen;
  {
    StreamCapture c((d.path / "log").string(), (d.path / "times").string(), &budget,
                    [&](std::string_view l, double) { seen.emplace_back(l); });
    c.feed("hel", 3, 1.0);
    c.feed("lo\nwor", 6, 2.0);
    c.feed("ld\nno newline", 13, 3.0);
    c.close(4.0);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"hello", "world", "no newline"}));
  EXPECT_EQ(slurp(d.path / "log"), "hello\nworld\nno newline\n");
  EXPECT_EQ(slurp(d.path / "times"), "2.0\n3.0\n4.0\n");
}

TEST(StreamCapture, KeepsHeadAndTailPastTheCap) {
  TempDir d;
  LogBudget budget{100};
  {
    StreamCapture c((d.path / "log").string(), (d.path / "times").string(), &budget, nullptr);
    for (int i = 0; i < 20000; ++i) {
      std::string line = "line " + std::to_string(i) + "\n";
      c.feed(line.data(), line.size(), i);
    }
    c.close(20000);
    EXPECT_GT(c.bytes_dropped(), 0);
  }
  std::string log = slurp(d.path / "log");
  EXPECT_EQ(log.rfind("line 0\n", 0), 0u);                        // the head
  EXPECT_NE(log.find("log cap was reached"), std::string::npos);  // said, not silent
  EXPECT_NE(log.find("line 19999\n"), std::string::npos);         // the tail
  EXPECT_EQ(log.find("line 10000\n"), std::string::npos);         // the middle is gone
  EXPECT_LT(log.size(), 100u + (64u << 10) + 200u);
  EXPECT_TRUE(budget.exhausted);
}
