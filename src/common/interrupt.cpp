#include "common/interrupt.hpp"

#include <signal.h>

#include <atomic>

#include "common/signals.hpp"

namespace ddpbisect {

namespace {
std::atomic<int> g_interrupt{0};
void on_interrupt(int sig) {
  g_interrupt.store(sig);
}
}  // namespace

Interrupted::Interrupted(int signal)
    : signal_(signal), what_(std::string("interrupted by ") + signal_name(signal)) {}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() {
  return g_interrupt.load();
}

void throw_if_interrupted() {
  if (int sig = interrupt_signal()) throw Interrupted(sig);
}

void clear_interrupt() {
  g_interrupt.store(0);
}

}  // namespace ddpbisect
