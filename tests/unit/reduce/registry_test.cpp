// make_passes builds each strategy's passes from spec/passes.def: names, dimensions, order.
#include <gtest/gtest.h>

#include "reduce/pass.hpp"
#include "spec/passes.hpp"

using namespace ddpbisect;

TEST(PassRegistry, EachStrategyRunsItsRowsInOrder) {
  for (const auto& s : strategies()) {
    std::vector<std::string> want, got;
    for (const auto& p : passes())
      if (std::string(p.strategy) == s.name)
        want.push_back(std::string(p.name) + "/" + p.dimension);
    for (const auto& p : make_passes(s.name)) got.push_back(p->name() + "/" + p->dimension());
    EXPECT_EQ(got, want) << s.name;
    EXPECT_FALSE(got.empty()) << s.name;
  }
  std::vector<std::string> names;
  for (const auto& p : make_passes("default")) names.push_back(p->name());
  EXPECT_EQ(names, (std::vector<std::string>{"topology", "steps", "sample_count", "sample_indices",
                                             "components", "features", "params"}));
  EXPECT_TRUE(make_passes("no such strategy").empty());
}
