// Diagnosis' inputs from a trial folder whose outcome.json is torn, edited or from another
// version: read with checks, never an assertion or an exception (issue #19, fuzz).
#include <gtest/gtest.h>

#include <fstream>

#include "../scratch_dir.hpp"
#include "diagnose/diagnosis.hpp"

using namespace ddpbisect;

namespace {
struct Trial {
  ScratchDir dir;
  PathInputs read(const std::string& outcome) const {
    std::ofstream(dir.path + "/outcome.json") << outcome;
    return inputs_from_paths({dir.path});
  }
};
}  // namespace

TEST(Inputs, MissingOrMistypedOutcomeFieldsReadAsUnknown) {
  Trial t;
  // The fuzz finding: a rank without "exit_code" reached a const operator[] (an assertion).
  PathInputs r = t.read(R"({"ranks": [{"rank": 1}, {"rank": "two", "exit_code": 1e300,
      "signal_number": "x", "killed_by": 7, "end_s": "soon", "last_step": 2.5,
      "stderr": []}], "hang_declared_s": "x", "reason": 4, "dir": {}})");
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_EQ(r.input.exits.size(), 2u);
  EXPECT_EQ(r.input.exits[0].rank, 1);
  EXPECT_EQ(r.input.exits[0].exit_code, -1);
  EXPECT_EQ(r.input.exits[1].rank, 0);
  EXPECT_EQ(r.input.exits[1].exit_code, -1);  // 1e300 is no exit code
  EXPECT_EQ(r.input.exits[1].signal, 0);
  EXPECT_EQ(r.input.exits[1].killed_by, "");
  EXPECT_EQ(r.input.exits[1].last_step, -1);
  EXPECT_FALSE(r.input.stop_time);
  EXPECT_TRUE(r.input.logs.empty());
  diagnose(r.input);
}

TEST(Inputs, AnOutcomeThatIsNotAnObjectIsAnErrorNamingTheFile) {
  Trial t;
  PathInputs r = t.read("[1, 2]");
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->find("outcome.json: not a trial outcome"), std::string::npos) << *r.error;
}
