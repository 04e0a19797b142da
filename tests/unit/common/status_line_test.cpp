#include "common/status_line.hpp"
#include "common/notice.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace ddpbisect;

namespace {
// Columns a string takes: one per UTF-8 code point.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}
}  // namespace

TEST(FitToWidth, ShortTextIsKept) {
  EXPECT_EQ(fit_to_width("abc", 10), "abc");
  EXPECT_EQ(fit_to_width("abcdefghij", 10), "abcdefghij");
}

TEST(FitToWidth, LongTextIsCutWithAnEllipsisInTheLastColumn) {
  std::string s = fit_to_width("abcdefghijk", 10);
  EXPECT_EQ(s, "abcdefghi\u2026");
  EXPECT_EQ(columns(s), 10u);
  for (size_t w = 1; w < 40; ++w)
    EXPECT_LE(columns(fit_to_width(std::string(100, 'x') + "\u00e9\u2192", w)), w) << w;
}

TEST(FitToWidth, CountsCodePointsAndNeverSplitsOne) {
  std::string s = fit_to_width("\u00e9\u00e9\u00e9\u00e9\u00e9", 3);
  EXPECT_EQ(s, "\u00e9\u00e9\u2026");
}

TEST(FitToWidth, ControlCharactersCannotMoveTheCursor) {
  EXPECT_EQ(fit_to_width("a\nb\tc\x1b[2Jd", 20), "a b c\u241b[2Jd");
  EXPECT_EQ(fit_to_width("a\rb", 20), "a\u240db");
}

TEST(StatusLine, NotATerminalMeansPlainLinesAndNoStatus) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine line(
        false, [](size_t) { return std::string("STATUS"); }, f);
    EXPECT_FALSE(line.smart());
    line.update([] {});
    line.print("a plain line");
  }
  std::rewind(f);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  EXPECT_EQ(std::string(buf, n), "a plain line\n");
}

TEST(StatusLine, QuietPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine line(
        true, [](size_t) { return std::string("STATUS"); }, f);
    line.print("hidden");
  }
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

// Library code's notices (common/notice.hpp) go where the innermost live route sends them.
TEST(Notice, RoutesNestAndComeBack) {
  std::vector<std::string> outer, inner;
  {
    NoticeRoute a([&](const std::string& l) { outer.push_back(l); });
    notice("one");
    {
      NoticeRoute b([&](const std::string& l) { inner.push_back(l); });
      notice("two");
    }
    notice("three");
  }
  EXPECT_EQ(outer, (std::vector<std::string>{"one", "three"}));
  EXPECT_EQ(inner, (std::vector<std::string>{"two"}));
}
