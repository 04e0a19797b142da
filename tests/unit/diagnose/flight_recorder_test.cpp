#include "diagnose/flight_recorder.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "diagnose/diagnose_steps.hpp"
#include "diagnose/frames.hpp"

using namespace ddpbisect;

namespace {
// A pickle written opcode by opcode.
struct Pickle {
  std::string b = std::string("\x80\x02", 2);
  Pickle& op(char c) { return b += c, *this; }
  Pickle& raw(std::initializer_list<int> bytes) {
    for (int v : bytes) b += static_cast<char>(v);
    return *this;
  }
  Pickle& str(const std::string& s) {  // BINUNICODE
    b += 'X';
    for (int i = 0; i < 4; ++i) b += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    return b += s, *this;
  }
};
}  // namespace

TEST(Pickle, TheOpcodesC10dsPicklerWrites) {
  // {'version': '2.10', 'n': [1, -1, 300, True, None], 't': ('a', 'a'), 'l': 10**12, 'f': 1.5}
  // with a memoized string fetched back, as c10d's pickler writes them.
  Pickle k;
  k.op('}').op('(').str("version").raw({'q', 0}).str("2.10");
  k.str("n").op(']').op('(').raw({'K', 1, 'J', 0xff, 0xff, 0xff, 0xff, 'M', 0x2c, 0x01, 0x88, 'N'});
  k.op('e').str("t").str("a").raw({'q', 1, 'h', 1, 0x86});
  k.str("l").raw({0x8a, 6, 0x00, 0x10, 0xa5, 0xd4, 0xe8, 0x00});
  k.str("f").raw({'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}).op('u').op('.');
  std::string p = k.b;
  auto j = pickle_to_json(p);
  EXPECT_EQ(j["version"], "2.10");
  EXPECT_EQ(j["n"], nlohmann::json({1, -1, 300, true, nullptr}));
  EXPECT_EQ(j["t"], nlohmann::json({"a", "a"}));
  EXPECT_EQ(j["l"], 1000000000000LL);
  EXPECT_DOUBLE_EQ(j["f"].get<double>(), 1.5);
  EXPECT_TRUE(looks_like_pickle(p));
  try {
    pickle_to_json(Pickle().op('c').b + "os\nsystem\n.");  // GLOBAL: refused
    FAIL() << "an unsupported opcode was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0x63 at byte 2"), std::string::npos) << e.what();
  }
}

TEST(FlightRecorder, TheCapturedGlooDumpsFindTheRankInAnotherCollective) {
  // tests/diagnose/launchers/005: ranks 0 and 2 ran all_reduce as collective 14, rank 1 barrier.
  namespace fs = std::filesystem;
  fs::path dir =
      fs::path(DDPBISECT_SOURCE_DIR) / "tests/diagnose/launchers/005-torchrun-hang-frdump/input/fr";
  Facts facts;
  for (int r = 0; r < 3; ++r)
    read_flight_recorder((dir / ("fr_trace_rank_" + std::to_string(r))).string(), r, {}, facts);
  ASSERT_FALSE(facts.positions.empty());
  std::string why;
  std::vector<int> odd = odd_ranks(facts, &why);
  ASSERT_EQ(odd, std::vector<int>{1});
  EXPECT_NE(why.find("BARRIER on rank 1"), std::string::npos) << why;
  bool found = false;
  for (const auto& p : facts.positions)
    if (p.rank == 1 && p.op == "BARRIER") {
      Event e;
      e.frames = p.frames;
      EXPECT_EQ(frame_key(e.user_frame()), "train_ddp.py:train");
      EXPECT_TRUE(p.waiting);  // Gloo never retires it
      found = true;
    }
  EXPECT_TRUE(found);
}
