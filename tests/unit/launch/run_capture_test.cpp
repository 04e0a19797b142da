#include <gtest/gtest.h>

#include <chrono>

#include "launch/process.hpp"

using namespace ddpbisect;

TEST(RunCapture, CapturesOutputAndExitStatus) {
  std::string out;
  int rc = run_capture({{"sh", "-c", "echo hello; exit 3"}, current_environment(), ""}, 10, out);
  EXPECT_EQ(rc, 3);
  EXPECT_EQ(out, "hello\n");
}

TEST(RunCapture, StopEndsTheHelperAtOnce) {
  std::string out;
  const std::string token = random_token();
  auto env = current_environment();
  env["DDPBISECT_TRIAL_TOKEN"] = token;
  auto start = std::chrono::steady_clock::now();
  int calls = 0;
  int rc = run_capture({{"sleep", "30"}, env, ""}, 60, out, 1 << 20, [&] { return ++calls > 2; });
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(rc, -1);
  EXPECT_LT(took, 5.0) << "the helper was not stopped";
  EXPECT_TRUE(find_token(token).empty()) << "the stopped helper is still running";
}
