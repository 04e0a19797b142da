// make_launcher builds every kind of spec/launchers.def, and nothing else.
#include <gtest/gtest.h>

#include "launch/launcher.hpp"
#include "spec/launchers.hpp"

using namespace ddpbisect;

TEST(LauncherFactory, EveryKindOfTheTableIsBuilt) {
  for (const auto& kind : launcher_kinds()) {
    LauncherSpec spec;
    spec.kind = kind.name;
    spec.hosts = {"127.0.0.1"};
    spec.prefix = "env";
    auto launcher = make_launcher(spec);
    ASSERT_NE(launcher, nullptr) << kind.name;
    EXPECT_EQ(launcher->name(), kind.name);
  }
  LauncherSpec unknown;
  unknown.kind = "carrier-pigeon";
  EXPECT_THROW(make_launcher(unknown), std::invalid_argument);
}
