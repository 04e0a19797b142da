#include "common/interrupt.hpp"

#include <gtest/gtest.h>
#include <signal.h>

using namespace ddpbisect;

TEST(Interrupted, CarriesTheSignalAndItsExitCode) {
  Interrupted e(SIGINT);
  EXPECT_EQ(e.signal(), SIGINT);
  EXPECT_EQ(e.exit_code(), 130);
  EXPECT_STREQ(e.what(), "interrupted by SIGINT");
  EXPECT_EQ(Interrupted(SIGTERM).exit_code(), 143);
}

TEST(InterruptHandlers, ASignalOnlySetsTheFlag) {
  EXPECT_EQ(interrupt_signal(), 0);
  EXPECT_NO_THROW(throw_if_interrupted());
  install_interrupt_handlers();
  ASSERT_EQ(raise(SIGTERM), 0);  // without the handler this would end the test process
  EXPECT_EQ(interrupt_signal(), SIGTERM);
  try {
    throw_if_interrupted();
    ADD_FAILURE() << "no Interrupted thrown";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGTERM);
  }
  clear_interrupt();
  EXPECT_EQ(interrupt_signal(), 0);
}
