// samples: auto / steps: auto from a trial's outcome.json and rank logs (reduce/auto_dims.hpp).
#include "reduce/auto_dims.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using namespace ddpbisect;

namespace {

// A trial folder with one rank per entry: {last_step, stderr text}.
std::string trial(const std::string& name, const std::vector<std::pair<int, std::string>>& ranks) {
  fs::path dir = fs::temp_directory_path() / ("ddpbisect-auto-dims-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json out = {{"ranks", nlohmann::json::array()}};
  for (size_t i = 0; i < ranks.size(); ++i) {
    fs::path err = dir / ("rank" + std::to_string(i) + ".stderr");
    std::ofstream(err) << ranks[i].second;
    out["ranks"].push_back({{"last_step", ranks[i].first}, {"stderr", err.string()}});
  }
  std::ofstream(dir / "outcome.json") << out.dump();
  return dir.string();
}

Spec command_spec(bool samples_auto, bool steps_auto) {
  Spec s;
  s.command = CommandWorkload{};
  s.command->samples_auto = samples_auto;
  s.command->steps_auto = steps_auto;
  return s;
}

const char* kLine =
    "noise\nDDPBISECT_DATASET "
    "{\"len\":486,\"class\":\"MyTrainDataset\",\"site\":\"train.py:83\"}\n";

}  // namespace

TEST(AutoDims, LengthAndStepsFromTheFirstFailingTrial) {
  TrialConfig c;
  c.params["batch_size"] = 32;
  apply_auto_dimensions(command_spec(true, true), trial("a", {{3, kLine}, {6, kLine}}), c);
  EXPECT_EQ(c.samples.to_string(), "0-485");
  EXPECT_EQ(c.params.at("steps"), 8);  // the furthest rank finished step 6, failed in step 7
}

TEST(AutoDims, AFailureBeforeAnyStepKeepsOneStep) {
  TrialConfig c;
  apply_auto_dimensions(command_spec(false, true), trial("b", {{-1, ""}}), c);
  EXPECT_EQ(c.params.at("steps"), 1);
  EXPECT_TRUE(c.samples.empty());
}

TEST(AutoDims, ACountBeyondTheDataSetIsAnInputError) {
  TrialConfig c;
  c.samples = IndexSet::first_n(600);
  try {
    apply_auto_dimensions(command_spec(false, false), trial("c", {{0, kLine}}), c);
    FAIL() << "no error";
  } catch (const WorkloadInputError& e) {
    EXPECT_NE(std::string(e.what()).find("index 599 is outside the training data set (486"),
              std::string::npos)
        << e.what();
  }
}

// Issue #25: a failure before any data was read is still the failure to chase: the samples are
// left unreduced, with a note, never an input error.
TEST(AutoDims, NoDatasetLineOrAnAgentErrorLeavesTheSamplesUnreducedWithANote) {
  TrialConfig c;
  auto notes = apply_auto_dimensions(command_spec(true, false), trial("d", {{0, "x\n"}}), c);
  EXPECT_TRUE(c.samples.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the samples are not reduced"), std::string::npos) << notes[0];
  const std::string ambiguous =
      "DDPBISECT_DATASET {\"error\":\"ambiguous\",\"message\":\"two data sets\"}\n";
  notes = apply_auto_dimensions(command_spec(true, false), trial("e", {{0, ambiguous}}), c);
  EXPECT_TRUE(c.samples.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("two data sets"), std::string::npos) << notes[0];
}
